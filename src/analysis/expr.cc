#include "analysis/expr.h"
#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace keet::analysis {

using Value = std::optional<double>;
using Op = Expr::Op;
using Fn = Expr::Fn;

namespace {

struct SyntaxError {
  std::string what;
};

// The functions the language knows, with their argument counts (0: any).
struct FunctionDef {
  const char* name;
  Fn fn;
  size_t arity;
};

constexpr FunctionDef kFunctions[] = {{"first", Fn::First, 0}, {"min", Fn::Min, 2},     {"max", Fn::Max, 2},
                                      {"ceil", Fn::Ceil, 1},   {"floor", Fn::Floor, 1}, {"abs", Fn::Abs, 1}};

// Checked while parsing, so a misspelt function fails when the rules load
// rather than on the first kernel whose arguments are all known.
Fn function_of(const std::string& name, size_t args) {
  for (const auto& f : kFunctions)
    if (name == f.name && (f.arity == 0 || f.arity == args)) return f.fn;
  throw SyntaxError{"unknown function " + name + "/" + std::to_string(args)};
}

Value both(Value a, Value b, double (*f)(double, double)) {
  if (!a || !b) return std::nullopt;
  return f(*a, *b);
}

}  // namespace

// Recursive-descent parser building the tree; each level is one precedence
// level, and operator chains associate to the left.
class ExprParser {
 public:
  ExprParser(std::string_view text, Expr& out) : s_(text), out_(out) {}

  void parse() {
    logical_or();
    skip_space();
    if (pos_ != s_.size()) throw SyntaxError{"unexpected '" + std::string(s_.substr(pos_, 1)) + "'"};
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip_space();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  uint32_t add(Expr::Node n) {
    out_.nodes_.push_back(n);
    return static_cast<uint32_t>(out_.nodes_.size() - 1);
  }
  uint32_t binary(Op op, uint32_t a, uint32_t b) { return add({op, Fn::First, a, b, 0}); }

  uint32_t logical_or() {
    uint32_t v = logical_and();
    while (eat("||")) v = binary(Op::Or, v, logical_and());
    return v;
  }
  uint32_t logical_and() {
    uint32_t v = comparison();
    while (eat("&&")) v = binary(Op::And, v, comparison());
    return v;
  }
  uint32_t comparison() {
    // Two-character operators first, so ">=" is not read as ">" then "=".
    static constexpr std::pair<std::string_view, Op> kOps[] = {{">=", Op::Ge}, {"<=", Op::Le}, {"==", Op::Eq},
                                                               {"!=", Op::Ne}, {">", Op::Gt},  {"<", Op::Lt}};
    uint32_t v = sum();
    for (;;) {
      auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return eat(o.first); });
      if (it == std::end(kOps)) return v;
      v = binary(it->second, v, sum());
    }
  }
  uint32_t sum() {
    uint32_t v = product();
    for (;;) {
      if (eat("+"))
        v = binary(Op::Add, v, product());
      else if (eat("-"))
        v = binary(Op::Sub, v, product());
      else
        return v;
    }
  }
  uint32_t product() {
    uint32_t v = unary();
    for (;;) {
      if (eat("*"))
        v = binary(Op::Mul, v, unary());
      else if (eat("/"))
        v = binary(Op::Div, v, unary());
      else
        return v;
    }
  }
  uint32_t unary() {
    if (eat("-")) return binary(Op::Neg, unary(), 0);
    if (eat("!")) return binary(Op::Not, unary(), 0);
    return primary();
  }
  uint32_t primary() {
    skip_space();
    if (eat("(")) {
      uint32_t v = logical_or();
      if (!eat(")")) throw SyntaxError{"missing ')'"};
      return v;
    }
    if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) return number();
    return name_or_call();
  }
  uint32_t number() {
    // strtod needs a terminated string; the text is short, so copy the rest.
    std::string rest(s_.substr(pos_));
    char* end = nullptr;
    double v = std::strtod(rest.c_str(), &end);
    pos_ += static_cast<size_t>(end - rest.c_str());
    return add({Op::Number, Fn::First, 0, 0, v});
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || (pos_ > start && s_[pos_] == '.')))
      ++pos_;
    if (start == pos_)
      throw SyntaxError{pos_ < s_.size() ? "unexpected '" + std::string(s_.substr(pos_, 1)) + "'" : "unexpected end"};
    return std::string(s_.substr(start, pos_ - start));
  }
  uint32_t name_or_call() {
    std::string id = identifier();
    if (!eat("(")) return name(id);
    std::vector<uint32_t> args{logical_or()};
    while (eat(",")) args.push_back(logical_or());
    if (!eat(")")) throw SyntaxError{"missing ')' after arguments of " + id};
    Fn fn = function_of(id, args.size());
    auto first = static_cast<uint32_t>(out_.args_.size());
    out_.args_.insert(out_.args_.end(), args.begin(), args.end());
    return add({Op::Call, fn, first, static_cast<uint32_t>(args.size()), 0});
  }
  uint32_t name(const std::string& id) {
    out_.identifiers_.push_back(id);
    auto& names = out_.names_;
    auto it = std::find(names.begin(), names.end(), id);
    if (it == names.end()) it = names.insert(names.end(), id);
    return add({Op::Name, Fn::First, static_cast<uint32_t>(it - names.begin()), 0, 0});
  }

  std::string_view s_;
  Expr& out_;
  size_t pos_ = 0;
};

