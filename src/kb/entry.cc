#include "kb/entry.h"
#include "util/error.h"

#include <algorithm>
#include <array>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace keet::kb {
namespace {

using json = nlohmann::json;
using TextField = std::string Entry::*;
using ListField = std::vector<std::string> Entry::*;
struct Special {};  // parsed by its own function (kind, references)

// The schema: every field an entry may have, its C++ member and whether it is
// required. Unknown fields are rejected so a typo cannot silently drop data.
struct FieldSpec {
  std::string_view name;
  std::variant<TextField, ListField, Special> member;
  bool required;
};
const std::array<FieldSpec, 13> kSchema = {{
    {"id", &Entry::id, true},
    {"kind", Special{}, true},
    {"title", &Entry::title, true},
    {"aliases", &Entry::aliases, false},
    {"metrics", &Entry::metrics, false},
    {"metric_prefixes", &Entry::metric_prefixes, false},
    {"evidence", &Entry::evidence, false},
    {"summary", &Entry::summary, true},
    {"how_to_read", &Entry::how_to_read, true},
    {"typical", &Entry::typical, true},
    {"remedies", &Entry::remedies, true},
    {"references", Special{}, true},
    {"related", &Entry::related, false},
}};

const std::array<std::pair<std::string_view, EntryKind>, 4> kKinds = {{
    {"finding", EntryKind::Finding},
    {"stall", EntryKind::Stall},
    {"metric", EntryKind::Metric},
    {"topic", EntryKind::Topic},
}};

std::unexpected<Error> bad(const std::string& where, std::string_view what) {
  return fail(ExitCode::BadInput, fmt::format("{}: {}", where, what));
}

const FieldSpec* find_field(std::string_view name) {
  auto it = std::ranges::find(kSchema, name, &FieldSpec::name);
  return it == kSchema.end() ? nullptr : &*it;
}

Result<void> read_text(const json& v, std::string& out, const std::string& where, std::string_view field) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty())
    return bad(where, fmt::format("'{}' must be a non-empty string", field));
  out = v.get<std::string>();
  return {};
}

Result<void> read_list(const json& v, std::vector<std::string>& out, const std::string& where, std::string_view field) {
  if (!v.is_array()) return bad(where, fmt::format("'{}' must be an array of strings", field));
  for (const auto& item : v) {
    std::string s;
    if (auto r = read_text(item, s, where, field); !r) return r;
    out.push_back(std::move(s));
  }
  return {};
}

Result<void> read_kind(const json& v, Entry& e, const std::string& where) {
  for (const auto& [name, kind] : kKinds)
    if (v.is_string() && v.get_ref<const std::string&>() == name) {
      e.kind = kind;
      return {};
    }
  return bad(where, "'kind' must be one of finding, stall, metric");
}

Result<void> read_references(const json& v, Entry& e, const ReferenceTable& refs, const std::string& where) {
  std::vector<std::string> keys;
  if (auto r = read_list(v, keys, where, "references"); !r) return r;
  for (const auto& key : keys) {
    auto it = refs.find(key);
    if (it == refs.end()) return bad(where, fmt::format("unknown reference '{}'", key));
    e.references.push_back(it->second);
  }
  return {};
}

Result<void> read_field(const FieldSpec& f, const json& v, Entry& e, const ReferenceTable& refs,
                        const std::string& where) {
  if (auto* text = std::get_if<TextField>(&f.member)) return read_text(v, e.*(*text), where, f.name);
  if (auto* list = std::get_if<ListField>(&f.member)) return read_list(v, e.*(*list), where, f.name);
  if (f.name == "kind") return read_kind(v, e, where);
  return read_references(v, e, refs, where);
}

// Lower-case letters, digits and "_.*-" only, so ids are stable lookup keys.
bool valid_name(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

Result<void> check_id(const Entry& e, const std::string& where) {
  std::string prefix = std::string(kind_name(e.kind)) + ":";
  if (!e.id.starts_with(prefix)) return bad(where, fmt::format("id '{}' must start with '{}'", e.id, prefix));
  if (!valid_name(e.name())) return bad(where, fmt::format("id '{}' has characters outside [a-z0-9_.-]", e.id));
  return {};
}

Result<void> check_kind_rules(const Entry& e, const std::string& where) {
  if (e.kind != EntryKind::Finding && e.metrics.empty())
    return bad(where, fmt::format("{} entry '{}' must list its ncu 'metrics'", kind_name(e.kind), e.id));
  return {};
}

Result<void> check_fields_present(const json& j, const std::string& where) {
  for (const auto& [key, value] : j.items())
    if (!find_field(key)) return bad(where, fmt::format("unknown field '{}'", key));
  for (const auto& f : kSchema)
    if (f.required && !j.contains(f.name)) return bad(where, fmt::format("missing '{}'", f.name));
  return {};
}

}  // namespace

std::string_view kind_name(EntryKind k) {
  for (const auto& [name, kind] : kKinds)
    if (kind == k) return name;
  return "?";
}

std::string_view Entry::name() const {
  auto colon = id.find(':');
  return colon == std::string::npos ? std::string_view(id) : std::string_view(id).substr(colon + 1);
}

Result<Entry> parse_entry(const json& j, const ReferenceTable& refs, const std::string& where) {
  if (!j.is_object()) return bad(where, "an entry must be a JSON object");
  KEET_TRY_VOID(check_fields_present(j, where));
  Entry e;
  for (const auto& f : kSchema)
    if (j.contains(f.name)) KEET_TRY_VOID(read_field(f, j.at(f.name), e, refs, where));
  std::string named = fmt::format("{} ({})", where, e.id);
  KEET_TRY_VOID(check_id(e, named));
  KEET_TRY_VOID(check_kind_rules(e, named));
  return e;
}

namespace {

Result<Reference> parse_reference(const std::string& key, const json& v, const std::string& where) {
  Reference r{key, "", ""};
  if (!v.is_object() || !v.contains("title") || !v.contains("url")) return bad(where, "needs 'title' and 'url'");
  KEET_TRY_VOID(read_text(v.at("title"), r.title, where, "title"));
  KEET_TRY_VOID(read_text(v.at("url"), r.url, where, "url"));
  if (!r.url.starts_with("https://")) return bad(where, "'url' must be https");
  return r;
}

}  // namespace

Result<ReferenceTable> parse_references(std::string_view text, const std::string& file) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("references") || !j.at("references").is_object())
    return fail(ExitCode::BadInput, file + ": expected {\"references\": {key: {title, url}}}");
  ReferenceTable table;
  for (const auto& [key, value] : j.at("references").items()) {
    KEET_TRY(r, parse_reference(key, value, fmt::format("{}: reference '{}'", file, key)));
    table.emplace(key, std::move(*r));
  }
  return table;
}

}  // namespace keet::kb
