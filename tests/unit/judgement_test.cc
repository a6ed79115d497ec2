// The engine's judgement on kernels built by the test writer: what matters
// first, gains the physics and the report allow, the library primitive that
// ran, numbers a reader cannot misread, borderline verdicts by a written rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "analysis/libraries.h"
#include "analysis/ranking.h"
#include "analysis/report_view.h"
#include "readers/reader.h"
#include "support/report_writer.h"
#include "util/pattern.h"

namespace keet::analysis::judgement {
namespace {

using Metrics = std::vector<std::pair<std::string, double>>;

using Launch = testing::WrittenLaunch;

// A report of `launches` on one device (68 SMs, CC `cc`, named `device`),
// each on a neutral base its metrics override.
model::Report report_of(const std::vector<Launch>& launches, const std::string& device = "NVIDIA GeForce RTX 3080",
                        double cc = 8.6) {
  std::vector<Launch> full;
  for (const auto& l : launches) {
    Metrics m = {{"gpu__time_duration.sum", 300000},
                 {"device__attribute_compute_capability_major", std::floor(cc)},
                 {"device__attribute_compute_capability_minor", std::round((cc - std::floor(cc)) * 10)},
                 {"launch__sm_count", 68},
                 {"launch__grid_size", double(l.grid)},
                 {"launch__block_size", double(l.block)},
                 {"launch__waves_per_multiprocessor", double(l.grid) / 68 / 6},
                 {"smsp__issue_active.avg.pct_of_peak_sustained_active", 30},
                 {"smsp__warps_eligible.avg.per_cycle_active", 0.5}};
    for (const auto& [n, v] : l.metrics) {
      auto it = std::ranges::find(m, n, &std::pair<std::string, double>::first);
      if (it != m.end())
        it->second = v;
      else
        m.emplace_back(n, v);
    }
    full.push_back({l.name, l.grid, l.block, std::move(m)});
  }
  auto src = io::memory_source("judgement.ncu-rep", testing::launches_report(full, device));
  auto r = readers::load(*src);
  EXPECT_TRUE(r) << (r ? "" : r.error().message());
  return std::move(*r);
}

KernelDiagnosis diagnose(const model::Report& r, size_t i = 0, const AnalyzeOptions& opt = AnalyzeOptions{0}) {
  return analyze_kernel(r, r.kernels.at(i), opt);
}

const Finding* find(const KernelDiagnosis& d, const std::string& id) {
  auto it = std::ranges::find(d.findings, id, &Finding::id);
  return it == d.findings.end() ? nullptr : &*it;
}

bool any_advice_matches(const KernelDiagnosis& d, const std::string& pattern) {
  auto p = Pattern::compile(pattern, {.case_insensitive = true});
  return std::ranges::any_of(d.library_advice, [&](const std::string& a) { return p->search(a); });
}

// --- The primitive that ran ------------------------------------------------------

TEST(JudgementLibraries, AnFp64GemvGetsGemvAdviceNeverGemmAdvice) {
  for (const char* name : {"void gemv2N_kernel<int, int, double, double, double, double, 128, 16, 4, 4, false, "
                           "false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const double>, "
                           "cublasGemvTensorStridedBatched<const double>, cublasGemvTensorStridedBatched<double>, "
                           "double>>(T13)",
                           "void internal::gemvx::kernel<int, int, double, double, double, double, false, true, true, "
                           "false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const double>, "
                           "cublasGemvTensorStridedBatched<const double>, cublasGemvTensorStridedBatched<double>, "
                           "double>>(T13)"}) {
    auto d =
        diagnose(report_of({{name, 128, 128, {{"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 95.7}}}}));
    EXPECT_EQ(d.library, "cuBLAS") << name;
    EXPECT_EQ(d.primitive, "GEMV (FP64)") << name;
    EXPECT_FALSE(any_advice_matches(d, R"(\bGEMM\b|tensor[- ]core|\bTF32\b|cublasLt|epilogue)")) << name;
    EXPECT_TRUE(any_advice_matches(d, "SGEMV")) << "FP32 where it is enough";
    EXPECT_TRUE(any_advice_matches(d, "several vectors")) << "the DRAM floor's lever";
  }
}

TEST(JudgementLibraries, Fp64GemmGetsNoTf32AndCublasShippedCutlassTalksAboutTheCublasCall) {
  auto cutlass = diagnose(
      report_of({{"cutlass_80_tensorop_d884gemm_64x32_16x4_nn_align1", 432, 128, {}}}, "NVIDIA A100-SXM4-40GB", 8.0));
  EXPECT_EQ(cutlass.library, "cuBLAS");
  EXPECT_EQ(cutlass.primitive, "GEMM (FP64)");
  EXPECT_FALSE(any_advice_matches(cutlass, R"(\bTF32\b)"));
  EXPECT_FALSE(any_advice_matches(cutlass, "CUTLASS profiler|template parameters"));
  auto own =
      diagnose(report_of({{"void cutlass::Kernel<cutlass::gemm::kernel::Gemm<float>>(T1::Params)", 432, 128, {}}}));
  EXPECT_EQ(own.library, "CUTLASS") << "a user's own CUTLASS instantiation keeps its template advice";
  auto sgemm = diagnose(report_of({{"ampere_sgemm_128x64_nn", 432, 128, {}}}));
  EXPECT_EQ(sgemm.primitive, "GEMM");
  EXPECT_TRUE(any_advice_matches(sgemm, "TF32")) << "TF32 for an FP32 GEMM on Ampere";
}

TEST(JudgementLibraries, CubKernelsByPrimitive) {
  const std::pair<const char*, const char*> kernels[] = {
      {"void cub::CUB_200301_890_NS::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<unsigned int>>(T1)",
       "radix sort"},
      {"void cub::CUB_200301_890_NS::DeviceMergeSortBlockSortKernel<cub::DeviceMergeSortPolicy<int>, my_less>(T1)",
       "merge sort"},
      {"void cub::CUB_200301_890_NS::DeviceReduceKernel<cub::DeviceReducePolicy<float>>(T1)", "reduce"},
      {"void cub::CUB_200301_890_NS::DeviceScanKernel<cub::DeviceScanPolicy<float>>(T1)", "scan"},
      {"void thrust::THRUST_200301_890_NS::cuda_cub::core::_kernel_agent<thrust::THRUST_200301_890_NS::cuda_cub::"
       "__parallel_for::ParallelForAgent<thrust::THRUST_200301_890_NS::cuda_cub::__fill::functor<float>, long>>(T2)",
       "fill"},
      {"void cub::CUB_300100_SM_800_NS::detail::transform::transform_kernel<policy1200, int, square>(T1)",
       "transform"}};
  for (const auto& [name, primitive] : kernels) {
    auto d = diagnose(report_of({{name, 432, 256, {}}}));
    EXPECT_EQ(d.library, "CUB/Thrust") << name;
    EXPECT_EQ(d.primitive, primitive) << name;
    bool radix_named = std::string(name).find("Radix") != std::string::npos;
    EXPECT_EQ(any_advice_matches(d, "radix"), radix_named) << name << ": radix-sort advice only on a radix sort";
  }
  auto merge = diagnose(report_of({{kernels[1].first, 432, 256, {}}}));
  EXPECT_TRUE(any_advice_matches(merge, "comparator"));
  auto fill = diagnose(report_of({{kernels[4].first, 432, 256, {}}}));
  EXPECT_TRUE(any_advice_matches(fill, "device_vector"));
}

TEST(JudgementLibraries, CurandStateSetupInAUserKernelIsRecognised) {
  auto setup = diagnose(report_of({{"setup_kernel(curandStateXORWOW *, unsigned long)", 64, 256, {}}}));
  EXPECT_EQ(setup.library, "cuRAND");
  EXPECT_EQ(setup.primitive, "state setup (curand_init)");
  EXPECT_TRUE(any_advice_matches(setup, "subsequence 0"));
  EXPECT_TRUE(any_advice_matches(setup, "Philox"));
  auto use = diagnose(report_of({{"simulate(curandStateXORWOW *, float *, int)", 64, 256, {}}}));
  EXPECT_TRUE(use.library.empty()) << "a kernel that only uses the states is the user's own work";
  auto host =
      diagnose(report_of({{"void gen_sequenced<curandStateXORWOW, float, int, &curand_uniform_noargs>(T1 *, "
                           "T2 *, unsigned long, unsigned long, T3)",
                           64,
                           256,
                           {}}}));
  EXPECT_EQ(host.primitive, "generator") << "the host API's generator is not a setup kernel";
}

TEST(JudgementLibraries, EveryTablePatternCompilesAndEveryFamilyNamesAPrimitive) {
  // library_kernel() compiles the whole table on first use; a bad pattern throws.
  model::Kernel k;
  k.demangled = "my_kernel(float *)";
  EXPECT_NO_THROW(library_kernel(k));
  ASSERT_NE(user_family("my_gemv(const double *, const double *, double *, int)"), nullptr);
  EXPECT_EQ(user_family("my_gemv(const double *, const double *, double *, int)")->primitive, "GEMV");
  EXPECT_EQ(user_family("basic(int, int, int, const float *, const float *, float *)")->primitive, "GEMM");
  EXPECT_EQ(user_family("stencil(float *, int)"), nullptr);
}

// --- One story per kernel ------------------------------------------------------------

// A short launch-bound kernel whose launch findings gain nothing, while its
// warps wait on a stall that carries the gain.
Metrics launch_bound_with_a_costly_stall() {
  Metrics m = {{"gpu__time_duration.sum", 4000},
               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 10},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 10},
               {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 5},
               {"l1tex__throughput.avg.pct_of_peak_sustained_active", 8},
               {"smsp__issue_active.avg.pct_of_peak_sustained_active", 8}};
  const char* reasons[] = {"long_scoreboard", "short_scoreboard",   "barrier", "membar",           "mio_throttle",
                           "lg_throttle",     "math_pipe_throttle", "wait",    "branch_resolving", "no_instruction",
                           "not_selected",    "tex_throttle"};
  for (const char* r : reasons)
    m.emplace_back(fmt::format("smsp__average_warps_issue_stalled_{}_per_issue_active.ratio", r),
                   std::string(r) == "wait" ? 6.0 : 0.2);
  return m;
}

TEST(JudgementStory, GainlessFindingsGoLastAndUnlistedAndTheVerdictNamesTheGain) {
  // 31 threads: one idle lane of one warp, a 1.00x finding.
  auto r = report_of({{"odd_block", 4096, 31, launch_bound_with_a_costly_stall()}});
  auto d = diagnose(r);
  ASSERT_EQ(d.bottleneck.cls, BottleneckClass::Launch) << d.bottleneck.summary;
  const Finding* lanes = find(d, "launch.block_size_granularity");
  ASSERT_NE(lanes, nullptr);
  EXPECT_FALSE(lanes->listed) << "a 1.00x finding stays off the default page";
  EXPECT_EQ(&d.findings.back(), lanes) << "and is ranked last";
  const Finding* wait = find(d, "latency.stall.wait");
  ASSERT_NE(wait, nullptr);
  EXPECT_TRUE(wait->listed);
  EXPECT_NE(d.bottleneck.summary.find("the gain is in: Warps mostly stall on wait"), std::string::npos)
      << d.bottleneck.summary;
  for (size_t i = 1; i < d.findings.size(); ++i)
    if (d.findings[i].listed && d.findings[i].estimated_speedup && d.findings[i - 1].estimated_speedup)
      EXPECT_GE(*d.findings[i - 1].estimated_speedup, *d.findings[i].estimated_speedup) << "ranked by gain";
}

TEST(JudgementStory, NotSelectedIsNeverAboveLow) {
  Metrics m = launch_bound_with_a_costly_stall();
  m[0].second = 400000;  // long enough not to be launch-bound
  for (auto& [name, v] : m)
    if (name.find("not_selected") != std::string::npos) v = 9;
  auto d = diagnose(report_of({{"busy", 4096, 256, m}}));
  const Finding* f = find(d, "latency.stall.not_selected");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Low);
}

TEST(JudgementStory, TwoFindingsOnOneMeasurementMergeIntoOne) {
  // Issue slots and the FMA pipe at the same 96.56%: "issue-bound" and "the
  // FMA pipe is saturated" are one fact seen twice.
  auto d = diagnose(report_of({{"fma_kernel",
                                4096,
                                256,
                                {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 96.56},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"smsp__issue_active.avg.pct_of_peak_sustained_active", 96.56},
                                 {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 96.56}}}}));
  ASSERT_EQ(d.bottleneck.cls, BottleneckClass::Compute) << d.bottleneck.summary;
  std::string ids;
  for (const auto& f : d.findings) ids += f.id + " ";
  bool issue = find(d, "compute.issue_bound") != nullptr, pipe = find(d, "compute.pipe_saturated") != nullptr;
  EXPECT_TRUE(issue != pipe) << "one finding per fact: " << ids;
  const Finding* kept = find(d, issue ? "compute.issue_bound" : "compute.pipe_saturated");
  ASSERT_NE(kept, nullptr) << ids;
  EXPECT_NE(kept->explanation.find("The same measurement also shows"), std::string::npos) << kept->explanation;
}

// --- Gains the physics and the report allow ------------------------------------------

TEST(JudgementGains, SmsActiveAFewCyclesGiveASmallGridLittle) {
  Metrics m = {{"gpu__time_duration.sum", 20000},
               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 5},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5}};
  auto busy = diagnose(report_of({{"few_blocks", 8, 256, m}}));
  const Finding* before = find(busy, "launch.small_grid");
  ASSERT_NE(before, nullptr);
  ASSERT_TRUE(before->estimated_speedup);
  // The same kernel whose 8 SMs were active 120 of 4,203 cycles (scaled to them).
  m.emplace_back("sm__cycles_active.avg", 120.0 * 8 / 68);
  m.emplace_back("sm__cycles_elapsed.avg", 4203);
  auto idle = diagnose(report_of({{"few_blocks", 8, 256, m}}));
  const Finding* after = find(idle, "launch.small_grid");
  ASSERT_NE(after, nullptr);
  ASSERT_TRUE(after->estimated_speedup);
  EXPECT_GT(*before->estimated_speedup, 2.0);
  EXPECT_LT(*after->estimated_speedup, 1.05) << "launch and drain, not work";
}

TEST(JudgementGains, TheSameKernelAtMoreBlocksOverTheSameThreadsRefutesTheSmallGridGain) {
  Metrics m = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 7},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5}};
  Metrics wide = m;
  wide.emplace_back("gpu__time_duration.sum", 310000);
  auto r = report_of({{"gemv_row_per_thread(const double *, const double *, double *, int)", 8, 256, m},
                      {"gemv_row_per_thread(const double *, const double *, double *, int)", 64, 32, wide}});
  LaunchGroups groups;
  for (const auto& k : r.kernels) groups.add(k);
  auto configs = groups.summaries();
  AnalyzeOptions alone{0}, with{0};
  with.configurations = &configs;
  const Finding* guess = find(diagnose(r, 0, alone), "launch.small_grid");
  ASSERT_NE(guess, nullptr);
  EXPECT_GT(guess->estimated_speedup.value_or(1), 1.2);
  auto d = diagnose(r, 0, with);
  const Finding* f = find(d, "launch.small_grid");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->estimated_speedup.value_or(0), 1.0);
  EXPECT_FALSE(f->listed);
  EXPECT_NE(f->explanation.find("launch #1 runs the same kernel in 64 blocks"), std::string::npos) << f->explanation;
}

