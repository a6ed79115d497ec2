// A tiny expression language for rule data: numbers, quantity names (and, in
// the quantity catalogue, metric names with dots), + - * /,
// comparisons, && || !, parentheses and min/max/ceil/floor/abs, and
// first(a, b, ...), the first argument whose value is known. Rules keep
// their thresholds and speedup formulas as text in data/rules/*.json.
//
// An expression is parsed once into an `Expr` (when the rules load) and then
// evaluated for every kernel against a flat array of values, so analysing a
// kernel never re-reads the text or looks a name up by string.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::analysis {

// Looks a name up; nullopt means "not in this report" and makes the whole
// expression unknown (a rule with an unknown condition does not fire).
using Lookup = std::function<std::optional<double>(const std::string&)>;

class Expr {
 public:
  enum class Op : uint8_t { Number, Name, Neg, Not, Add, Sub, Mul, Div, Lt, Le, Gt, Ge, Eq, Ne, And, Or, Call };
  enum class Fn : uint8_t { First, Min, Max, Ceil, Floor, Abs };
  // One tree node; children are indices into the node list. Name: `a` indexes
  // names(). Call: `fn`, and `b` arguments starting at args[a].
  struct Node {
    Op op = Op::Number;
    Fn fn = Fn::First;
    uint32_t a = 0, b = 0;
    double number = 0;
  };

  // Parses `text`; a syntax error, an unknown function or a wrong argument
  // count is an Error (rule data is checked by tests).
  static Result<Expr> parse(std::string_view text);

  const std::string& text() const { return text_; }
  // Distinct names in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  // Every name as written, repeats included, in order (for documentation and validation).
  const std::vector<std::string>& identifiers() const { return identifiers_; }

  // Each name reads values[slot]. After parse(), a name's slot is its index
  // in names(); bind() maps names to the caller's own slots instead (e.g. the
  // rule set's symbol table), once, so evaluation is a walk over the tree.
  void bind(const std::function<uint32_t(const std::string&)>& slot_of);
  std::optional<double> eval(std::span<const std::optional<double>> values) const;

 private:
  friend class ExprParser;
  std::optional<double> eval_node(uint32_t node, std::span<const std::optional<double>> values) const;
  std::optional<double> eval_call(const Node& n, std::span<const std::optional<double>> values) const;

  std::string text_;
  std::vector<std::string> names_;
  std::vector<std::string> identifiers_;
  std::vector<Node> nodes_;      // the root is the last node
  std::vector<uint32_t> args_;   // argument node lists of calls
  std::vector<uint32_t> slots_;  // slot of each entry in names_
};

// Parses and evaluates `text` in one go (tests and one-off use; rules keep an Expr).
Result<std::optional<double>> evaluate(const std::string& text, const Lookup& lookup);
// Names the expression refers to (for documentation and validation).
Result<std::vector<std::string>> identifiers(const std::string& text);

}  // namespace keet::analysis
