#include "analysis/rules.h"

#include <nlohmann/json.hpp>

#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

using json = nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key))
    for (const auto& s : j.at(key)) out.push_back(s.get<std::string>());
  return out;
}

Advice advice_of(const json& a) {
  return {a.at("text").get<std::string>(), a.value("min_cc", 0.0), a.value("max_cc", 99.0)};
}

// Stall advice is written compactly as "text|min_cc".
Advice advice_of_text(const std::string& s) {
  auto bar = s.rfind('|');
  if (bar == std::string::npos) return {s, 0, 99};
  return {s.substr(0, bar), std::stod(s.substr(bar + 1)), 99};
}

Rule rule_of(const json& j) {
  Rule r;
  r.id = j.at("id");
  r.cls = class_from_name(j.at("class"));
  r.title = j.at("title");
  r.when = j.at("when");
  r.severity_by = j.at("severity").at("by");
  r.high = j.at("severity").at("high");
  r.medium = j.at("severity").at("medium");
  r.evidence = strings(j, "evidence");
  r.explanation = j.at("explanation");
  r.explanation_short = j.value("explanation_short", "");
  r.speedup = strings(j, "speedup");
  r.speedup_doc = j.value("speedup_doc", "");
  r.dram_cap = j.value("dram_cap", false);
  for (const auto& a : j.at("advice")) r.advice.push_back(advice_of(a));
  r.source_metrics = strings(j, "source_metrics");
  r.references = strings(j, "references");
  r.ncu_rules = strings(j, "ncu_rules");
  return r;
}

StallRule stall_of(const std::string& reason, const json& j) {
  StallRule s{reason, class_from_name(j.at("class")), j.at("what"), {}, j.value("source_metric", "")};
  for (const auto& a : j.at("advice")) s.advice.push_back(advice_of_text(a.get<std::string>()));
  return s;
}

Classify classify_of(const json& j) {
  Classify c;
  c.launch_max_duration_ns = j.at("launch_max_duration_ns");
  c.launch_max_sol = j.at("launch_max_sol");
  c.busy_sol = j.at("busy_sol");
  for (const auto& [cls, ids] : j.at("fallback").items())
    for (const auto& id : ids) c.fallback[class_from_name(cls)].push_back(id.get<std::string>());
  return c;
}

}  // namespace

BottleneckClass class_from_name(const std::string& s) {
  if (s == "memory") return BottleneckClass::Memory;
  if (s == "compute") return BottleneckClass::Compute;
  if (s == "launch") return BottleneckClass::Launch;
  if (s == "latency") return BottleneckClass::Latency;
  throw std::invalid_argument("unknown bottleneck class '" + s + "'");
}

const Rule* RuleSet::find(const std::string& id) const {
  for (const auto& r : rules)
    if (r.id == id) return &r;
  return nullptr;
}

Result<RuleSet> parse_rules(std::string_view findings_json, std::string_view stalls_json) {
  try {
    RuleSet set;
    json f = json::parse(findings_json);
    for (const auto& r : f.at("rules")) set.rules.push_back(rule_of(r));
    set.classify = classify_of(f.at("classify"));
    json s = json::parse(stalls_json);
    set.stall_min_share = s.at("min_share");
    set.stall_speedup = s.at("speedup");
    set.stall_speedup_doc = s.value("speedup_doc", "");
    for (const auto& [reason, j] : s.at("reasons").items()) set.stalls.push_back(stall_of(reason, j));
    return set;
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("rule data: ") + e.what());
  }
}

Result<const RuleSet*> rule_set() {
  static const Result<RuleSet> set = [] {
    auto f = embedded_file("rules/findings.json");
    auto s = embedded_file("rules/stalls.json");
    if (!f || !s) return Result<RuleSet>(fail(ExitCode::BadInput, "rule data is missing from the build"));
    return parse_rules(*f, *s);
  }();
  if (!set) return std::unexpected(set.error());
  return &*set;
}

}  // namespace keet::analysis
