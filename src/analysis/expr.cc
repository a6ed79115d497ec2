#include "analysis/expr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace keet::analysis {
namespace {

using Value = std::optional<double>;

struct SyntaxError {
  std::string what;
};

// Recursive-descent parser that evaluates as it parses. Unknown names yield
// nullopt, which propagates through every operator.
class Parser {
 public:
  Parser(const std::string& text, const Lookup& lookup) : s_(text), lookup_(lookup) {}

  Value parse() {
    Value v = logical_or();
    skip_space();
    if (pos_ != s_.size()) throw SyntaxError{"unexpected '" + s_.substr(pos_, 1) + "'"};
    return v;
  }
  std::vector<std::string> names;

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const std::string& tok) {
    skip_space();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  static Value both(Value a, Value b, double (*f)(double, double)) {
    if (!a || !b) return std::nullopt;
    return f(*a, *b);
  }

  Value logical_or() {
    Value v = logical_and();
    while (eat("||")) {
      Value r = logical_and();
      // Known-true on either side decides, even if the other is unknown.
      if ((v && *v != 0) || (r && *r != 0)) v = 1;
      else v = (v && r) ? Value(0) : std::nullopt;
    }
    return v;
  }
  Value logical_and() {
    Value v = comparison();
    while (eat("&&")) {
      Value r = comparison();
      if ((v && *v == 0) || (r && *r == 0)) v = 0;
      else v = (v && r) ? Value(1) : std::nullopt;
    }
    return v;
  }
  Value comparison() {
    Value v = sum();
    for (;;) {
      if (eat(">=")) v = both(v, sum(), [](double a, double b) { return double(a >= b); });
      else if (eat("<=")) v = both(v, sum(), [](double a, double b) { return double(a <= b); });
      else if (eat("==")) v = both(v, sum(), [](double a, double b) { return double(a == b); });
      else if (eat("!=")) v = both(v, sum(), [](double a, double b) { return double(a != b); });
      else if (eat(">")) v = both(v, sum(), [](double a, double b) { return double(a > b); });
      else if (eat("<")) v = both(v, sum(), [](double a, double b) { return double(a < b); });
      else return v;
    }
  }
  Value sum() {
    Value v = product();
    for (;;) {
      if (eat("+")) v = both(v, product(), [](double a, double b) { return a + b; });
      else if (eat("-")) v = both(v, product(), [](double a, double b) { return a - b; });
      else return v;
    }
  }
  Value product() {
    Value v = unary();
    for (;;) {
      if (eat("*")) v = both(v, unary(), [](double a, double b) { return a * b; });
      else if (eat("/")) {
        Value d = unary();
        v = (v && d && *d != 0) ? Value(*v / *d) : std::nullopt;
      } else return v;
    }
  }
  Value unary() {
    if (eat("-")) {
      Value v = unary();
      return v ? Value(-*v) : std::nullopt;
    }
    if (eat("!")) {
      Value v = unary();
      return v ? Value(*v == 0 ? 1 : 0) : std::nullopt;
    }
    return primary();
  }
  Value primary() {
    skip_space();
    if (eat("(")) {
      Value v = logical_or();
      if (!eat(")")) throw SyntaxError{"missing ')'"};
      return v;
    }
    if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) return number();
    return name_or_call();
  }
  Value number() {
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    double v = std::strtod(begin, &end);
    pos_ += static_cast<size_t>(end - begin);
    return v;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) throw SyntaxError{pos_ < s_.size() ? "unexpected '" + s_.substr(pos_, 1) + "'" : "unexpected end"};
    return s_.substr(start, pos_ - start);
  }
  Value name_or_call() {
    std::string id = identifier();
    if (!eat("(")) {
      names.push_back(id);
      return lookup_(id);
    }
    std::vector<Value> args{logical_or()};
    while (eat(",")) args.push_back(logical_or());
    if (!eat(")")) throw SyntaxError{"missing ')' after arguments of " + id};
    return call(id, args);
  }
  static Value call(const std::string& f, const std::vector<Value>& a) {
    if (f == "first") {  // the first argument the report has
      for (const auto& v : a)
        if (v) return v;
      return std::nullopt;
    }
    for (const auto& v : a)
      if (!v) return std::nullopt;
    if (f == "min" && a.size() == 2) return std::min(*a[0], *a[1]);
    if (f == "max" && a.size() == 2) return std::max(*a[0], *a[1]);
    if (f == "ceil" && a.size() == 1) return std::ceil(*a[0]);
    if (f == "floor" && a.size() == 1) return std::floor(*a[0]);
    if (f == "abs" && a.size() == 1) return std::fabs(*a[0]);
    throw SyntaxError{"unknown function " + f + "/" + std::to_string(a.size())};
  }

  const std::string& s_;
  const Lookup& lookup_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::optional<double>> evaluate(const std::string& text, const Lookup& lookup) {
  try {
    Parser p(text, lookup);
    return p.parse();
  } catch (const SyntaxError& e) {
    return fail(ExitCode::BadInput, "expression '" + text + "': " + e.what);
  }
}

Result<std::vector<std::string>> identifiers(const std::string& text) {
  Lookup none = [](const std::string&) -> std::optional<double> { return 1.0; };
  try {
    Parser p(text, none);
    p.parse();
    return p.names;
  } catch (const SyntaxError& e) {
    return fail(ExitCode::BadInput, "expression '" + text + "': " + e.what);
  }
}

}  // namespace keet::analysis
