// The expert engine on kernels built by the test writer: each scenario sets the
// metrics a real report would carry and checks class, findings and evidence.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/engine.h"
#include "readers/reader.h"
#include "support/report_writer.h"

namespace keet::analysis {
namespace {

using Metrics = std::vector<std::pair<std::string, double>>;

// A kernel on an "8.6" device with the given metrics on top of a neutral base.
model::Report report_with(const Metrics& extra, uint64_t grid = 4096, uint64_t block = 256) {
  Metrics base = {{"gpu__time_duration.sum", 300000},
                  {"device__attribute_compute_capability_major", 8},
                  {"device__attribute_compute_capability_minor", 6},
                  {"launch__sm_count", 26},
                  {"launch__grid_size", double(grid)},
                  {"launch__block_size", double(block)},
                  {"launch__waves_per_multiprocessor", 26.25},
                  {"smsp__issue_active.avg.pct_of_peak_sustained_active", 30},
                  {"smsp__warps_eligible.avg.per_cycle_active", 0.5}};
  for (const auto& [n, v] : extra) {
    auto it = std::find_if(base.begin(), base.end(), [&](auto& p) { return p.first == n; });
    if (it != base.end()) it->second = v;
    else base.emplace_back(n, v);
  }
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  auto k = w.kernel("scenario", grid, block, base);
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  auto src = io::memory_source("scenario.ncu-rep", w.bytes());
  auto r = readers::load(*src);
  EXPECT_TRUE(r);
  return std::move(*r);
}

KernelDiagnosis diagnose(const model::Report& r) { return analyze_kernel(r, r.kernels.at(0), {0}); }

const Finding* find(const KernelDiagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(AnalysisEngine, UncoalescedMemoryBoundKernel) {
  auto r = report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 36.7},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 72.6},
                        {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 72.6},
                        {"derived__memory_l2_theoretical_sectors_global_excessive", 3145728},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 2359296},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 2359296},
                        {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 98304},
                        {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 98304}});
  auto d = diagnose(r);
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  EXPECT_EQ(d.device.compute_capability, "8.6");
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "memory.uncoalesced_global");
  EXPECT_EQ(f.severity, Severity::High);
  // Evidence values equal the report's values; derived ones say how.
  auto ev = std::find_if(f.evidence.begin(), f.evidence.end(),
                         [](auto& e) { return e.metric == "derived__memory_l2_theoretical_sectors_global_excessive"; });
  ASSERT_NE(ev, f.evidence.end());
  EXPECT_EQ(ev->value, 3145728);
  EXPECT_NEAR(f.evidence.front().value, 66.67, 0.01);
  EXPECT_FALSE(f.evidence.front().formula.empty());
  // 1 / (1 - 0.6667 * 0.726)
  ASSERT_TRUE(f.estimated_speedup);
  EXPECT_NEAR(*f.estimated_speedup, 1.0 / (1 - 2.0 / 3 * 0.726), 0.01);
  EXPECT_NE(f.explanation.find("66.7%"), std::string::npos) << f.explanation;
  // Advice is gated by architecture: cp.async (8.0) yes, TMA (9.0) no on 8.6.
  bool cp_async = false, tma = false;
  for (const auto& a : f.advice) {
    cp_async |= a.find("cp.async") != std::string::npos && a.find("Tensor Memory") == std::string::npos;
    tma |= a.find("Tensor Memory Accelerator") != std::string::npos;
  }
  EXPECT_TRUE(cp_async);
  EXPECT_FALSE(tma);
}

TEST(AnalysisEngine, ComputeBoundWithFp64OnGeForce) {
  auto r = report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 85},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 10},
                        {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", 80},
                        {"derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2", 6656},
                        {"derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2", 104}});
  auto d = diagnose(r);
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Compute);
  const Finding* f = find(d, "compute.fp64");
  ASSERT_NE(f, nullptr);
  // 1 / (1 - 0.8 + 0.8 / 64) = 4.7x, but once the FP64 pipe (80%) is relieved
  // the issue slots (30%) bind: capped at 80 / 30, and the text says so.
  EXPECT_NEAR(*f->estimated_speedup, 80.0 / 30, 0.01);
  EXPECT_NE(f->explanation.find("capped at 2.67x"), std::string::npos) << f->explanation;
  EXPECT_EQ(d.limiter.binding()->id, "pipe_fp64");
  EXPECT_EQ(d.limiter.next()->id, "issue");
  EXPECT_NE(find(d, "compute.pipe_saturated"), nullptr);
}

TEST(AnalysisEngine, TinyKernelIsLaunchBound) {
  auto r = report_with({{"gpu__time_duration.sum", 3000},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 1},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 2},
                        {"launch__waves_per_multiprocessor", 0.01}},
                       1, 64);
  auto d = diagnose(r);
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Launch);
  EXPECT_NE(find(d, "launch.tiny_kernel"), nullptr);
  const Finding* small = find(d, "launch.small_grid");
  ASSERT_NE(small, nullptr);
  EXPECT_NEAR(*small->estimated_speedup, 8.0, 1e-9);  // capped at 8x
}

