// Facts: the quantity catalogue, metric spellings, derived values and their evidence.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/derived.h"

namespace keet::analysis {
namespace {

model::Kernel kernel_with(const std::vector<std::pair<std::string, double>>& metrics) {
  model::Kernel k;
  for (const auto& [name, v] : metrics) k.metrics.push_back({name, model::Value::of_double(v), {}, ""});
  return k;
}

const model::Report kReport;

TEST(AnalysisFacts, CatalogueNamesAreUniqueAndFindTheirIds) {
  std::set<std::string> seen;
  for (QuantityId q = 0; q < quantity_count(); ++q) {
    EXPECT_TRUE(seen.insert(quantity_name(q)).second) << quantity_name(q);
    EXPECT_EQ(quantity_id(quantity_name(q)), q);
  }
  EXPECT_FALSE(quantity_id("no_such_quantity"));
  for (const auto& r : stall_reasons()) {
    EXPECT_TRUE(quantity_id("stall_" + r)) << r;
    EXPECT_TRUE(quantity_id("stall_share_" + r)) << r;
  }
}

TEST(AnalysisFacts, OlderSpellingAndNonFiniteValues) {
  auto k = kernel_with({{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                        {"smsp__issue_active.avg.pct_of_peak_sustained_active", std::nan("")},
                        {"sm__inst_issued.avg.pct_of_peak_sustained_active", 25}});
  Facts f(kReport, k);
  EXPECT_EQ(f.get("dram_pct"), 40);
  auto ev = f.evidence_for("dram_pct");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].metric, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(ev[0].unit, "%");
  EXPECT_TRUE(ev[0].formula.empty());
  EXPECT_EQ(f.get("issue_active_pct"), 25);  // a NaN under the newer name falls through to the older one
  EXPECT_EQ(f.get(*quantity_id("issue_active")), 0.25);
}

TEST(AnalysisFacts, MissingListsMetricsAndDerivedValuesButNotStalls) {
  auto k = kernel_with({{"gpu__time_duration.sum", 5000}});
  Facts f(kReport, k);
  std::set<std::string> missing;
  for (QuantityId q : f.missing()) missing.insert(quantity_name(q));
  EXPECT_TRUE(missing.count("compute_sol"));
  EXPECT_TRUE(missing.count("global_excess_pct"));
  EXPECT_FALSE(missing.count("duration_ns"));
  EXPECT_FALSE(missing.count("stall_barrier"));
  EXPECT_FALSE(missing.count("stall_total"));
  EXPECT_FALSE(f.get("stall_total"));
}

TEST(AnalysisFacts, DerivedEvidenceListsEachMetricOnce) {
  auto k = kernel_with({{"derived__memory_l2_theoretical_sectors_global_excessive", 3000},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4000},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 2000}});
  Facts f(kReport, k);
  EXPECT_DOUBLE_EQ(*f.get("global_excess_pct"), 50);
  auto ev = f.evidence_for("global_excess_pct");
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].metric, "derived:global_excess_pct");
  EXPECT_EQ(ev[0].formula, "global_excess_sectors / global_sectors * 100");
  EXPECT_EQ(ev[1].metric, "derived__memory_l2_theoretical_sectors_global_excessive");
  EXPECT_EQ(ev[3].metric, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum");
  // global_ideal_bytes uses the same three metrics in another order.
  EXPECT_EQ(f.evidence_for("global_ideal_bytes").size(), 4u);
  EXPECT_TRUE(f.evidence_for("no_such_quantity").empty());
  EXPECT_TRUE(f.evidence_for("compute_sol").empty());
}

TEST(AnalysisFacts, RatiosOverAHandfulOfEventsAreNotEvidence) {
  auto k = kernel_with({{"derived__memory_l2_theoretical_sectors_global_excessive", 3},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 2},
                        {"smsp__sass_average_branch_targets_threads_uniform.pct", 0},
                        {"smsp__branch_targets_threads_divergent.sum", 0}});
  Facts f(kReport, k);
  EXPECT_FALSE(f.get("global_excess_pct"));   // 6 sectors
  EXPECT_FALSE(f.get("branch_uniform_pct"));  // no divergent branch, no branch count
  std::set<std::string> dropped;
  for (QuantityId q : f.below_floor()) dropped.insert(quantity_name(q));
  EXPECT_TRUE(dropped.count("global_excess_pct"));
  EXPECT_TRUE(dropped.count("branch_uniform_pct"));
}

TEST(AnalysisFacts, ImplausibleValuesAreIgnoredAndListed) {
  auto k = kernel_with({{"gpu__time_duration.sum", std::nan("")},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 250},
                        {"launch__grid_size", -4},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40}});
  Facts f(kReport, k);
  EXPECT_FALSE(f.get("duration_ns"));
  EXPECT_FALSE(f.get("compute_sol"));
  EXPECT_FALSE(f.get("grid_size"));
  EXPECT_EQ(f.get("memory_sol"), 40);
  std::map<std::string, std::string> why;
  for (const auto& bad : f.invalid()) why[bad.metric] = bad.why;
  EXPECT_EQ(why["gpu__time_duration.sum"], "not a number");
  EXPECT_EQ(why["sm__throughput.avg.pct_of_peak_sustained_elapsed"], "a percentage far above 100");
  EXPECT_EQ(why["launch__grid_size"], "negative");
}

