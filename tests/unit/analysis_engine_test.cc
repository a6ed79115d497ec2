// The expert engine on kernels built by the test writer: each scenario sets the
// metrics a real report would carry and checks class, findings and evidence.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "analysis/gpu_features.h"
#include "analysis/rules.h"
#include "readers/reader.h"
#include "support/report_writer.h"
#include "util/pattern.h"

namespace keet::analysis {
namespace {

using Metrics = std::vector<std::pair<std::string, double>>;

// A kernel on an "8.6" device with the given metrics on top of a neutral base;
// `device` names the GPU (device__attribute_display_name) when given.
model::Report report_with(const Metrics& extra, uint64_t grid = 4096, uint64_t block = 256,
                          const std::string& device = "", const std::string& kernel = "scenario") {
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
    if (it != base.end())
      it->second = v;
    else
      base.emplace_back(n, v);
  }
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  auto k = w.kernel(kernel, grid, block, base);
  if (!device.empty()) {
    auto* name = k.add_metric_results();
    name->set_name_id(w.name_id("device__attribute_display_name"));
    name->mutable_value()->set_string_value(device);
  }
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
  EXPECT_EQ(d.compute_capability, "8.6");
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
  // The 2 us above the 1 us launch floor spread over 26 SMs instead of 1:
  // 3000 / (1000 + 2000 / 26) = 2.79x, not a constant 8x.
  EXPECT_NEAR(*small->estimated_speedup, 3000.0 / (1000 + 2000.0 / 26), 0.002);
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
  // Named as the ncu section that collects them, not as the engine's quantities.
  EXPECT_NE(bare.notes.front().find("the SpeedOfLight section"), std::string::npos) << bare.notes.front();
  EXPECT_NE(bare.notes.front().find("--section SpeedOfLight"), std::string::npos) << bare.notes.front();
  EXPECT_EQ(bare.notes.front().find("compute_sol"), std::string::npos) << bare.notes.front();
}

TEST(AnalysisEngine, ClassAndFindingsNeverContradict) {
  // Memory-bound by throughput, but no specific memory rule passes its
  // threshold: the fallback explains the busy memory path anyway.
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 65},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 50},
                                 {"l1tex__throughput.avg.pct_of_peak_sustained_active", 65},
                                 {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                 // enough warps to keep a unit at 65% busy (fewer: latency-bound)
                                 {"smsp__warps_eligible.avg.per_cycle_active", 2}}));
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  bool memory_finding =
      std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) { return f.id.starts_with("memory."); });
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
    m.emplace_back(std::string("smsp__average_warps_issue_stalled_") + r + "_per_issue_active.ratio",
                   r == dominant ? 8 : 0.2);
  m.emplace_back("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30);
  m.emplace_back("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35);
  return m;
}

TEST(RuleGoldens, StallReasonsNoFixtureShows) {
  for (std::string reason : {"membar", "branch_resolving", "dispatch_stall", "sleeping", "misc", "no_instruction"}) {
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

// --- Every sentence an expert would sign (issue 24) ---------------------------

bool any_advice(const KernelDiagnosis& d, std::string_view needle) {
  for (const auto& f : d.findings)
    for (const auto& a : f.advice)
      if (a.find(needle) != std::string::npos) return true;
  return false;
}

Metrics on_cc(Metrics m, int major, int minor) {
  m.emplace_back("device__attribute_compute_capability_major", major);
  m.emplace_back("device__attribute_compute_capability_minor", minor);
  return m;
}

// FMA-bound FP32 work that would suit tensor cores.
Metrics fma_bound() {
  return {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 88},
          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20},
          {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 88}};
}

TEST(ExpertAdvice, TensorCoresAreAdvisedOnlyOnChipsThatHaveThem) {
  auto gtx = diagnose(report_with(on_cc(fma_bound(), 7, 5), 4096, 256, "NVIDIA GeForce GTX 1650"));
  auto rtx = diagnose(report_with(on_cc(fma_bound(), 7, 5), 4096, 256, "NVIDIA GeForce RTX 2070"));
  EXPECT_EQ(gtx.bottleneck.cls, BottleneckClass::Compute);
  EXPECT_NE(find(gtx, "compute.pipe_saturated"), nullptr);
  EXPECT_FALSE(any_advice(gtx, "tensor cores")) << "TU117 has no tensor cores although it is 7.5";
  EXPECT_TRUE(any_advice(rtx, "tensor cores")) << "TU106 has them: the same kernel gets the advice";
  // Pascal: no tensor cores by compute capability.
  EXPECT_FALSE(any_advice(diagnose(report_with(on_cc(fma_bound(), 6, 1), 4096, 256, "NVIDIA GeForce GTX 1080")),
                          "tensor cores"));
}

TEST(ExpertAdvice, DeviceFeaturesPerChip) {
  DeviceFeatures gtx("NVIDIA GeForce GTX 1660 SUPER", "7.5"), t4("Tesla T4", "7.5"), t1000("NVIDIA T1000", "7.5"),
      a2000("NVIDIA RTX A2000", "8.6"), h100("NVIDIA H100 PCIe", "9.0"), unknown("", "");
  EXPECT_FALSE(gtx.has("tensor_cores"));
  EXPECT_NE(gtx.why_not("tensor_cores").find("although its compute capability is 7.5"), std::string::npos);
  EXPECT_TRUE(t4.has("tensor_cores"));
  EXPECT_FALSE(t1000.has("tensor_cores"));
  EXPECT_TRUE(a2000.has("cp_async"));
  EXPECT_FALSE(a2000.has("tma"));
  EXPECT_NE(a2000.why_not("tma").find("needs compute capability 9.0"), std::string::npos);
  EXPECT_TRUE(h100.has("tma"));
  EXPECT_FALSE(unknown.known());
  // The one check LLM answers and the engine's advice share.
  EXPECT_FALSE(advice_fits("Move matrix-shaped work to tensor cores (WMMA/mma.sync).", gtx));
  EXPECT_TRUE(advice_fits("Move matrix-shaped work to tensor cores (WMMA/mma.sync).", t4));
  EXPECT_FALSE(advice_fits("Prefetch with LDGSTS.", DeviceFeatures("Tesla V100-SXM2-16GB", "7.0")));
  EXPECT_EQ(feature_violations("TMA is not available on this GPU.", a2000, {.allow_negated = true}).size(), 0u);
  EXPECT_EQ(feature_violations("Use TMA to load tiles.", a2000, {.allow_negated = true}).size(), 1u);
}

// The literal prefilter in front of RE2 never hides a spelling.
TEST(ExpertAdvice, EveryFeatureSpellingIsFound) {
  const std::pair<const char*, const char*> phrases[] = {{"tensor_cores", "use WMMA fragments"},
                                                         {"tensor_cores", "Tensor-Core GEMM"},
                                                         {"tma", "cp.async.bulk.tensor"},
                                                         {"tma", "the Tensor Memory Accelerator"},
                                                         {"wgmma", "warp-group MMA"},
                                                         {"thread_block_clusters", "thread-block clusters"},
                                                         {"thread_block_clusters", "__cluster_dims__"},
                                                         {"distributed_shared_memory", "DSMEM"},
                                                         {"cp_async", "LDGSTS"},
                                                         {"cp_async", "cuda::memcpy_async"},
                                                         {"fp8", "E5M2 inputs"},
                                                         {"fp4", "NVFP4"},
                                                         {"bf16_mma", "bfloat16"},
                                                         {"tf32_mma", "TF32 math"},
                                                         {"tcgen05", "tcgen05.mma"},
                                                         {"tensor_memory", "TMEM"},
                                                         {"l2_persistence", "accessPolicyWindow"},
                                                         {"async_barrier", "cuda::barrier"}};
  for (const auto& [key, phrase] : phrases) {
    auto named = features_named(phrase);
    EXPECT_NE(std::ranges::find(named, key), named.end()) << key << ": '" << phrase << "'";
  }
  EXPECT_TRUE(features_named("cp.async.bulk.tensor").size() == 1) << "cp.async(?!.bulk) is not TMA";
  EXPECT_TRUE(features_named("Coalesce the loads and use shared memory.").empty());
}

// Every advice line the rule data gates by compute capability names only
// features that compute capability has: otherwise the check would silently
// drop it on every GPU the gate lets through.
TEST(ExpertAdvice, ArchitectureGatesMatchTheFeaturesAdviceNames) {
  auto set = rule_set();
  ASSERT_TRUE(set);
  auto check = [](const Advice& a, const std::string& where) {
    auto row = lookup_arch(fmt::format("{:.1f}", a.min_cc == 0 ? 6.0 : a.min_cc)).spec;
    ASSERT_NE(row, nullptr) << where;
    for (const auto& feature : features_named(a.text))
      if (feature != "tensor_cores" || a.min_cc >= 7.0 || a.when)
        EXPECT_TRUE(row->has(feature) || a.when)
            << where << ": '" << a.text << "' names " << feature << ", which " << row->cc.text() << " lacks";
  };
  for (const auto& r : (*set)->rules)
    for (const auto& a : r.advice) check(a, r.id);
  for (const auto& st : (*set)->stalls)
    for (const auto& a : st.advice) check(a, "latency.stall." + st.reason);
}

TEST(ExpertAdvice, NoIntrinsicThatForbidsFmaIsOfferedAsFast) {
  auto set = rule_set();
  ASSERT_TRUE(set);
  auto slow = Pattern::compile(R"(__[fd](mul|add|sub)_r[nzud]\b)").value();
  for (const auto& r : (*set)->rules)
    for (const auto& a : r.advice) EXPECT_FALSE(slow.search(a.text)) << r.id << ": " << a.text;
  for (const auto& st : (*set)->stalls)
    for (const auto& a : st.advice) EXPECT_FALSE(slow.search(a.text)) << st.reason << ": " << a.text;
}

// The LSU pipe issuing the loads a binding L1/TEX cache serves is the same limit.
TEST(ExpertVoice, ACarryingUnitFoldsIntoTheVerdict) {
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 83},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 84},
                                 {"l1tex__throughput.avg.pct_of_peak_sustained_active", 84.1},
                                 {"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed", 83.1},
                                 {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 10.5},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 9.4}}));
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  EXPECT_EQ(d.limiter.binding()->id, "l1tex");
  EXPECT_EQ(find(d, "compute.pipe_saturated"), nullptr) << "the LSU pipe's story is the verdict's";
  const Finding* l1 = find(d, "memory.l1_l2_bandwidth");
  ASSERT_NE(l1, nullptr);
  EXPECT_NE(l1->explanation.find("LSU pipe is at 83.1% of peak too"), std::string::npos) << l1->explanation;
  for (const auto& f : d.findings) {
    EXPECT_FALSE(f.title.starts_with("Compute-bound")) << f.title;
    EXPECT_EQ(f.explanation.find("not by memory"), std::string::npos) << f.id;
  }
}