TEST(JudgementGains, ATailEffectIsCappedByTheBusiestUnitWhicheverItIs) {
  auto d = diagnose(report_of({{"tail",
                                480,
                                256,
                                {{"launch__waves_per_multiprocessor", 1.2},
                                 {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 83},
                                 {"l1tex__throughput.avg.pct_of_peak_sustained_active", 83},
                                 {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 20}}}}));
  const Finding* f = find(d, "launch.tail_effect");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->estimated_speedup);
  EXPECT_LE(*f->estimated_speedup, 100.0 / 83 + 1e-3) << f->speedup_formula;
}

// ncu's WorkloadImbalance says 6.8% where KEET's tail-effect model says more:
// the page states both and why, and says nothing when they agree.
TEST(JudgementGains, AGainUnlikeNcusOwnEstimateSaysSo) {
  auto r = report_of({{"partial_wave", 480, 256, {{"launch__waves_per_multiprocessor", 1.2}}}});
  auto& rules = r.kernels.at(0).rules;
  rules.push_back(
      {.id = "WorkloadImbalance", .messages = {{.type = 2, .text = "A partial wave", .estimated_speedup = 6.8}}});
  auto d = diagnose(r);
  const Finding* f = find(d, "launch.tail_effect");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->estimated_speedup);
  ASSERT_GT(*f->estimated_speedup, 1.2);
  EXPECT_NE(f->explanation.find("ncu's WorkloadImbalance rule estimates 6.8% of the time saved (1.07x)"),
            std::string::npos)
      << f->explanation;
  EXPECT_NE(f->explanation.find("its model: ceil(waves) / waves"), std::string::npos) << f->explanation;

  double agreeing = 100 * (1 - 1 / *f->estimated_speedup);
  rules.back().messages.back().estimated_speedup = agreeing;
  auto same = diagnose(r);
  EXPECT_EQ(find(same, "launch.tail_effect")->explanation.find("ncu's"), std::string::npos);
}