TEST(AnalysisFacts, RatiosAreDerivedFromRawCountersWhenNotCollected) {
  auto k = kernel_with({{"smsp__inst_issued.sum", 250},
                        {"smsp__cycles_active.sum", 1000},
                        {"smsp__thread_inst_executed.sum", 6400},
                        {"smsp__inst_executed.sum", 400}});
  Facts f(kReport, k);
  EXPECT_DOUBLE_EQ(*f.get("issue_active_pct"), 25);
  EXPECT_DOUBLE_EQ(*f.get("threads_per_inst"), 16);
  auto ev = f.evidence_for("issue_active_pct");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].formula, "smsp__inst_issued.sum / smsp__cycles_active.sum * 100");
  EXPECT_EQ(ev[1].metric, "smsp__inst_issued.sum");
}

std::vector<std::pair<std::string, double>> ratio_stalls(double barrier, double wait) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& r : {"long_scoreboard", "short_scoreboard", "membar", "mio_throttle", "lg_throttle",
                        "math_pipe_throttle", "branch_resolving", "no_instruction", "not_selected", "tex_throttle"})
    out.emplace_back(std::string("smsp__average_warps_issue_stalled_") + r + "_per_issue_active.ratio", 0);
  out.emplace_back("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", barrier);
  out.emplace_back("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", wait);
  out.emplace_back("smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", 1);  // not a stall
  return out;
}

TEST(AnalysisFacts, StallSharesNeedEveryReasonOfTheForm) {
  auto k = kernel_with(ratio_stalls(3, 1));
  Facts f(kReport, k);
  EXPECT_TRUE(f.stall_shares_complete());
  EXPECT_EQ(f.stall_unit(), "cycles between issued instructions");
  EXPECT_EQ(f.get("stall_total"), 4);  // "selected" is not a stall
  EXPECT_EQ(f.get("stall_share_barrier"), 75);
  EXPECT_EQ(f.get("stall_share_wait"), 25);
  EXPECT_EQ(f.get("stall_share_membar"), 0);
  auto ev = f.evidence_for("stall_share_wait");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].metric, "derived:stall_share_wait");
  EXPECT_EQ(ev[1].metric, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio");
  EXPECT_EQ(ev[1].unit, "cycles between issued instructions");
  ASSERT_EQ(f.evidence_for("stall_total").size(), 1u);  // a sum with no single metric behind it
}

TEST(AnalysisFacts, APartialSetOfStallsGivesValuesButNoShares) {
  // Two stall columns (a CSV with a custom metric list): 92.6% of "stalls"
  // would be a share of two reasons, not of the warps' time.
  auto k = kernel_with({{"smsp__warp_issue_stalled_barrier_per_warp_active.pct", 25},
                        {"smsp__warp_issue_stalled_membar_per_warp_active.pct", 2}});
  Facts f(kReport, k);
  EXPECT_FALSE(f.stall_shares_complete());
  EXPECT_FALSE(f.get("stall_total"));
  EXPECT_FALSE(f.get("stall_share_barrier"));
  EXPECT_EQ(f.get("stall_barrier"), 25);
  EXPECT_EQ(f.stall_unit(), "% of active warp cycles");
  EXPECT_EQ(f.stall_reasons_present(), (std::vector<std::string>{"barrier", "membar"}));
}

TEST(AnalysisFacts, StallValuesComeFromOneMetricForm) {
  auto stalls = ratio_stalls(3, 1);
  stalls.emplace_back("smsp__warp_issue_stalled_barrier_per_warp_active.pct", 50);  // another form, other unit
  Facts f(kReport, kernel_with(stalls));
  EXPECT_EQ(f.get("stall_barrier"), 3);
  EXPECT_EQ(f.get("stall_share_barrier"), 75);
}

TEST(AnalysisFacts, AllEvidenceIsOrderedByQuantityName) {
  auto k = kernel_with({{"launch__sm_count", 80}, {"launch__grid_size", 40}, {"gpu__time_duration.sum", 1e6}});
  Facts f(kReport, k);
  auto all = f.all_evidence();
  std::vector<std::string> metrics;
  for (const auto& e : all) metrics.push_back(e.metric);
  // blocks_per_sm_grid, duration_ns, grid_size, idle_sm_count, sm_count, sm_fill_pct, small_grid_speedup
  EXPECT_EQ(metrics, (std::vector<std::string>{"derived:blocks_per_sm_grid", "gpu__time_duration.sum",
                                               "launch__grid_size", "derived:idle_sm_count", "launch__sm_count",
                                               "derived:sm_fill_pct", "derived:small_grid_speedup"}));
  EXPECT_EQ(all[3].value, 40);
  EXPECT_EQ(all[5].value, 50);
  EXPECT_EQ(all[5].unit, "%");
  EXPECT_EQ(all[5].formula, "min(grid_size, sm_count) / sm_count * 100");
  // 1 ms of work on 40 of 80 SMs: 1 us launch floor + 999 us x 40 / 80.
  EXPECT_NEAR(all[6].value, 1e6 / (1000 + 999000.0 / 2), 1e-9);
}

}  // namespace
}  // namespace keet::analysis
