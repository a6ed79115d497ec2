#include "analysis/ncu_coverage.h"

#include <map>

#include "util/data_value.h"

namespace keet::analysis {
namespace {

struct MessageEntry {
  std::string contains;
  NcuMeaning meaning;
};

struct MapEntry {
  NcuMeaning meaning;  // the rule's own, for messages no entry below matches
  bool bottleneck = false;
  std::string reason;
  std::vector<MessageEntry> messages;
};

NcuMeaning meaning_of(DataValue j, const NcuMeaning& fallback) {
  NcuMeaning m;
  m.findings = j.value("findings", fallback.findings);
  m.warn = j.value("warn", fallback.warn);
  m.disagree = j.value("disagree", fallback.disagree);
  m.what = j.value("meaning", fallback.what);
  return m;
}

Result<std::map<std::string, MapEntry>> parse_map() {
  auto doc = compiled_data("rules/ncu_rules.json");
  if (!doc) return fail(ExitCode::BadInput, "rule data rules/ncu_rules.json is missing from the build");
  try {
    std::map<std::string, MapEntry> out;
    for (auto [id, j] : doc->at("rules").items()) {
      MapEntry e{meaning_of(j, {}), j.value("covered_by", "") == "bottleneck", j.value("reason", ""), {}};
      for (auto m : j.member("messages")) e.messages.push_back({m.at("contains").str(), meaning_of(m, e.meaning)});
      out[std::string(id)] = std::move(e);
    }
    return out;
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("rules/ncu_rules.json: ") + e.what());
  }
}

const Result<std::map<std::string, MapEntry>>& rule_map() {
  static const auto map = parse_map();
  return map;
}

// "latency.stall.*" matches any stall finding.
bool id_matches(const std::string& pattern, const std::string& id) {
  if (pattern.ends_with("*")) return id.starts_with(pattern.substr(0, pattern.size() - 1));
  return pattern == id;
}

std::string first_match(const NcuMeaning& m, const KernelDiagnosis& d) {
  for (const auto& f : d.findings)
    for (const auto& p : m.findings) {
      if (id_matches(p, f.id)) return f.id;
      for (const auto& merged : f.merged)  // a finding merged into another still covers its warning
        if (id_matches(p, merged)) return merged;
    }
  return {};
}

RuleCoverage judge(const model::RuleResult& r, const std::string& message, const std::map<std::string, MapEntry>& map,
                   const KernelDiagnosis& d) {
  RuleCoverage c{r.id, message, Coverage::Uncovered, ""};
  auto it = map.find(r.id);
  if (it == map.end()) {
    c.matched_by = "rule unknown to KEET's map";
    return c;
  }
  const NcuMeaning& m = *ncu_meaning(r.id, message);
  if (auto id = first_match(m, d); !id.empty()) return {r.id, message, Coverage::Covered, id};
  if (it->second.bottleneck && m.findings == it->second.meaning.findings)
    return {r.id, message, Coverage::Covered, "bottleneck"};
  if (!it->second.reason.empty()) return {r.id, message, Coverage::Explained, it->second.reason};
  if (!m.disagree.empty()) return {r.id, message, Coverage::Disagrees, m.disagree};
  return c;
}

}  // namespace

const NcuMeaning* ncu_meaning(std::string_view rule, std::string_view text) {
  static const NcuMeaning unknown;
  const auto& map = rule_map();
  if (!map) return &unknown;
  auto it = map->find(std::string(rule));
  if (it == map->end()) return &unknown;
  for (const auto& m : it->second.messages)
    if (text.find(m.contains) != std::string_view::npos) return &m.meaning;
  return &it->second.meaning;
}

bool is_ncu_warning(int message_type) { return message_type == 2 || message_type == 4; }

std::string_view coverage_name(Coverage c) {
  switch (c) {
    case Coverage::Covered:
      return "covered";
    case Coverage::Explained:
      return "explained";
    case Coverage::Disagrees:
      return "disagrees";
    case Coverage::Uncovered:
      return "uncovered";
  }
  return "uncovered";
}

Result<std::vector<RuleCoverage>> ncu_coverage(const model::Kernel& kernel, const KernelDiagnosis& diag) {
  const auto& map = rule_map();
  if (!map) return std::unexpected(map.error());
  std::vector<RuleCoverage> out;
  for (const auto& r : kernel.rules)
    for (const auto& m : r.messages)
      if (is_ncu_warning(m.type)) {
        out.push_back(judge(r, m.text, *map, diag));
        break;
      }
  return out;
}

}  // namespace keet::analysis
