// The rule data: schema, expressions, coverage of the contract's finding ids.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "analysis/derived.h"
#include "analysis/expr.h"
#include "analysis/rules.h"
#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

const RuleSet& rules() {
  auto set = rule_set();
  EXPECT_TRUE(set) << (set ? "" : set.error().message);
  return **set;
}

// Every id the analysis contract says must exist.
const std::vector<std::string> kContractIds = {"memory.uncoalesced_global",
                                               "memory.shared_bank_conflicts",
                                               "memory.local_spills",
                                               "memory.dram_bandwidth",
                                               "memory.l1_l2_bandwidth",
                                               "memory.poor_cache_reuse",
                                               "memory.atomics",
                                               "memory.remote_aperture",
                                               "compute.pipe_saturated",
                                               "compute.fp64",
                                               "compute.unfused_fp",
                                               "compute.tensor_cores_unused",
                                               "latency.low_eligible_warps",
                                               "occupancy.registers",
                                               "occupancy.shared_memory",
                                               "occupancy.block_size",
                                               "occupancy.achieved_gap",
                                               "launch.small_grid",
                                               "launch.tail_effect",
                                               "launch.block_size_granularity",
                                               "launch.tiny_kernel",
                                               "divergence.branch",
                                               "divergence.predication"};

const std::vector<std::string> kContractStalls = {"long_scoreboard",
                                                  "short_scoreboard",
                                                  "barrier",
                                                  "membar",
                                                  "mio_throttle",
                                                  "lg_throttle",
                                                  "math_pipe_throttle",
                                                  "wait",
                                                  "branch_resolving",
                                                  "no_instruction",
                                                  "not_selected",
                                                  "dispatch_stall",
                                                  "tex_throttle",
                                                  "drain",
                                                  "sleeping"};

TEST(AnalysisRules, EveryContractFindingHasARule) {
  for (const auto& id : kContractIds) EXPECT_NE(rules().find(id), nullptr) << id;
  std::set<std::string> stalls;
  for (const auto& s : rules().stalls) stalls.insert(s.reason);
  for (const auto& r : kContractStalls) EXPECT_TRUE(stalls.count(r)) << r;
}

TEST(AnalysisRules, ExpressionsParseAndNameKnownQuantities) {
  // Names an expression may use: derived quantities plus engine context.
  std::set<std::string> known = {
      "bound_memory",   "bound_compute",       "bound_latency",      "bound_launch",   "cc",          "pipe_max_pct",
      "issue_idle_pct", "occupancy_limit_min", "occupancy_loss_pct", "fp_unfused_pct", "sm_idle_pct", "duration_us",
      "tiny_score",     "divergence_pct",      "issue_active",       "share"};
  for (const auto& r : rules().rules) {
    // The rule set parsed every expression when it loaded; check them as text too.
    std::vector<const Expr*> exprs = {&r.when, &r.severity_by};
    for (const auto& e : r.speedup) exprs.push_back(&e);
    for (const auto* e : exprs) {
      auto ids = identifiers(e->text());
      ASSERT_TRUE(ids) << r.id << ": " << ids.error().message;
      EXPECT_EQ(*ids, e->identifiers()) << r.id;
      for (const auto& id : *ids)
        if (!id.starts_with("ncu_")) known.insert(id);  // collected for the next check
    }
    EXPECT_FALSE(r.advice.empty()) << r.id;
    EXPECT_FALSE(r.references.empty()) << r.id;
    for (const auto& v : r.explanations) {
      EXPECT_NE(v.text.text().find('{'), std::string::npos) << r.id << " explanation states no number";
      if (v.when) EXPECT_TRUE(identifiers(v.when->text())) << r.id;
    }
    for (const auto& v : r.titles)
      if (v.when) EXPECT_TRUE(identifiers(v.when->text())) << r.id;
  }
  EXPECT_TRUE(identifiers(rules().stall_speedup.text()));
}

TEST(AnalysisRules, NcuRuleMapNamesOnlyRealFindings) {
  auto text = embedded_file("rules/ncu_rules.json");
  ASSERT_TRUE(text);
  auto doc = nlohmann::json::parse(*text);
  const auto& map = doc.at("rules");
  std::set<std::string> stall_ids;
  for (const auto& st : rules().stalls) stall_ids.insert("latency.stall." + st.reason);
  for (const auto& [rule, entry] : map.items()) {
    auto findings = entry.at("findings").get<std::vector<std::string>>();
    EXPECT_TRUE(!findings.empty() || entry.contains("reason")) << rule << " has neither findings nor a reason";
    for (const auto& f : findings)
      EXPECT_TRUE(f == "latency.stall.*" || stall_ids.count(f) || rules().find(f) != nullptr) << rule << " -> " << f;
  }
  // The 2022.3 rule set (oracle sections/*.py) is mapped completely.
  for (std::string r : {"CPIStall", "FPInstructions", "HighPipeUtilization", "IssueSlotUtilization",
                        "LaunchConfiguration", "MemoryApertureUsage", "MemoryCacheAccessPattern", "MemoryL2Compression",
                        "Occupancy", "PCSamplingData", "SOLBottleneck", "SOLFPRoofline", "SlowPipeLimiter",
                        "ThreadDivergence", "UncoalescedGlobalAccess", "UncoalescedSharedAccess"})
    EXPECT_TRUE(map.contains(r)) << r;
}

TEST(AnalysisRules, BrokenRuleDataIsAnErrorNotACrash) {
  EXPECT_FALSE(parse_rules("{", "{}"));
  EXPECT_FALSE(parse_rules(R"({"rules": [{"id": "x"}]})", "{}"));
}

}  // namespace
}  // namespace keet::analysis

// Findings point users at knowledge-base entries; every id must exist there.
#include "kb/knowledge_base.h"

namespace keet::analysis {
namespace {

TEST(AnalysisRules, EveryReferenceResolvesInTheKnowledgeBase) {
  auto kb = kb::builtin();
  ASSERT_TRUE(kb) << kb.error().message;
  for (const auto& r : rules().rules)
    for (const auto& ref : r.references) EXPECT_TRUE((*kb)->lookup(ref)) << r.id << " -> " << ref;
  for (const auto& st : rules().stalls) {
    EXPECT_TRUE((*kb)->lookup("finding:latency.stall." + st.reason)) << st.reason;
    EXPECT_TRUE((*kb)->lookup("stall:" + st.reason)) << st.reason;
  }
}

}  // namespace
}  // namespace keet::analysis
