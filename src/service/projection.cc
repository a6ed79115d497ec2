#include "service/projection.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "service/mcp_page.h"
#include "util/strings.h"

namespace keet::service {
namespace {

using nlohmann::json;

// The operations an expression names one of, and the modifiers it may add.
const std::set<std::string, std::less<>> kOperations = {"string", "name", "strings", "integer", "number",
                                                        "copy",   "dim3", "ranges",  "measure", "measures",
                                                        "object", "each", "var",     "derive"};
const std::set<std::string, std::less<>> kModifiers = {
    "or_null", "at_least",     "metric",    "unit",   "unit_of_metric", "with", "skip_zeros", "drop_prefixed", "shape",
    "set",     "where_number", "drop_zero", "unless", "first",          "if",   "if_above",   "omit_null"};

// The member at a path of keys joined by '.'; a key of digits indexes an
// array. Null when any step is missing: a contract's absent member.
const json& member_at(const json& j, std::string_view path) {
  static const json kNull;
  if (path.empty()) return j;  // the source itself
  const json* at = &j;
  for (auto key : split(path, '.')) {
    if (at->is_object()) {
      auto it = at->find(key);
      if (it == at->end()) return kNull;
      at = &*it;
    } else if (at->is_array() && !key.empty() && std::ranges::all_of(key, ::isdigit)) {
      size_t i = std::stoul(std::string(key));
      if (i >= at->size()) return kNull;
      at = &(*at)[i];
    } else {
      return kNull;
    }
  }
  return *at;
}

// An argument that is one key or a list of keys.
std::vector<std::string> keys_of(const json& arg) {
  if (arg.is_string()) return {arg.get<std::string>()};
  std::vector<std::string> out;
  if (arg.is_array())
    for (const auto& k : arg)
      if (k.is_string()) out.push_back(k.get<std::string>());
  return out;
}

// The first key that holds a non-empty string, or "".
std::string first_string(const json& source, const json& keys) {
  for (const auto& key : keys_of(keys))
    if (const auto& v = member_at(source, key); v.is_string() && !v.get_ref<const std::string&>().empty())
      return v.get<std::string>();
  return {};
}

// expr[key] without a copy (json::value copies), null when absent.
const json& modifier(const json& expr, std::string_view key) {
  static const json kNull;
  auto it = expr.find(key);
  return it == expr.end() ? kNull : *it;
}

bool truthy(const ProjectionScope& scope, const json& var) {
  return var.is_string() && scope.vars.value(var.get<std::string>(), json(false)) == true;
}

// A template: text with {key} replaced by the source's string at that key
// and {$var} by the scope's variable ("" when either is not a string).
std::string expand(const std::string& text, const json& source, const ProjectionScope& scope) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t open = text.find('{', i), close = open == std::string::npos ? open : text.find('}', open);
    if (close == std::string::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    std::string key = text.substr(open + 1, close - open - 1);
    const json& v = key.starts_with('$') ? scope.vars.value(key.substr(1), json()) : member_at(source, key);
    if (v.is_string()) out += v.get<std::string>();
    i = close + 1;
  }
  return out;
}

// One template or a list of them: the first that expands to non-empty text.
std::string expand_first(const json& templates, const json& source, const ProjectionScope& scope) {
  for (const auto& t : keys_of(templates))
    if (auto text = expand(t, source, scope); !text.empty()) return text;
  return {};
}

json measure_of(std::string metric, double value, std::string unit) {
  return {{"metric", std::move(metric)}, {"value", value}, {"unit", std::move(unit)}};
}

// Sets the scope's variables an expression's `set` names for as long as it
// lives, then puts the old values back. Most expressions set none, and then
// nothing is copied.
class ScopedVars {
 public:
  ScopedVars(ProjectionScope& scope, const json& set) : scope_(scope), setting_(set.is_object()) {
    if (!setting_) return;
    saved_ = scope.vars;
    for (const auto& [k, v] : set.items()) scope_.vars[k] = v;
  }
  ~ScopedVars() {
    if (setting_) scope_.vars = std::move(saved_);
  }
  ScopedVars(const ScopedVars&) = delete;
  ScopedVars& operator=(const ScopedVars&) = delete;