// A busy FMA pipe next to a binding DRAM is a second limit, told as one.
TEST(ExpertVoice, TitlesFollowTheKindOfUnitAndTheVerdict) {
  auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 75},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 91},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 91},
                                 {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 75}}));
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  const Finding* pipe = find(d, "compute.pipe_saturated");
  ASSERT_NE(pipe, nullptr);
  EXPECT_EQ(pipe->title, "The FMA pipe is also busy: 75% of peak");
  EXPECT_EQ(pipe->explanation.find("not by memory"), std::string::npos) << pipe->explanation;
  // The same pipe binding: the verdict's words.
  auto c = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 91},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 70},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 70},
                                 {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 91}}));
  EXPECT_EQ(c.bottleneck.cls, BottleneckClass::Compute);
  ASSERT_NE(find(c, "compute.pipe_saturated"), nullptr);
  EXPECT_TRUE(find(c, "compute.pipe_saturated")->title.starts_with("Compute-bound: the FMA pipe"));
  const Finding* dram = find(c, "memory.dram_bandwidth");
  ASSERT_NE(dram, nullptr);
  EXPECT_EQ(dram->title, "DRAM bandwidth is also high: 70% of peak");
  EXPECT_EQ(dram->explanation.find("more FLOPs will not help"), std::string::npos);
}

