// One knowledge-base entry and the schema every data/kb/entries/*.json entry
// must follow. The schema is declared once, as the field table in entry.cc;
// parse_entry() is the only way an entry is made, so every entry the program
// sees has passed validation.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/error.h"

namespace keet::kb {

// A topic is a general entry ("occupancy", "stalls"): a bare topic name finds
// it before the narrow entries it lists as related.
enum class EntryKind { Finding, Stall, Metric, Topic };
std::string_view kind_name(EntryKind k);

// A link into NVIDIA's documentation, resolved from data/kb/references.json.
struct Reference {
  std::string key;  // e.g. "pg.warp_states"
  std::string title;
  std::string url;
};
using ReferenceTable = std::map<std::string, Reference, std::less<>>;

struct Entry {
  std::string id;  // "<kind>:<name>", e.g. "stall:long_scoreboard"
  EntryKind kind = EntryKind::Metric;
  std::string title;
  std::vector<std::string> aliases;          // nvprof names, other spellings
  std::vector<std::string> metrics;          // ncu metric names the entry documents
  std::vector<std::string> metric_prefixes;  // metric families, e.g. "sm__inst_executed_pipe_"
  std::vector<std::string> evidence;         // metrics a finding is judged on
  std::string summary;                       // what it measures / means
  std::string how_to_read;
  std::string typical;                // typical values and thresholds
  std::vector<std::string> remedies;  // concrete code-level changes
  std::vector<Reference> references;
  std::vector<std::string> related;  // other entry ids

  std::string_view name() const;  // the id without its "<kind>:" prefix
};

// Builds an entry from JSON, checking every field against the schema.
// `where` names the entry in messages ("kb/entries/stalls.json: entry 3").
Result<Entry> parse_entry(const nlohmann::json& j, const ReferenceTable& refs, const std::string& where);

// Reads data/kb/references.json's {"references": {key: {title, url}}}.
Result<ReferenceTable> parse_references(std::string_view text, const std::string& file);

}  // namespace keet::kb