TEST(AnalysisEngine, DominantStallBecomesAFinding) {
  auto r = report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35},
                        {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 6},
                        {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 2},
                        {"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", 2},
                        // the rest of the reasons ncu reports, so shares can be computed
                        {"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio", 0},
                        {"smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio", 0}});
  auto d = diagnose(r);
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Latency);
  const Finding* f = find(d, "latency.stall.barrier");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->evidence.front().value, 60, 1e-9);
  // 1 / (1 - 0.6 * (1 - 0.3))
  ASSERT_TRUE(f->estimated_speedup);
  EXPECT_NEAR(*f->estimated_speedup, 1 / (1 - 0.6 * 0.7), 0.01);
}

TEST(AnalysisEngine, MissingMetricsLowerConfidenceAndSaySo) {
  auto full = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90},
                                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20}}));
  auto bare = diagnose(report_with({}));
  EXPECT_LT(bare.bottleneck.confidence, full.bottleneck.confidence);
  ASSERT_FALSE(bare.notes.empty());
  EXPECT_NE(bare.notes.front().find("not in this report"), std::string::npos) << bare.notes.front();
  EXPECT_NE(bare.notes.front().find("compute_sol"), std::string::npos) << bare.notes.front();
}

TEST(AnalysisEngine, ClassAndFindingsNeverContradict) {
  // Memory-bound by throughput, but no specific memory rule passes its
  // threshold: the fallback explains the busy memory path anyway.
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 65},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 50},
                                 {"l1tex__throughput.avg.pct_of_peak_sustained_active", 65},
                                 {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 30}}));
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  bool memory_finding = std::any_of(d.findings.begin(), d.findings.end(),
                                    [](const Finding& f) { return f.id.starts_with("memory."); });
  EXPECT_TRUE(memory_finding);
}

TEST(AnalysisEngine, FindingsAreRankedByExpectedGain) {
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                 {"launch__block_size", 48},
                                 {"smsp__thread_inst_executed_per_inst_executed.ratio", 12}},
                                4096, 48));
  for (size_t i = 1; i < d.findings.size(); ++i)
    EXPECT_GE(d.findings[i - 1].estimated_speedup.value_or(1.0) + 0.05, d.findings[i].estimated_speedup.value_or(1.0));
  EXPECT_NE(find(d, "launch.block_size_granularity"), nullptr);
  EXPECT_NE(find(d, "divergence.branch"), nullptr);
}

// Golden cases for the rules no fixture report triggers (tests/golden/rules.json
// lists them): each fires on a test-writer kernel built for it and not on a
// neutral one.
Metrics complete_stalls(const std::string& dominant) {
  Metrics m;
  for (const auto& r : {"long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle",
                        "math_pipe_throttle", "wait", "branch_resolving", "no_instruction", "not_selected",
                        "tex_throttle", "dispatch_stall", "sleeping", "misc"})
    m.emplace_back(std::string("smsp__average_warps_issue_stalled_") + r + "_per_issue_active.ratio", r == dominant ? 8 : 0.2);
  m.emplace_back("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30);
  m.emplace_back("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35);
  return m;
}

TEST(RuleGoldens, StallReasonsNoFixtureShows) {
  for (std::string reason : {"membar", "branch_resolving", "dispatch_stall", "sleeping", "misc"}) {
    auto d = diagnose(report_with(complete_stalls(reason)));
    EXPECT_NE(find(d, "latency.stall." + reason), nullptr) << reason;
    auto other = diagnose(report_with(complete_stalls("wait")));
    EXPECT_EQ(find(other, "latency.stall." + reason), nullptr) << reason;
  }
}

TEST(RuleGoldens, RemoteAperture) {
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40},
                                 {"lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed", 30}}));
  EXPECT_NE(find(d, "memory.remote_aperture"), nullptr);
  auto none = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40},
                                    {"lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed", 0}}));
  EXPECT_EQ(find(none, "memory.remote_aperture"), nullptr);
}

TEST(RuleGoldens, TensorCoresUnused) {
  Metrics m = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 80},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30},
               {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 80},
               {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", 0},
               {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 1e9},
               {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1e6},
               {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1e6},
               {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 1},
               {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 1},
               {"derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2", 400},
               {"smsp__cycles_elapsed.avg.per_second", 1.5e9},
               {"derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2", 256},
               {"sm__cycles_elapsed.avg.per_second", 1.5e9},
               {"launch__sm_count", 26}};
  auto d = diagnose(report_with(m));
  EXPECT_NE(find(d, "compute.tensor_cores_unused"), nullptr);
  m[3].second = 20;  // the tensor pipe in use
  EXPECT_EQ(find(diagnose(report_with(m)), "compute.tensor_cores_unused"), nullptr);
}

}  // namespace
}  // namespace keet::analysis
