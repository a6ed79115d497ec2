// Rule data (data/rules/findings.json, stalls.json) loaded into typed structs.
// The schema is declared here once; tests validate every rule against it.
// Expressions and templates are parsed here, once per process, and their names
// bound to the rule set's symbol table (see symbols.h).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/expr.h"
#include "analysis/symbols.h"
#include "analysis/text_template.h"
#include "util/error.h"

namespace keet {
class DataValue;
}

namespace keet::analysis {

struct Advice {
  std::string text;
  double min_cc = 0;         // 0: any
  double max_cc = 99;        // inclusive
  std::optional<Expr> when;  // given only when this holds for the kernel (unknown: not given)
};

// A title or explanation given only when `when` holds for the kernel (a
// finding's words follow the verdict: "Compute-bound: ..." only under a
// compute verdict). No `when`: always a candidate.
struct TextVariant {
  std::optional<Expr> when;
  TextTemplate text;
  std::vector<SymbolId> symbols() const { return text.symbols(); }
};

struct Rule {
  std::string id;
  BottleneckClass cls = BottleneckClass::Latency;
  // With {quantity[:fmt]} placeholders; the first whose `when` holds and whose
  // values are all known is used (the last has neither, a test checks), so a
  // title never shows a gap.
  std::vector<TextVariant> titles;
  std::vector<std::string> relieves;  // unit ids (quantities.json "units") the fix takes work off
  Expr when;
  Expr severity_by;  // gives the severity score
  double high = 0, medium = 0;
  std::vector<std::string> evidence;      // quantity names
  std::vector<QuantityId> evidence_ids;   // the names that are quantities, same order
  std::vector<TextVariant> explanations;  // the first whose `when` holds
  TextTemplate explanation_short;         // used when the explanation names only quantities the report lacks
  std::vector<Expr> speedup;              // first evaluable wins
  std::string speedup_doc;
  bool dram_cap = false;  // the fix cannot remove DRAM bytes: cap at dram_headroom
  struct Cap {
    Expr formula;
    std::string what;  // the unit that would bind, for the text
  };
  std::vector<Cap> caps;  // further ceilings on the estimate, each stated when it applies
  std::vector<Advice> advice;
  std::vector<std::string> source_metrics;  // per-PC metrics to attribute to lines
  std::vector<std::string> references;
  std::vector<std::string> ncu_rules;
  std::vector<SymbolId> ncu_warn;  // ncu_warn_<Rule> for each of ncu_rules
};

struct StallRule {
  std::string reason;
  BottleneckClass cls = BottleneckClass::Latency;
  std::string what;
  std::vector<Advice> advice;
  std::vector<std::string> relieves;  // units a fix of the stall takes work off
  std::string source_metric;
  SymbolId stall = 0, share = 0;  // stall_<reason>, stall_share_<reason>
  std::string ncu_rule;           // CPIStall<Reason>, as newer ncu names it
  bool no_gain = false;           // a sign of plenty of parallelism, not a cost (not_selected)
  SymbolId ncu_warn = 0;          // ncu_warn_CPIStall<Reason>
};

// The physics every estimate obeys (findings.json "estimates").
struct Estimates {
  double launch_floor_ns = 1000;  // no kernel runs shorter: no estimate goes below it
  std::string launch_floor_doc;
  // Severity follows the gain and the kernel's share of the report's GPU time.
  double high_min_speedup = 1.1, high_min_share_pct = 5;
  double medium_min_speedup = 1.02, medium_min_share_pct = 1;
  double stall_min_samples = 100;  // PC samples a stall share needs
  std::string stall_min_samples_doc;
  // A finding whose estimate is at most this gains nothing worth a reader's
  // time: it is ranked last and left off the default page (listed = false).
  double listed_min_speedup = 1.01;
};

struct Classify {
  double launch_max_duration_ns = 10000;
  double launch_max_sol = 30;
  double launch_short_duration_ns = 5000;  // shorter than this and nothing busy: launch-bound
  double busy_sol = 60;
  double small_grid_busy_sol = 70;
  // Between busy_sol and saturated_sol a unit binds only when enough warps are
  // there to keep it busy; with few (achieved occupancy below
  // few_warps_occupancy_pct, and fewer eligible warps per cycle than
  // few_warps_eligible or issue slots busy less than few_warps_issue_pct) the
  // kernel waits on latency.
  double saturated_sol = 70;
  double few_warps_occupancy_pct = 25, few_warps_eligible = 1, few_warps_issue_pct = 50;
  std::map<BottleneckClass, std::vector<std::string>> fallback;
};

// ncu_warn_<Rule> and ncu_speedup_<Rule> for one ncu rule id, where rule data uses them.
struct NcuSymbols {
  std::optional<SymbolId> warn, speedup;
};

struct RuleSet {
  SymbolTable symbols;  // every name below is bound to it
  std::vector<Rule> rules;
  std::vector<StallRule> stalls;
  double stall_min_share = 25;
  Expr stall_speedup;
  std::string stall_speedup_doc;
  SymbolId ncu_warn_cpi_stall = 0;  // ncu_warn_CPIStall (2022-era ncu)
  Classify classify;
  Estimates estimates;
  // has_<feature> symbols the rule data uses, with the feature key
  // (data/arch/features.json), set per kernel from its chip.
  std::vector<std::pair<std::string, SymbolId>> feature_symbols;
  const Rule* find(std::string_view id) const;
  // By ncu rule id; absent when no rule data reads that ncu rule.
  const NcuSymbols* ncu(std::string_view rule_id) const;

 private:
  friend RuleSet rules_from(DataValue findings, DataValue stalls);  // rules.cc
  void index_ncu_symbols();
  std::unordered_map<std::string, NcuSymbols, StringHash, std::equal_to<>> ncu_;
};

// Parses the embedded rule files once (a broken file is a build-time bug that
// the rules unit test catches; at run time it is reported as an Error).
Result<const RuleSet*> rule_set();
Result<RuleSet> parse_rules(std::string_view findings_json, std::string_view stalls_json);
BottleneckClass class_from_name(const std::string& s);

}  // namespace keet::analysis