// --- Numbers a reader cannot misread, and borderline verdicts ------------------------

TEST(JudgementNumbers, AnUnderFilledGridShowsItsUnitsOnTheSmsThatRan) {
  auto d = diagnose(report_of({{"dp_chain",
                                8,
                                256,
                                {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 7},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5},
                                 {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", 7.1},
                                 {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", 60.4}}}}));
  auto fp64 = std::ranges::find(d.limiter.units, std::string("pipe_fp64"), &UnitLoad::id);
  ASSERT_NE(fp64, d.limiter.units.end());
  EXPECT_DOUBLE_EQ(fp64->pct, 7.1);
  ASSERT_TRUE(fp64->pct_on_active_sms);
  EXPECT_DOUBLE_EQ(*fp64->pct_on_active_sms, 60.4);
}

TEST(JudgementNumbers, VoltasSharedPipeIsNotAnFp16Pipe) {
  auto d = diagnose(report_of({{"dp_volta",
                                4096,
                                256,
                                {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 70.3},
                                 {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                 {"sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active", 70.3},
                                 {"sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active", 0}}}},
                              "Tesla V100-SXM2-16GB", 7.0));
  ASSERT_NE(d.limiter.binding(), nullptr);
  EXPECT_EQ(d.limiter.binding()->id, "pipe_shared");
  EXPECT_EQ(d.limiter.binding()->label.find("FP16 pipe"), std::string::npos);
}

TEST(JudgementNumbers, AHitRateAbove100IsInvalid) {
  auto d = diagnose(report_of({{"odd", 4096, 256, {{"l1tex__t_sector_hit_rate.pct", 100.4}}}}));
  EXPECT_TRUE(std::ranges::any_of(d.data_quality.invalid, [](const InvalidMetric& m) {
    return m.metric == "l1tex__t_sector_hit_rate.pct" && m.why == "a hit rate above 100%";
  }));
}

TEST(JudgementVerdicts, ABorderlineUnitWithFewWarpsIsLatency) {
  Metrics m = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 62.1},
               {"l1tex__throughput.avg.pct_of_peak_sustained_active", 62.1},
               {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 20},
               {"sm__warps_active.avg.pct_of_peak_sustained_active", 18}};
  auto few = diagnose(report_of({{"k", 4096, 256, m}}));
  EXPECT_EQ(few.bottleneck.cls, BottleneckClass::Latency) << few.bottleneck.summary;
  EXPECT_NE(few.bottleneck.summary.find("L1/TEX cache at 62.1%"), std::string::npos) << few.bottleneck.summary;
  m.back().second = 60;  // plenty of warps
  m.emplace_back("smsp__warps_eligible.avg.per_cycle_active", 2);
  EXPECT_EQ(diagnose(report_of({{"k", 4096, 256, m}})).bottleneck.cls, BottleneckClass::Memory);
  m[1].second = m[2].second = 85;  // saturated whatever the warps
  m[4].second = 10;
  EXPECT_EQ(diagnose(report_of({{"k", 4096, 256, m}})).bottleneck.cls, BottleneckClass::Memory);
}

// --- The report as a whole -------------------------------------------------------------

ReportView view_of(const model::Report& r) {
  ReportSurvey s;
  for (const auto& k : r.kernels) s.add(k);
  return s.view();
}

TEST(JudgementReport, AHandWrittenGemvBesideCublasGemv) {
  auto r = report_of(
      {{"void gemv2N_kernel<int, int, double, double, double, double, 128, 16, 4, 4, false, false, "
        "cublasGemvParamsEx<int, double>>(T13)",
        128,
        128,
        {{"gpu__time_duration.sum", 50000}}},
       {"my_gemv(const double *, const double *, double *, int)", 8, 256, {{"gpu__time_duration.sum", 220000}}}});
  auto v = view_of(r);
  ASSERT_EQ(v.comparisons.size(), 1u);
  EXPECT_EQ(v.comparisons[0].kind, "library_beside_user");
  EXPECT_NE(v.comparisons[0].text.find("takes 4.4x as long as cuBLAS's GEMV (FP64) #0"), std::string::npos)
      << v.comparisons[0].text;
  EXPECT_NE(v.comparisons[0].text.find("a warp"), std::string::npos);
  EXPECT_EQ(v.comparisons[0].indices, (std::vector<int>{1, 0}));
}

TEST(JudgementReport, SetupKernelsAgainstTheWorkTheyServe) {
  auto r = report_of({{"init_rng(curandStateXORWOW *, unsigned long)", 64, 256, {{"gpu__time_duration.sum", 485000}}},
                      {"simulate(curandStateXORWOW *, float *)", 64, 256, {{"gpu__time_duration.sum", 515000}}}});
  auto v = view_of(r);
  ASSERT_EQ(v.comparisons.size(), 1u);
  EXPECT_EQ(v.comparisons[0].kind, "setup_share");
  EXPECT_NE(v.comparisons[0].text.find("48.5% of the kernel time"), std::string::npos) << v.comparisons[0].text;
}

TEST(JudgementReport, OneKernelAtSeveralShapes) {
  auto r = report_of({{"row_sum(const double *, double *, int)", 8, 256, {{"gpu__time_duration.sum", 300000}}},
                      {"row_sum(const double *, double *, int)", 64, 32, {{"gpu__time_duration.sum", 310000}}},
                      {"row_sum(const double *, double *, int)", 16, 128, {{"gpu__time_duration.sum", 290000}}}});
  auto v = view_of(r);
  ASSERT_EQ(v.shapes.size(), 1u);
  const auto& s = v.shapes[0];
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].index, 2) << "fastest first";
  EXPECT_NEAR(s.rows[2].vs_fastest, 310.0 / 290, 1e-9);
  EXPECT_NE(s.verdict.find("more blocks did not help"), std::string::npos) << s.verdict;
  EXPECT_TRUE(view_of(report_of({{"alone", 8, 256, {}}})).empty());
}

}  // namespace
}  // namespace keet::analysis::judgement