 private:
  ProjectionScope& scope_;
  bool setting_;
  json saved_;
};

std::string operation_of(const json& expr) {
  std::string op;
  if (expr.is_object())
    for (const auto& [k, v] : expr.items())
      if (kOperations.contains(k)) op = op.empty() ? k : "<two>";
  return op;
}

}  // namespace

Projections::Projections(json shapes, Derivations derivations)
    : shapes_(shapes.is_object() ? std::move(shapes) : json::object()), derivations_(std::move(derivations)) {}

json Projections::apply(std::string_view shape, const json& source, ProjectionScope& scope) const {
  return shaped(shape_named(json(shape)), source, scope);
}

json Projections::apply_each(std::string_view shape, const json& list, ProjectionScope& scope) const {
  json out = json::array();
  if (list.is_array())
    for (const auto& element : list) out.push_back(apply(shape, element, scope));
  return out;
}

const json& Projections::shape_named(const json& ref) const {
  static const json kEmpty = json::object();
  if (!ref.is_string()) return ref.is_object() ? ref : kEmpty;
  auto it = shapes_.find(ref.get<std::string>());
  return it == shapes_.end() ? kEmpty : *it;
}

json Projections::shaped(const json& shape, const json& source, ProjectionScope& scope) const {
  if (auto is = shape.find("$is"); is != shape.end()) return value(*is, source, scope);
  return members(shape, source, scope);
}

json Projections::members(const json& shape, const json& source, ProjectionScope& scope) const {
  json out = json::object();
  for (const auto& [name, expr] : shape.items()) {
    if (expr.contains("if") && !truthy(scope, expr["if"])) continue;
    if (const auto& above = modifier(expr, "if_above"); above.is_array() && above.size() == 2) {
      const auto& v = member_at(source, above[0].get<std::string>());
      if (!v.is_number() || v.get<double>() <= above[1].get<double>()) continue;
    }
    json v = value(expr, source, scope);
    if (v.is_null() && expr.value("omit_null", false)) continue;
    out[name] = std::move(v);
  }
  return out;
}

json Projections::value(const json& expr, const json& source, ProjectionScope& scope) const {
  std::string op = operation_of(expr);
  static const json kNull;
  const json& arg = expr.is_object() && expr.contains(op) ? expr[op] : kNull;
  const json& at = arg.is_string() ? member_at(source, arg.get<std::string>()) : kNull;
  if (op == "string" || op == "name") {
    std::string s = first_string(source, arg);
    if (s.empty() && expr.value("or_null", false)) return at.is_string() ? at : json(nullptr);
    return op == "name" ? abbreviate_name(s, 100) : s;
  }
  if (op == "strings") return at.is_array() ? at : json::array();
  if (op == "integer")
    return std::max<int64_t>(expr.value("at_least", INT64_MIN), at.is_number_integer() ? at.get<int64_t>() : 0);
  if (op == "number") return at.is_number() ? at : json(nullptr);
  if (op == "copy") return at;
  if (op == "dim3") return at.is_array() && at.size() == 3 ? at : json::array({0, 0, 0});
  if (op == "ranges") {
    std::vector<int64_t> indices;
    if (at.is_number_integer()) indices.push_back(at.get<int64_t>());
    for (const auto& i : at.is_array() ? at : json::array())
      if (i.is_number_integer()) indices.push_back(i.get<int64_t>());
    return index_ranges(indices);
  }
  if (op == "measure") return measure(expr, source, scope);
  if (op == "measures") return measures(expr, source, scope);
  if (op == "object") {
    if (!at.is_object()) return nullptr;
    ScopedVars vars(scope, modifier(expr, "set"));
    return shaped(shape_named(modifier(expr, "shape")), at, scope);
  }
  if (op == "each") return each(expr, source, scope);
  if (op == "var") return arg.is_string() ? scope.vars.value(arg.get<std::string>(), json()) : json();
  if (op == "derive") {
    auto it = arg.is_string() ? derivations_.find(arg.get<std::string>()) : derivations_.end();
    return it == derivations_.end() ? json() : it->second(source);
  }
  return nullptr;
}

