// A tiny expression language for rule data: numbers, quantity names, + - * /,
// comparisons, && || !, parentheses and min/max/ceil/floor/abs, and
// first(a, b, ...), the first argument whose value is known. Rules keep
// their thresholds and speedup formulas as text in data/rules/*.json.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace keet::analysis {

// Looks a name up; nullopt means "not in this report" and makes the whole
// expression unknown (a rule with an unknown condition does not fire).
using Lookup = std::function<std::optional<double>(const std::string&)>;

// Evaluates `text`; a syntax error is an Error (rule data is checked by tests).
Result<std::optional<double>> evaluate(const std::string& text, const Lookup& lookup);
// Names the expression refers to (for documentation and validation).
Result<std::vector<std::string>> identifiers(const std::string& text);

}  // namespace keet::analysis
