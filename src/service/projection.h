// Answers as projections of a command's JSON contract, declared as data: the
// "shapes" of data/mcp/tools.json say what each row and object of a tool's
// answer holds and from which member of the contract (docs/mcp.md, "How an
// answer is made"). A tool's code runs the command, picks and pages; it does
// not reshape.
//
// A shape is an object of members, each an expression, or {"$is": expression}.
// An expression is an object with one operation and its modifiers:
//   string, name (abbreviated), strings, integer, number, copy, dim3, ranges,
//   measure, measures, object, each, var, derive.
// The full grammar is in docs/mcp.md; Projections::problem() checks a table
// against it, so that a misspelt operation fails a unit test, not a call.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace keet::service {

// What one call adds to its projections: variables the shapes read ("detail",
// "mangled", "sorted_by") and the count of zeros left out of measures.
struct ProjectionScope {
  nlohmann::json vars = nlohmann::json::object();
  int64_t zeros = 0;
};

class Projections {
 public:
  // A value the contract implies but does not hold as such (a sentence made
  // from several members): computed in C++, named in the table by `derive`.
  using Derivation = std::function<nlohmann::json(const nlohmann::json& source)>;
  using Derivations = std::map<std::string, Derivation, std::less<>>;

  Projections(nlohmann::json shapes, Derivations derivations);

  // The named shape applied to `source`.
  nlohmann::json apply(std::string_view shape, const nlohmann::json& source, ProjectionScope& scope) const;
  // The named shape applied to each element of `list` (an array; anything else is empty).
  nlohmann::json apply_each(std::string_view shape, const nlohmann::json& list, ProjectionScope& scope) const;

  // The first thing wrong with the table: an unknown operation or modifier,
  // an expression with none or two operations, a shape or derivation named
  // and not declared.
  std::optional<std::string> problem() const;

 private:
  nlohmann::json shaped(const nlohmann::json& shape, const nlohmann::json& source, ProjectionScope& scope) const;
  nlohmann::json members(const nlohmann::json& shape, const nlohmann::json& source, ProjectionScope& scope) const;
  nlohmann::json value(const nlohmann::json& expr, const nlohmann::json& source, ProjectionScope& scope) const;
  nlohmann::json each(const nlohmann::json& expr, const nlohmann::json& source, ProjectionScope& scope) const;
  nlohmann::json measure(const nlohmann::json& expr, const nlohmann::json& source, const ProjectionScope& scope) const;
  nlohmann::json measures(const nlohmann::json& expr, const nlohmann::json& source, ProjectionScope& scope) const;
  const nlohmann::json& shape_named(const nlohmann::json& ref) const;
  std::optional<std::string> shape_problem(const nlohmann::json& shape, const std::string& where) const;
  std::optional<std::string> expression_problem(const nlohmann::json& expr, const std::string& where) const;

  nlohmann::json shapes_;
  Derivations derivations_;
};

}  // namespace keet::service
