// Checks a JSON value against the subset of JSON Schema the MCP tool table
// (data/mcp/tools.json) uses: type, properties, required,
// additionalProperties: false, items, enum, const, anyOf, $ref to #/$defs/...,
// minimum/maximum, minLength/maxLength, minItems/maxItems. Tool arguments from
// a client are checked with it before anything runs; a keyword outside the
// subset is refused when the table loads (check_schema_keywords), so no
// constraint the table states is silently ignored.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace keet::service {

// The first violation as "at /path: why", or nullopt when `value` conforms.
// `root` holds the $defs that $refs name (the schema itself, usually).
std::optional<std::string> schema_violation(const nlohmann::json& schema, const nlohmann::json& value,
                                            const nlohmann::json& root);

// A keyword of `schema` (or of a schema inside it) that schema_violation does
// not check, or nullopt.
std::optional<std::string> unchecked_keyword(const nlohmann::json& schema);

}  // namespace keet::service
