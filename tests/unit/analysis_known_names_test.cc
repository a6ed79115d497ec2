// The metric vocabulary of the quantity catalogue: nvprof-era and colloquial
// names (known_as), nvprof's stall names as sums of ncu reasons, renames as
// spellings, lookup-only quantities; on kernels built in memory and on every
// fixture report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/derived.h"
#include "analysis/known_names.h"
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

analysis::QuantityId id(std::string_view name) {
  auto q = analysis::quantity_id(name);
  EXPECT_TRUE(q) << name;
  return q.value_or(0);
}

TEST(KnownNames, EveryNameLeadsSomewhere) {
  ASSERT_GE(analysis::known_names().size(), 100u);
  for (const auto& k : analysis::known_names()) {
    SCOPED_TRACE(k.name);
    EXPECT_FALSE(k.metrics.empty());
    EXPECT_FALSE(k.quantities.empty());
    for (const auto& q : k.quantities) EXPECT_TRUE(analysis::quantity_id(q)) << q;
    EXPECT_EQ(analysis::find_known_name(k.name), &k);
  }
  EXPECT_FALSE(analysis::known_name_sources().empty());
  EXPECT_EQ(analysis::find_known_name("no_such_metric"), nullptr);
}

TEST(KnownNames, NvprofNamesFromTheTransitionGuide) {
  const auto* occ = analysis::find_known_name("ACHIEVED_OCCUPANCY");
  ASSERT_NE(occ, nullptr);
  EXPECT_EQ(occ->metrics[0], "sm__warps_active.avg.pct_of_peak_sustained_active");
  EXPECT_EQ(occ->quantities, std::vector<std::string>{"achieved_occupancy"});
  const auto* gld = analysis::find_known_name("gld_efficiency");
  ASSERT_NE(gld, nullptr);
  EXPECT_EQ(gld->quantities, std::vector<std::string>{"ld_sector_use_pct"});
  EXPECT_EQ(gld->metrics[0], "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct");
  EXPECT_EQ(analysis::find_known_name("l2_tex_hit_rate")->quantities, std::vector<std::string>{"l2_hit"});
  EXPECT_EQ(analysis::find_known_name("dram_read_throughput")->metrics[0], "dram__bytes_read.sum.per_second");
  EXPECT_EQ(analysis::find_known_name("inst_executed")->metrics[0], "smsp__inst_executed.sum");
  const auto* flops = analysis::find_known_name("flop_count_sp");
  ASSERT_NE(flops, nullptr);
  EXPECT_TRUE(contains(flops->metrics, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"));
  EXPECT_NE(flops->formula.find("2 * smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"), std::string::npos);
}

// Transition Guide: stall_exec_dependency = short_scoreboard + wait, and so on.
TEST(KnownNames, NvprofStallNamesAreSumsOfReasons) {
  const auto* exec = analysis::find_known_name("stall_exec_dependency");
  ASSERT_NE(exec, nullptr);
  EXPECT_EQ(exec->quantities, (std::vector<std::string>{"stall_short_scoreboard", "stall_wait"}));
  EXPECT_EQ(exec->formula, "stall_short_scoreboard + stall_wait");
  EXPECT_TRUE(contains(exec->metrics, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"));
  EXPECT_EQ(analysis::find_known_name("stall_memory_throttle")->quantities,
            (std::vector<std::string>{"stall_drain", "stall_lg_throttle"}));
  EXPECT_EQ(analysis::find_known_name("stall_other")->quantities,
            (std::vector<std::string>{"stall_dispatch_stall", "stall_misc"}));
  const auto* mem = analysis::find_known_name("stall_memory_dependency");
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(mem->formula.empty());
  EXPECT_TRUE(contains(mem->metrics, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"));
  EXPECT_TRUE(contains(mem->metrics, "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"));
  EXPECT_TRUE(contains(mem->metrics, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"));
  EXPECT_FALSE(contains(mem->metrics, "stall_memory_dependency"));  // the nvprof spelling is the name itself
  // no_instruction is spelled no_instructions in the pcsamp family.
  EXPECT_TRUE(contains(analysis::find_known_name("stall_inst_fetch")->metrics,
                       "smsp__pcsamp_warps_issue_stalled_no_instructions"));
}

TEST(KnownNames, NamesOfAMetric) {
  EXPECT_TRUE(
      contains(analysis::known_names_of("sm__warps_active.avg.pct_of_peak_sustained_active"), "achieved_occupancy"));
  // The 2019-era spelling of achieved occupancy is known by the same name.
  EXPECT_TRUE(contains(analysis::known_names_of("sm__active_warps_avg_per_active_cycle_pct"), "achieved_occupancy"));
  EXPECT_TRUE(contains(analysis::known_names_of("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"),
                       "stall_exec_dependency"));
  EXPECT_TRUE(contains(analysis::known_names_of("breakdown:lts__t_sector_hit_rate.pct"), "l2_tex_hit_rate"));
  EXPECT_EQ(analysis::known_names_of("lts__t_sector_hit_rate.pct"),
            (std::vector<std::string>{"l2_tex_hit_rate", "l2_hit_rate"}));
  EXPECT_TRUE(analysis::known_names_of("launch__grid_size").empty());
  // A formula's metrics link; the inputs of quantities a formula names do not
  // (gld_transactions_per_request falls back to global_ld_sectors / global_ld_requests).
  EXPECT_EQ(analysis::known_names_of("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
            (std::vector<std::string>{"gld_transactions", "global_hit_rate"}));
  // A name is not linked to itself (nvprof reports spell the metric so).
  EXPECT_TRUE(analysis::known_names_of("gld_efficiency").empty());
}

TEST(KnownNames, RenamesAreSpellingsOfOneQuantity) {
  auto duration = analysis::quantity_spellings(id("duration_ns"));
  EXPECT_EQ(duration[0], "gpu__time_duration.sum");
  EXPECT_TRUE(contains(duration, "gpu__time_duration"));
  EXPECT_TRUE(contains(analysis::quantity_spellings(id("sm_cycles_elapsed")), "sm__elapsed_cycles_avg"));
  EXPECT_TRUE(contains(analysis::quantity_spellings(id("compute_sol")), "sm__sol_pct"));
  // A 2019-era report: neither canonical name exists.
  auto old = kernel_with({{"gpu__time_duration", 1500}, {"sm__active_warps_avg_per_active_cycle_pct", 42}});
  EXPECT_EQ(analysis::kernel_duration_ns(old), 1500);
  EXPECT_EQ(analysis::metric_quantity(old, id("achieved_occupancy")), 42);
  // The canonical name wins when both exist.
  auto both = kernel_with({{"gpu__time_duration", 1}, {"gpu__time_duration.sum", 2}});
  EXPECT_EQ(analysis::kernel_duration_ns(both), 2);
  // A spelling whose unit differs carries its scale (bytes per sector from a percentage).
  auto pct = kernel_with({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 50}});
  EXPECT_DOUBLE_EQ(*analysis::metric_quantity(pct, id("ld_bytes_per_sector")), 16);
}

// A lookup quantity is read on demand and never becomes a fact of a kernel.
TEST(KnownNames, LookupQuantitiesAreNotKernelFacts) {
  auto k = kernel_with({{"dram__sectors_read.sum", 64}, {"launch__shared_mem_config_size", 65536}});
  EXPECT_EQ(analysis::metric_quantity(k, id("dram_read_transactions")), 64);
  EXPECT_EQ(analysis::metric_quantity(k, id("smem_config")), 65536);
  model::Report report;
  analysis::Facts f(report, k);
  EXPECT_FALSE(f.get("dram_read_transactions"));
  for (auto q : f.missing()) EXPECT_NE(analysis::quantity_name(q), "dram_read_transactions");
  for (const auto& e : f.all_evidence()) EXPECT_NE(e.metric, "dram__sectors_read.sum");
}

// Every fixture kernel, from 2019 to 2025 writers, has a duration and (where
// ncu collected occupancy) an achieved occupancy under the same quantity.
TEST(KnownNamesFixtures, DurationAndOccupancyAcrossVersions) {
  KEET_REQUIRE_SHARED();
  readers::ReadOptions opt;
  opt.instances = opt.rules = opt.modules = false;
  int kernels = 0;
  for (const auto& path : testing::fixture_reports()) {
    auto r = readers::load_file(path, opt);
    ASSERT_TRUE(r) << r.error().message;
    for (const auto& k : r->kernels) {
      ++kernels;
      auto positive = [&](const char* name) {
        auto v = k.number(name);
        return v && *v > 0 && std::isfinite(*v);
      };
      if (positive("gpu__time_duration") || positive("gpu__time_duration.sum"))
        EXPECT_TRUE(analysis::kernel_duration_ns(k)) << path << " #" << k.index;
      if (positive("sm__warps_active.avg.pct_of_peak_sustained_active") ||
          positive("sm__active_warps_avg_per_active_cycle_pct"))
        EXPECT_TRUE(analysis::metric_quantity(k, id("achieved_occupancy"))) << path << " #" << k.index;
    }
  }
  EXPECT_GT(kernels, 700);
}

}  // namespace
}  // namespace keet
