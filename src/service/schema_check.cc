#include "service/schema_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "util/json.h"

namespace keet::service {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 15> kChecked = {"type",      "properties", "required", "additionalProperties",
                                                       "items",     "enum",       "const",    "anyOf",
                                                       "$ref",      "minimum",    "maximum",  "minLength",
                                                       "maxLength", "minItems",   "maxItems"};
constexpr std::array<std::string_view, 4> kAnnotations = {"description", "title", "default", "$defs"};

template <size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view key) {
  return std::ranges::find(names, key) != names.end();
}

// JSON Schema lengths count characters (code points), not bytes.
size_t code_points(const std::string& s) {
  return std::ranges::count_if(s, [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

bool has_type(const json& v, std::string_view type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

using Violation = std::optional<std::string>;
Violation check(const json& schema, const json& v, const json& root, const std::string& at);

Violation at_path(const std::string& at, const std::string& why) {
  return fmt::format("at {}: {}", at.empty() ? "/" : at, why);
}

Violation check_ref(const json& schema, const json& v, const json& root, const std::string& at) {
  const auto& ref = schema["$ref"];
  std::string_view prefix = "#/$defs/";
  if (!ref.is_string() || !ref.get<std::string>().starts_with(prefix)) return at_path(at, "unsupported $ref");
  std::string name = ref.get<std::string>().substr(prefix.size());
  if (!root.contains("$defs") || !root["$defs"].contains(name))
    return at_path(at, "$ref to an unknown definition " + name);
  return check(root["$defs"][name], v, root, at);
}

Violation check_object(const json& schema, const json& v, const json& root, const std::string& at) {
  if (auto req = schema.find("required"); req != schema.end())
    for (const auto& name : *req)
      if (!v.contains(name.get<std::string>()))
        return at_path(at, fmt::format("'{}' is required", name.get<std::string>()));
  static const json kNone = json::object();
  const json& props = schema.contains("properties") ? schema["properties"] : kNone;
  bool closed = schema.value("additionalProperties", true) == false;
  for (const auto& [key, value] : v.items()) {
    if (props.contains(key)) {
      if (auto bad = check(props[key], value, root, at + "/" + key)) return bad;
    } else if (closed) {
      return at_path(at, fmt::format("unknown property '{}'", key));
    }
  }
  return std::nullopt;
}

Violation check_array(const json& schema, const json& v, const json& root, const std::string& at) {
  if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>())
    return at_path(at, fmt::format("at least {} items expected", schema["minItems"].get<size_t>()));
  if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>())
    return at_path(at, fmt::format("at most {} items allowed", schema["maxItems"].get<size_t>()));
  if (!schema.contains("items")) return std::nullopt;
  for (size_t i = 0; i < v.size(); ++i)
    if (auto bad = check(schema["items"], v[i], root, fmt::format("{}/{}", at, i))) return bad;
  return std::nullopt;
}

Violation check_scalar(const json& schema, const json& v, const std::string& at) {
  if (v.is_string()) {
    size_t n = code_points(v.get<std::string>());
    if (schema.contains("minLength") && n < schema["minLength"].get<size_t>())
      return at_path(at, fmt::format("at least {} characters expected", schema["minLength"].get<size_t>()));
    if (schema.contains("maxLength") && n > schema["maxLength"].get<size_t>())
      return at_path(at, fmt::format("at most {} characters allowed", schema["maxLength"].get<size_t>()));
  }
  if (v.is_number()) {
    double x = v.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>())
      return at_path(at, fmt::format("must be at least {}", json_text(schema["minimum"])));
    if (schema.contains("maximum") && x > schema["maximum"].get<double>())
      return at_path(at, fmt::format("must be at most {}", json_text(schema["maximum"])));
  }
  return std::nullopt;
}

Violation check_type(const json& schema, const json& v, const std::string& at) {
  const auto& type = schema["type"];
  bool ok = type.is_string()
                ? has_type(v, type.get<std::string>())
                : std::ranges::any_of(type, [&](const json& t) { return has_type(v, t.get<std::string>()); });
  if (ok) return std::nullopt;
  return at_path(at, fmt::format("expected {}", type.is_string() ? type.get<std::string>() : json_text(type)));
}

Violation check(const json& schema, const json& v, const json& root, const std::string& at) {
  if (!schema.is_object()) return std::nullopt;
  if (schema.contains("$ref")) return check_ref(schema, v, root, at);
  if (schema.contains("type"))
    if (auto bad = check_type(schema, v, at)) return bad;
  if (schema.contains("const") && v != schema["const"]) return at_path(at, "must be " + json_text(schema["const"]));
  if (schema.contains("enum") && std::ranges::find(schema["enum"], v) == schema["enum"].end())
    return at_path(at, "must be one of " + json_text(schema["enum"]));
  if (schema.contains("anyOf")) {
    bool any = std::ranges::any_of(schema["anyOf"], [&](const json& s) { return !check(s, v, root, at); });
    if (!any) return at_path(at, "matches none of the allowed forms");
  }
  if (v.is_object()) return check_object(schema, v, root, at);
  if (v.is_array()) return check_array(schema, v, root, at);
  return check_scalar(schema, v, at);
}

}  // namespace

std::optional<std::string> schema_violation(const json& schema, const json& value, const json& root) {
  return check(schema, value, root, "");
}

std::optional<std::string> unchecked_keyword(const json& schema) {
  if (!schema.is_object()) return std::nullopt;
  for (const auto& [key, sub] : schema.items()) {
    if (!among(kChecked, key) && !among(kAnnotations, key)) return key;
    // Maps of schemas: every value is a schema.
    if (key == "properties" || key == "$defs") {
      for (const auto& [name, s] : sub.items())
        if (auto bad = unchecked_keyword(s)) return *bad;
    } else if (key == "anyOf") {
      for (const auto& s : sub)
        if (auto bad = unchecked_keyword(s)) return *bad;
    } else if (key == "items") {
      if (auto bad = unchecked_keyword(sub)) return bad;
    }
  }
  return std::nullopt;
}

}  // namespace keet::service