TEST(ExpertGains, NoEstimateBringsAKernelUnderTheLaunchFloor) {
  auto d = diagnose(report_with({{"gpu__time_duration.sum", 1500},
                                 {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 1},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 2},
                                 {"launch__waves_per_multiprocessor", 0.01}},
                                1, 64));
  ASSERT_NE(find(d, "launch.small_grid"), nullptr);
  for (const auto& f : d.findings)
    if (f.estimated_speedup) EXPECT_GE(1500 / *f.estimated_speedup, 1000.0) << f.id << " " << *f.estimated_speedup;
  // A 1.2 us kernel whose warps run 3 of 32 lanes: the divergence formula says
  // 3.8x; the launch floor says 1.2x, and the text says why.
  auto div = diagnose(report_with({{"gpu__time_duration.sum", 1200},
                                   {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                                   {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 10},
                                   {"smsp__issue_active.avg.pct_of_peak_sustained_active", 80},
                                   {"smsp__thread_inst_executed_per_inst_executed.ratio", 3}}));
  const Finding* branch = find(div, "divergence.branch");
  ASSERT_NE(branch, nullptr);
  ASSERT_TRUE(branch->estimated_speedup);
  EXPECT_DOUBLE_EQ(*branch->estimated_speedup, 1.2);
  EXPECT_NE(branch->explanation.find("no kernel runs in less than about 1"), std::string::npos) << branch->explanation;
}

