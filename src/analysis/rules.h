// Rule data (data/rules/findings.json, stalls.json) loaded into typed structs.
// The schema is declared here once; tests validate every rule against it.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "util/error.h"

namespace keet::analysis {

struct Advice {
  std::string text;
  double min_cc = 0;   // 0: any
  double max_cc = 99;  // inclusive
};

struct Rule {
  std::string id;
  BottleneckClass cls = BottleneckClass::Latency;
  std::string title;        // template with {quantity[:fmt]} placeholders
  std::string when;         // expression
  std::string severity_by;  // expression giving the severity score
  double high = 0, medium = 0;
  std::vector<std::string> evidence;  // quantity names
  std::string explanation;            // template
  std::string explanation_short;      // used when `explanation` names a quantity the report lacks
  std::vector<std::string> speedup;   // expressions, first evaluable wins
  std::string speedup_doc;
  bool dram_cap = false;  // the fix cannot remove DRAM bytes: cap at dram_headroom
  std::vector<Advice> advice;
  std::vector<std::string> source_metrics;  // per-PC metrics to attribute to lines
  std::vector<std::string> references;
  std::vector<std::string> ncu_rules;
};

struct StallRule {
  std::string reason;
  BottleneckClass cls = BottleneckClass::Latency;
  std::string what;
  std::vector<Advice> advice;
  std::string source_metric;
};

struct Classify {
  double launch_max_duration_ns = 10000;
  double launch_max_sol = 30;
  double busy_sol = 60;
  std::map<BottleneckClass, std::vector<std::string>> fallback;
};

struct RuleSet {
  std::vector<Rule> rules;
  std::vector<StallRule> stalls;
  double stall_min_share = 25;
  std::string stall_speedup;
  std::string stall_speedup_doc;
  Classify classify;
  const Rule* find(const std::string& id) const;
};

// Parses the embedded rule files once (a broken file is a build-time bug that
// the rules unit test catches; at run time it is reported as an Error).
Result<const RuleSet*> rule_set();
Result<RuleSet> parse_rules(std::string_view findings_json, std::string_view stalls_json);
BottleneckClass class_from_name(const std::string& s);

}  // namespace keet::analysis
