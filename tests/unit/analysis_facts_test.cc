// Facts: the quantity catalogue, metric spellings, derived values and their evidence.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
  auto k = kernel_with({{"derived__memory_l2_theoretical_sectors_global_excessive", 300},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 400},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 200}});
  Facts f(kReport, k);
  EXPECT_DOUBLE_EQ(*f.get("global_excess_pct"), 50);
  auto ev = f.evidence_for("global_excess_pct");
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].metric, "derived:global_excess_pct");
  EXPECT_EQ(ev[0].formula, "global_excess_sectors / (global_ld_sectors + global_st_sectors) * 100");
  EXPECT_EQ(ev[1].metric, "derived__memory_l2_theoretical_sectors_global_excessive");
  EXPECT_EQ(ev[3].metric, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum");
  // global_ideal_bytes uses the same three metrics in another order.
  EXPECT_EQ(f.evidence_for("global_ideal_bytes").size(), 4u);
  EXPECT_TRUE(f.evidence_for("no_such_quantity").empty());
  EXPECT_TRUE(f.evidence_for("compute_sol").empty());
}

TEST(AnalysisFacts, StallSharesComeFromTheReasonsPresent) {
  auto k = kernel_with({{"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 3},
                        {"smsp__warp_issue_stalled_wait_per_warp_active.pct", 1}});  // the older spelling
  Facts f(kReport, k);
  EXPECT_EQ(f.get("stall_total"), 4);
  EXPECT_EQ(f.get("stall_share_barrier"), 75);
  EXPECT_EQ(f.get("stall_share_wait"), 25);
  EXPECT_FALSE(f.get("stall_share_membar"));
  auto ev = f.evidence_for("stall_share_wait");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].metric, "derived:stall_share_wait");
  EXPECT_EQ(ev[1].metric, "smsp__warp_issue_stalled_wait_per_warp_active.pct");
  ASSERT_EQ(f.evidence_for("stall_total").size(), 1u);  // a sum with no single metric behind it
}

TEST(AnalysisFacts, AllEvidenceIsOrderedByQuantityName) {
  auto k = kernel_with({{"launch__sm_count", 80}, {"launch__grid_size", 40}, {"gpu__time_duration.sum", 1e6}});
  Facts f(kReport, k);
  auto all = f.all_evidence();
  std::vector<std::string> metrics;
  for (const auto& e : all) metrics.push_back(e.metric);
  // duration_ns, grid_size, sm_count, sm_fill_pct
  EXPECT_EQ(metrics, (std::vector<std::string>{"gpu__time_duration.sum", "launch__grid_size", "launch__sm_count",
                                               "derived:sm_fill_pct"}));
  EXPECT_EQ(all[3].value, 50);
  EXPECT_EQ(all[3].unit, "%");
  EXPECT_EQ(all[3].formula, "min(grid_size / sm_count, 1) * 100");
}

}  // namespace
}  // namespace keet::analysis
