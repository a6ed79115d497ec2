// The metric vocabulary: nvprof aliases, renames between ncu versions, stall
// families, formulas; on kernels built in memory and on every fixture report.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/vocabulary.h"
#include "readers/reader.h"
#include "support/testing.h"

namespace keet {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::ranges::find(v, s) != v.end(); }

model::Kernel kernel_with(const std::vector<std::pair<std::string, double>>& metrics) {
  model::Kernel k;
  for (const auto& [n, v] : metrics) k.metrics.push_back({n, model::Value::of_double(v), {}, ""});
  return k;
}

TEST(ArchVocabulary, EveryAliasLeadsSomewhere) {
  ASSERT_GE(analysis::metric_aliases().size(), 60u);
  for (const auto& a : analysis::metric_aliases()) {
    SCOPED_TRACE(a.alias);
    EXPECT_TRUE(!a.metrics.empty() || !a.formulas.empty());
    EXPECT_EQ(analysis::find_alias(a.alias), &a);
  }
  EXPECT_FALSE(analysis::vocabulary_sources().empty());
}

TEST(ArchVocabulary, ResolvesNvprofNamesFromTheTransitionGuide) {
  EXPECT_EQ(analysis::resolve("achieved_occupancy")[0], "sm__warps_active.avg.pct_of_peak_sustained_active");
  EXPECT_EQ(analysis::resolve("ACHIEVED_OCCUPANCY")[0], "sm__warps_active.avg.pct_of_peak_sustained_active");
  EXPECT_EQ(analysis::resolve("gld_efficiency")[0], "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct");
  EXPECT_EQ(analysis::resolve("l2_tex_hit_rate")[0], "lts__t_sector_hit_rate.pct");
  EXPECT_EQ(analysis::resolve("dram_read_throughput")[0], "dram__bytes_read.sum.per_second");
  EXPECT_EQ(analysis::resolve("warp_execution_efficiency")[0], "smsp__thread_inst_executed_per_inst_executed.ratio");
  EXPECT_EQ(analysis::resolve("inst_executed")[0], "smsp__inst_executed.sum");
  auto stall = analysis::resolve("stall_memory_dependency");
  EXPECT_TRUE(contains(stall, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"));
  EXPECT_TRUE(contains(stall, "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"));
  EXPECT_TRUE(contains(stall, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"));
  // no_instruction is spelled no_instructions in the pcsamp family.
  EXPECT_TRUE(contains(analysis::resolve("stall_inst_fetch"), "smsp__pcsamp_warps_issue_stalled_no_instructions"));
  auto flops = analysis::resolve("flop_count_sp");
  EXPECT_TRUE(contains(flops, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"));
}

TEST(ArchVocabulary, RenamesAndUnknownNames) {
  auto old_duration = analysis::equivalents("gpu__time_duration");
  ASSERT_GE(old_duration.size(), 2u);
  EXPECT_EQ(old_duration[0], "gpu__time_duration");      // the name asked for first
  EXPECT_EQ(old_duration[1], "gpu__time_duration.sum");  // then the canonical one
  EXPECT_EQ(analysis::resolve("breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed")[0],
            "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(analysis::resolve("no_such_metric"), std::vector<std::string>{"no_such_metric"});
  EXPECT_EQ(analysis::find_alias("no_such_metric"), nullptr);
}

TEST(ArchVocabulary, AliasesOfAMetric) {
  EXPECT_TRUE(
      contains(analysis::aliases_of("sm__warps_active.avg.pct_of_peak_sustained_active"), "achieved_occupancy"));
  EXPECT_TRUE(contains(analysis::aliases_of("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"),
                       "stall_exec_dependency"));
  EXPECT_TRUE(contains(analysis::aliases_of("breakdown:lts__t_sector_hit_rate.pct"), "l2_tex_hit_rate"));
  EXPECT_TRUE(analysis::aliases_of("launch__grid_size").empty());
}

TEST(ArchVocabulary, FindMetricTriesRenamesInOrder) {
  // A 2019-era report: neither canonical name exists.
  auto old = kernel_with({{"gpu__time_duration", 1500}, {"sm__active_warps_avg_per_active_cycle_pct", 42}});
  const auto* d = analysis::find_metric(old, "gpu__time_duration.sum");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name, "gpu__time_duration");
  const auto* occ = analysis::find_metric(old, "achieved_occupancy");
  ASSERT_NE(occ, nullptr);
  EXPECT_EQ(occ->name, "sm__active_warps_avg_per_active_cycle_pct");
  // The canonical name wins when both exist.
  auto both = kernel_with({{"gpu__time_duration", 1}, {"gpu__time_duration.sum", 2}});
  EXPECT_EQ(analysis::find_metric(both, "gpu__time_duration.sum")->value.number, 2);
  EXPECT_EQ(analysis::find_metric(both, "duration")->value.number, 2);
  EXPECT_EQ(analysis::find_metric(old, "l2_tex_hit_rate"), nullptr);
}

TEST(ArchVocabulary, FormulasSumTermsAndKeepOneUnit) {
  auto k = kernel_with({{"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10},
                        {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 20},
                        {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 30},
                        {"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", 1.5},
                        {"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", 2.0},
                        {"smsp__pcsamp_warps_issue_stalled_barrier", 7}});
  auto flops = analysis::find_value(k, "flop_count_sp");
  ASSERT_TRUE(flops);
  EXPECT_DOUBLE_EQ(flops->value, 10 + 20 + 2 * 30);
  EXPECT_EQ(flops->metrics.size(), 4u);
  EXPECT_FALSE(flops->formula.empty());

  auto exec = analysis::find_value(k, "stall_exec_dependency");
  ASSERT_TRUE(exec);
  EXPECT_DOUBLE_EQ(exec->value, 3.5);
  // membar is missing in the pcsamp family and barrier in the others: no
  // mixing of sample counts with ratios.
  EXPECT_FALSE(analysis::find_value(k, "stall_sync"));

  auto single = analysis::find_value(k, "smsp__pcsamp_warps_issue_stalled_barrier");
  ASSERT_TRUE(single);
  EXPECT_DOUBLE_EQ(single->value, 7);
  EXPECT_TRUE(single->formula.empty());
}

TEST(ArchVocabulary, RatioFormulaSkipsZeroDenominator) {
  auto k = kernel_with(
      {{"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 64}, {"smsp__inst_executed_op_shared_ld.sum", 16}});
  auto v = analysis::find_value(k, "shared_load_transactions_per_request");
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->value, 4);
  auto zero = kernel_with(
      {{"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 64}, {"smsp__inst_executed_op_shared_ld.sum", 0}});
  EXPECT_FALSE(analysis::find_value(zero, "shared_load_transactions_per_request"));
}

// Every fixture kernel, from 2019 to 2025 writers, has a duration and (where
// ncu collected occupancy) an achieved occupancy under the same vocabulary name.
TEST(ArchVocabularyFixtures, DurationAndOccupancyAcrossVersions) {
  KEET_REQUIRE_SHARED();
  readers::ReadOptions opt;
  opt.instances = opt.rules = opt.modules = false;
  int kernels = 0;
  for (const auto& path : testing::fixture_reports()) {
    auto r = readers::load_file(path, opt);
    ASSERT_TRUE(r) << r.error().message;
    for (const auto& k : r->kernels) {
      ++kernels;
      bool has_duration = k.find("gpu__time_duration") || k.find("gpu__time_duration.sum");
      EXPECT_EQ(has_duration, analysis::find_value(k, "duration").has_value()) << path << " #" << k.index;
      bool has_any = k.find("sm__warps_active.avg.pct_of_peak_sustained_active") ||
                     k.find("sm__active_warps_avg_per_active_cycle_pct");
      EXPECT_EQ(has_any, analysis::find_metric(k, "achieved_occupancy") != nullptr) << path;
    }
  }
  EXPECT_GT(kernels, 700);
}

}  // namespace
}  // namespace keet