TEST(ExpertGains, SeverityFollowsTheGainAndTheKernelsShare) {
  auto r = report_with({{"gpu__time_duration.sum", 3000},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 1},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 2},
                        {"launch__waves_per_multiprocessor", 0.01}},
                       1, 64);
  AnalyzeOptions whole{0};
  whole.time_share = 0.9;
  auto big = analyze_kernel(r, r.kernels.at(0), whole);
  ASSERT_NE(find(big, "launch.small_grid"), nullptr);
  EXPECT_EQ(find(big, "launch.small_grid")->severity, Severity::High);
  AnalyzeOptions tiny{0};
  tiny.time_share = 0.0005;  // 0.05% of the report's GPU time
  for (const auto& f : analyze_kernel(r, r.kernels.at(0), tiny).findings) EXPECT_EQ(f.severity, Severity::Low) << f.id;
  // A finding whose estimate is about 1x is never high.
  for (const auto& f : big.findings)
    if (f.estimated_speedup && *f.estimated_speedup < 1.1) EXPECT_NE(f.severity, Severity::High) << f.id;
}

Metrics sampled_stalls(double dominant_samples) {
  Metrics m;
  for (const auto& r :
       {"long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle", "math_pipe_throttle",
        "wait", "branch_resolving", "no_instructions", "not_selected", "tex_throttle"})
    m.emplace_back(std::string("smsp__pcsamp_warps_issue_stalled_") + r,
                   std::string(r) == "long_scoreboard" ? dominant_samples : 0);
  m.emplace_back("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30);
  m.emplace_back("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35);
  return m;
}

TEST(ExpertGains, StallFindingsNeedEnoughPcSamples) {
  auto few = diagnose(report_with(sampled_stalls(4)));
  EXPECT_EQ(find(few, "latency.stall.long_scoreboard"), nullptr);
  EXPECT_TRUE(
      std::ranges::any_of(few.notes, [](const std::string& n) { return n.find("only 4 PC samples") != n.npos; }));
  auto many = diagnose(report_with(sampled_stalls(4000)));
  EXPECT_NE(find(many, "latency.stall.long_scoreboard"), nullptr);
}

TEST(ExpertGains, StallsGainNothingAgainstASaturatedUnitTheyDoNotRelieve) {
  Metrics m = complete_stalls("long_scoreboard");
  m.emplace_back("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 92);
  m.emplace_back("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 92);
  auto d = diagnose(report_with(m));
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Memory);
  const Finding* f = find(d, "latency.stall.long_scoreboard");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->estimated_speedup) << "waiting less cannot make a saturated DRAM faster";
  EXPECT_EQ(f->severity, Severity::Low);
}

TEST(ExpertPremises, ASingleThreadStoreIsNotAStride) {
  Metrics m = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35},
               {"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 100},
               {"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct", 12.5},
               {"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio", 4},
               {"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio", 1}};
  EXPECT_EQ(find(diagnose(report_with(m)), "memory.uncoalesced_global"), nullptr);
  m.back().second = 32;  // the same bytes per sector over 32 sectors a request: a stride
  auto strided = diagnose(report_with(m));
  const Finding* f = find(strided, "memory.uncoalesced_global");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Global stores use only 12% of the bytes of each sector they write");
}

TEST(ExpertPremises, AStreamingCopyHasNothingToReuse) {
  Metrics m = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 95},
               {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 95},
               {"l1tex__t_sector_hit_rate.pct", 0},
               {"lts__t_sector_hit_rate.pct", 33},
               {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1e6},
               {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1e6},
               {"derived__memory_l2_theoretical_sectors_global_excessive", 0},
               {"dram__bytes_read.sum", 32e6},
               {"dram__bytes_write.sum", 32e6}};
  EXPECT_EQ(find(diagnose(report_with(m)), "memory.poor_cache_reuse"), nullptr) << "DRAM moved what was asked for";
  m[8].second = 96e6;  // the same reads fetched three times over
  EXPECT_NE(find(diagnose(report_with(m)), "memory.poor_cache_reuse"), nullptr);
}