Result<Expr> Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  try {
    ExprParser(e.text_, e).parse();
  } catch (const SyntaxError& err) {
    return fail(ExitCode::BadInput, "expression '" + e.text_ + "': " + err.what);
  }
  for (uint32_t i = 0; i < e.names_.size(); ++i) e.slots_.push_back(i);
  return e;
}

void Expr::bind(const std::function<uint32_t(const std::string&)>& slot_of) {
  for (size_t i = 0; i < names_.size(); ++i) slots_[i] = slot_of(names_[i]);
}

std::optional<double> Expr::eval(std::span<const std::optional<double>> values) const {
  if (nodes_.empty()) return std::nullopt;  // a default-constructed Expr says nothing
  return eval_node(static_cast<uint32_t>(nodes_.size() - 1), values);
}

// Unknown values propagate through every operator, except that a known
// true (||) or known false (&&) side decides even when the other is unknown.
Value Expr::eval_node(uint32_t index, std::span<const Value> values) const {
  const Node& n = nodes_[index];
  switch (n.op) {
    case Op::Number:
      return n.number;
    case Op::Name:
      return values[slots_[n.a]];
    case Op::Call:
      return eval_call(n, values);
    default:
      break;
  }
  Value a = eval_node(n.a, values);
  if (n.op == Op::Neg) return a ? Value(-*a) : std::nullopt;
  if (n.op == Op::Not) return a ? Value(*a == 0 ? 1 : 0) : std::nullopt;
  Value b = eval_node(n.b, values);
  switch (n.op) {
    case Op::Or:
      if ((a && *a != 0) || (b && *b != 0)) return 1;
      return (a && b) ? Value(0) : std::nullopt;
    case Op::And:
      if ((a && *a == 0) || (b && *b == 0)) return 0;
      return (a && b) ? Value(1) : std::nullopt;
    case Op::Div:
      return (a && b && *b != 0) ? Value(*a / *b) : std::nullopt;
    case Op::Add:
      return both(a, b, [](double x, double y) { return x + y; });
    case Op::Sub:
      return both(a, b, [](double x, double y) { return x - y; });
    case Op::Mul:
      return both(a, b, [](double x, double y) { return x * y; });
    case Op::Lt:
      return both(a, b, [](double x, double y) { return double(x < y); });
    case Op::Le:
      return both(a, b, [](double x, double y) { return double(x <= y); });
    case Op::Gt:
      return both(a, b, [](double x, double y) { return double(x > y); });
    case Op::Ge:
      return both(a, b, [](double x, double y) { return double(x >= y); });
    case Op::Eq:
      return both(a, b, [](double x, double y) { return double(x == y); });
    case Op::Ne:
      return both(a, b, [](double x, double y) { return double(x != y); });
    default:
      return std::nullopt;
  }
}

Value Expr::eval_call(const Node& n, std::span<const Value> values) const {
  Value first_known, args[2];
  bool all_known = true;
  for (uint32_t i = 0; i < n.b; ++i) {
    Value v = eval_node(args_[n.a + i], values);
    if (v && !first_known) first_known = v;
    all_known = all_known && v.has_value();
    if (i < 2) args[i] = v;
  }
  if (n.fn == Fn::First) return first_known;  // the first argument the report has
  if (!all_known) return std::nullopt;
  switch (n.fn) {
    case Fn::Min:
      return std::min(*args[0], *args[1]);
    case Fn::Max:
      return std::max(*args[0], *args[1]);
    case Fn::Ceil:
      return std::ceil(*args[0]);
    case Fn::Floor:
      return std::floor(*args[0]);
    case Fn::Abs:
      return std::fabs(*args[0]);
    default:
      return std::nullopt;
  }
}

Result<std::optional<double>> evaluate(const std::string& text, const Lookup& lookup) {
  KEET_TRY(e, Expr::parse(text));
  std::vector<Value> values;
  for (const auto& n : e->names()) values.push_back(lookup(n));
  return e->eval(values);
}

Result<std::vector<std::string>> identifiers(const std::string& text) {
  KEET_TRY(e, Expr::parse(text));
  return e->identifiers();
}

}  // namespace keet::analysis
