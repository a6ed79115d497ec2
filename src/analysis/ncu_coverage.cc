#include "analysis/ncu_coverage.h"

#include <map>

#include <nlohmann/json.hpp>

#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

struct MapEntry {
  std::vector<std::string> findings;
  bool bottleneck = false;
  std::string reason;
};

Result<std::map<std::string, MapEntry>> parse_map() {
  auto text = embedded_file("rules/ncu_rules.json");
  if (!text) return fail(ExitCode::BadInput, "rule data rules/ncu_rules.json is missing from the build");
  try {
    std::map<std::string, MapEntry> out;
    const auto doc = nlohmann::json::parse(*text);  // must outlive the loop
    for (const auto& [id, j] : doc.at("rules").items())
      out[id] = {j.at("findings").get<std::vector<std::string>>(), j.value("covered_by", "") == "bottleneck",
                 j.value("reason", "")};
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

std::string first_match(const MapEntry& e, const KernelDiagnosis& d) {
  for (const auto& f : d.findings)
    for (const auto& p : e.findings)
      if (id_matches(p, f.id)) return f.id;
  return {};
}

RuleCoverage judge(const model::RuleResult& r, const std::string& message,
                   const std::map<std::string, MapEntry>& map, const KernelDiagnosis& d) {
  RuleCoverage c{r.id, message, Coverage::Uncovered, ""};
  auto it = map.find(r.id);
  if (it == map.end()) {
    c.matched_by = "rule unknown to KEET's map";
    return c;
  }
  if (auto id = first_match(it->second, d); !id.empty()) return {r.id, message, Coverage::Covered, id};
  if (it->second.bottleneck) return {r.id, message, Coverage::Covered, "bottleneck"};
  if (!it->second.reason.empty()) return {r.id, message, Coverage::Explained, it->second.reason};
  return c;
}

}  // namespace

std::string_view coverage_name(Coverage c) {
  switch (c) {
    case Coverage::Covered: return "covered";
    case Coverage::Explained: return "explained";
    case Coverage::Uncovered: return "uncovered";
  }
  return "uncovered";
}

Result<std::vector<RuleCoverage>> ncu_coverage(const model::Kernel& kernel, const KernelDiagnosis& diag) {
  const auto& map = rule_map();
  if (!map) return std::unexpected(map.error());
  std::vector<RuleCoverage> out;
  for (const auto& r : kernel.rules)
    for (const auto& m : r.messages)
      if (m.type >= 2) {
        out.push_back(judge(r, m.text, *map, diag));
        break;
      }
  return out;
}

}  // namespace keet::analysis