// A report holding only the memory chart: L1 store requests and the L2 sectors
// the L1 wrote for them. 11.5 sectors a request where 4 would do.
TEST(ExpertPartial, TheMemoryChartAloneShowsAnUncoalescedStore) {
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  auto k = w.kernel("scatter", 192, 1024,
                    {{"gpu__time_duration.sum", 40000},
                     {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 6144},
                     {"lts__t_sectors_srcunit_tex_op_write.sum", 70948}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  auto src = io::memory_source("chart.ncu-rep", w.bytes());
  auto r = readers::load(*src);
  ASSERT_TRUE(r);
  auto d = analyze_kernel(*r, r->kernels.at(0), {0});
  EXPECT_EQ(d.bottleneck.cls, BottleneckClass::Unknown);
  const Finding* f = find(d, "memory.uncoalesced_global");
  ASSERT_NE(f, nullptr) << "the chart's per-operation ratio proves the finding";
  EXPECT_NE(f->title.find("11.5 sectors per request"), std::string::npos) << f->title;
}

TEST(ExpertLibraries, RecognisedByFamilyWithTheirAdviceOnce) {
  const std::pair<const char*, const char*> kernels[] = {{"DeviceRadixSortOnesweepKernel", "CUB/Thrust"},
                                                         {"generate_seed_pseudo", "cuRAND"},
                                                         {"regular_fft", "cuFFT"},
                                                         {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "NCCL"},
                                                         {"ampere_sgemm_128x64_nn", "cuBLAS"}};
  for (const auto& [name, library] : kernels) {
    auto d = diagnose(report_with({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                   {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35},
                                   {"launch__occupancy_limit_registers", 1},
                                   {"sm__maximum_warps_per_active_cycle_pct", 25}},
                                  4096, 256, "", name));
    EXPECT_EQ(d.library, library) << name;
    EXPECT_FALSE(d.library_advice.empty()) << name;
    for (const auto& f : d.findings) EXPECT_TRUE(f.advice.empty()) << name << ": " << f.id << " repeats advice";
  }
  EXPECT_TRUE(diagnose(report_with({}, 4096, 256, "", "my_fft_kernel")).library.empty());
}

}  // namespace
}  // namespace keet::analysis