json Projections::each(const json& expr, const json& source, ProjectionScope& scope) const {
  const json& list = member_at(source, expr["each"].get<std::string>());
  json out = json::array();
  if (!list.is_array()) return out;
  ScopedVars vars(scope, modifier(expr, "set"));
  const json& shape = shape_named(modifier(expr, "shape"));
  auto where_number = expr.value("where_number", std::string());
  auto drop_zero = expr.value("drop_zero", std::string());
  bool keep_zeros = truthy(scope, modifier(expr, "unless"));
  size_t first = expr.value("first", std::numeric_limits<size_t>::max());
  for (const auto& element : list) {
    if (out.size() >= first) break;
    if (!where_number.empty() && !member_at(element, where_number).is_number()) continue;
    if (!drop_zero.empty() && !keep_zeros) {
      const auto& v = member_at(element, drop_zero);
      if (v.is_number() && v.get<double>() == 0) continue;
    }
    out.push_back(shaped(shape, element, scope));
  }
  return out;
}

// {metric, value, unit}, or null where the contract holds no number.
json Projections::measure(const json& expr, const json& source, const ProjectionScope& scope) const {
  const json& v = member_at(source, expr["measure"].get<std::string>());
  if (!v.is_number()) return nullptr;
  std::string metric = expand_first(modifier(expr, "metric"), source, scope);
  std::string unit = expr.value("unit_of_metric", false) ? model::unit_of(metric)
                                                         : expand_first(modifier(expr, "unit"), source, scope);
  json m = measure_of(metric, v.get<double>(), unit);
  if (const auto& with = modifier(expr, "with"); with.is_object())
    for (const auto& [out, key] : with.items())
      if (std::string s = first_string(source, key); !s.empty()) m[out] = s;
  return m;
}

// A map of counters as measures, each with its metric's unit or the one
// stated; skip_zeros leaves out (and counts) the zeros.
json Projections::measures(const json& expr, const json& source, ProjectionScope& scope) const {
  json map = member_at(source, expr["measures"].get<std::string>());
  json out = json::array();
  if (!map.is_object()) return out;
  if (const auto& drop = modifier(expr, "drop_prefixed"); drop.is_array() && drop.size() == 2) {
    const auto& keys = member_at(source, drop[1].get<std::string>());
    if (keys.is_object())
      for (const auto& [k, v] : keys.items()) map.erase(drop[0].get<std::string>() + k);
  }
  bool skip_zeros = expr.value("skip_zeros", false);
  std::string unit = expand_first(modifier(expr, "unit"), source, scope);
  for (const auto& [name, v] : map.items()) {
    if (!v.is_number()) continue;
    if (skip_zeros && v.get<double>() == 0)
      ++scope.zeros;
    else
      out.push_back(measure_of(name, v.get<double>(), unit.empty() ? model::unit_of(name) : unit));
  }
  return out;
}

// ------------------------------------------------------------ checking

std::optional<std::string> Projections::problem() const {
  for (const auto& [name, shape] : shapes_.items())
    if (name != "about")
      if (auto p = shape_problem(shape, name)) return p;
  return std::nullopt;
}

std::optional<std::string> Projections::shape_problem(const json& shape, const std::string& where) const {
  if (!shape.is_object()) return where + ": a shape is an object";
  if (shape.contains("$is")) return expression_problem(shape["$is"], where + ".$is");
  for (const auto& [member, expr] : shape.items())
    if (auto p = expression_problem(expr, where + "." + member)) return p;
  return std::nullopt;
}

std::optional<std::string> Projections::expression_problem(const json& expr, const std::string& where) const {
  std::string op = operation_of(expr);
  if (op.empty() || op == "<two>") return where + ": an expression names exactly one operation";
  for (const auto& [k, v] : expr.items())
    if (!kOperations.contains(k) && !kModifiers.contains(k)) return fmt::format("{}: unknown modifier {}", where, k);
  if (op == "derive" && !derivations_.contains(expr[op].get<std::string>()))
    return fmt::format("{}: no derivation {}", where, expr[op].dump());
  if (!expr[op].is_string() && !(expr[op].is_array() && (op == "string" || op == "name")))
    return where + ": the operation's argument is a key";
  if (expr.contains("shape")) {
    const json& ref = expr["shape"];
    if (ref.is_string() && !shapes_.contains(ref.get<std::string>()))
      return fmt::format("{}: no shape {}", where, ref.dump());
    if (ref.is_object())
      if (auto p = shape_problem(ref, where)) return p;
  }
  if ((op == "object" || op == "each") && !expr.contains("shape")) return where + ": object and each name a shape";
  return std::nullopt;
}

}  // namespace keet::service
