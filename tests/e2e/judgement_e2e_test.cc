// End-to-end: the binary's pages tell one story an expert would keep. On
// reports the test writer makes (a GEMV beside cuBLAS's GEMV, one kernel at
// several grids, an FP64 kernel on an 8-of-68-SM grid, a V100 kernel with its
// shared pipe busy, before/after pairs whose rates, templates and work change)
// and on fixtures that show the case (CUB kernels, a cuRAND setup kernel,
// NVIDIA's sobelFloat sample, the ESMM series, neighbouring reports' diffs).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet::judgement_e2e {
namespace {

using namespace keet::testing;
using json = nlohmann::json;
using Metrics = std::vector<std::pair<std::string, double>>;

using Launch = WrittenLaunch;

// A report of these launches on `device` (68 SMs, compute capability `cc`).
std::string report(const std::string& file, const std::vector<Launch>& launches,
                   const std::string& device = "NVIDIA GeForce RTX 3080", int major = 8, int minor = 6) {
  std::vector<Launch> full;
  for (const auto& l : launches) {
    Metrics m = {{"device__attribute_compute_capability_major", major},
                 {"device__attribute_compute_capability_minor", minor},
                 {"launch__sm_count", 68},
                 {"launch__grid_size", double(l.grid)},
                 {"launch__block_size", double(l.block)}};
    m.insert(m.end(), l.metrics.begin(), l.metrics.end());
    full.push_back({l.name, l.grid, l.block, std::move(m)});
  }
  std::string path = temp_path(file);
  write_file(path, launches_report(full, device));
  return shell_quote(path);
}

json analysis_json(const std::string& args) {
  auto r = run_keet("analyze --format json " + args);
  EXPECT_EQ(r.rc, 0) << r.err;
  return json::parse(r.out, nullptr, false);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// --- The report as a whole (point 4) and the primitive (point 3) -----------------------

TEST(JudgementE2E, AGemvBesideCublasGemvIsComparedInEveryFormat) {
  std::string r = report(
      "gemv-beside.ncu-rep",
      {{"void gemv2N_kernel<int, int, double, double, double, double, 128, 16, 4, 4, false, false, "
        "cublasGemvParamsEx<int, double>>(T13)",
        128,
        128,
        {{"gpu__time_duration.sum", 50000}, {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 95.7}}},
       {"my_gemv(const double *, const double *, double *, int)", 8, 256, {{"gpu__time_duration.sum", 220000}}}});
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("The report as a whole:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("takes 4.4x as long as cuBLAS's GEMV (FP64) #0 here"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cuBLAS GEMV (FP64) kernel (recognised from its name)"), std::string::npos);
  EXPECT_EQ(text.out.find("TF32"), std::string::npos) << "no GEMM advice on a GEMV";
  auto md = run_keet("analyze --format markdown " + r);
  EXPECT_NE(md.out.find("## The report as a whole:"), std::string::npos) << md.out;
  auto html = run_keet("analyze --format html " + r);
  EXPECT_NE(html.out.find("<h2>The report as a whole</h2>"), std::string::npos);
  auto j = analysis_json(r);
  ASSERT_TRUE(j.contains("whole_report"));
  EXPECT_EQ(j["whole_report"]["comparisons"][0]["kind"], "library_beside_user");
  EXPECT_EQ(j["whole_report"]["comparisons"][0]["indices"], json::array({1, 0}));
  EXPECT_EQ(j["kernels"][0]["primitive"], "GEMV (FP64)");
  EXPECT_FALSE(j["kernels"][1].contains("primitive")) << "only a library kernel carries one";
}

TEST(JudgementE2E, OneKernelAtSeveralGridsIsATableAndRefutesTheSmallGridGain) {
  Metrics busy = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 7},
                  {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5}};
  auto at = [&](double ns) {
    Metrics m = busy;
    m.emplace_back("gpu__time_duration.sum", ns);
    return m;
  };
  std::string r = report("shapes.ncu-rep", {{"row_dot(const double *, double *, int)", 8, 256, at(300000)},
                                            {"row_dot(const double *, double *, int)", 64, 32, at(310000)},
                                            {"row_dot(const double *, double *, int)", 16, 128, at(295000)}});
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("One kernel at 3 launch shapes"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("more blocks did not help"), std::string::npos);
  auto j = analysis_json(r + " --top 0");
  ASSERT_EQ(j["whole_report"]["launch_shapes"].size(), 1u);
  EXPECT_EQ(j["whole_report"]["launch_shapes"][0]["rows"][0]["index"], 2) << "fastest first";
  for (const auto& f : j["kernels"][0]["findings"])
    if (f["id"] == "launch.small_grid") {
      EXPECT_EQ(f["estimated_speedup"], 1.0) << f.dump(1);
      EXPECT_NE(f["explanation"].get<std::string>().find("refutes the gain"), std::string::npos);
    }
}

// --- One story per kernel (point 1) -----------------------------------------------------

TEST(JudgementE2E, AGainlessFindingIsOneAlsoNotedLineUnlessVerbose) {
  std::string r =
      report("odd-block.ncu-rep", {{"odd_block",
                                    4096,
                                    31,
                                    {{"gpu__time_duration.sum", 300000},
                                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                     {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                     {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 20},
                                     {"l1tex__throughput.avg.pct_of_peak_sustained_active", 30},
                                     {"smsp__issue_active.avg.pct_of_peak_sustained_active", 10}}}});
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("Also noted, gaining nothing worth a change (-v shows them): launch.block_size_granularity"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("est. speedup 1.00x"), std::string::npos) << text.out;
  auto verbose = run_keet("analyze -v " + r);
  EXPECT_NE(verbose.out.find("Block size 31 is not a multiple of 32"), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find("leaves 1 of its last warp's 32 lanes idle"), std::string::npos) << verbose.out;
  auto j = analysis_json(r);
  bool kept = false;
  for (const auto& f : j["kernels"][0]["findings"]) kept |= f["id"] == "launch.block_size_granularity";
  EXPECT_TRUE(kept) << "JSON keeps everything";
}

// --- Numbers a reader cannot misread (point 5) -------------------------------------------

TEST(JudgementE2E, AnFp64KernelOn8Of68SmsShowsItsPipeOnTheSmsThatRan) {
  std::string r =
      report("dp-8-of-68.ncu-rep", {{"dp_chain(const double *, double *)",
                                     8,
                                     256,
                                     {{"gpu__time_duration.sum", 300000},
                                      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 7.1},
                                      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 3},
                                      {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", 7.1},
                                      {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", 60.4}}}});
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("FP64 pipe 7.1% (60.4% on the SMs that ran)"), std::string::npos) << text.out;
  auto j = analysis_json(r);
  bool found = false;
  for (const auto& u : j["kernels"][0]["limiter"]["units"])
    if (u["unit"] == "pipe_fp64") {
      found = true;
      EXPECT_EQ(u["pct_on_active_sms"], 60.4);
    }
  EXPECT_TRUE(found);
}

TEST(JudgementE2E, AV100KernelWithItsSharedPipeBusyIsNotCalledFp16) {
  std::string r = report("v100-shared.ncu-rep",
                         {{"dp_volta",
                           4096,
                           256,
                           {{"gpu__time_duration.sum", 300000},
                            {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 70.3},
                            {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20},
                            {"sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active", 70.3},
                            {"sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active", 0}}}},
                         "Tesla V100-SXM2-16GB", 7, 0);
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_EQ(text.out.find("FP16 pipe 70.3%"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("shared pipe (FP16 and tensor work; FP64 too on Volta) 70.3%"), std::string::npos)
      << text.out;
}

TEST(JudgementE2E, DoctorFlagsAHitRateAbove100) {
  std::string r =
      report("hit-rate-101.ncu-rep", {{"odd",
                                       4096,
                                       256,
                                       {{"gpu__time_duration.sum", 300000},
                                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                        {"lts__t_sector_hit_rate.pct", 100.4}}}});
  auto doctor = run_keet("doctor " + r);
  EXPECT_EQ(doctor.rc, 1) << doctor.out << doctor.err;
  EXPECT_NE(doctor.out.find("lts__t_sector_hit_rate.pct"), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("a hit rate above 100%"), std::string::npos) << doctor.out;
}

// --- Borderline verdicts by a written rule (point 6) ------------------------------------

TEST(JudgementE2E, ABorderlineUnitWithFewWarpsIsLatencyAndSaysWhichUnitIsBusiest) {
  Metrics m = {{"gpu__time_duration.sum", 300000},
               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 62.1},
               {"l1tex__throughput.avg.pct_of_peak_sustained_active", 62.1},
               {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 20},
               {"sm__warps_active.avg.pct_of_peak_sustained_active", 18},
               {"smsp__issue_active.avg.pct_of_peak_sustained_active", 20},
               {"smsp__warps_eligible.avg.per_cycle_active", 0.4}};
  auto text = run_keet("analyze " + report("borderline.ncu-rep", {{"k", 4096, 256, m}}));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("Bottleneck: LATENCY"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the busiest unit, the L1/TEX cache at 62.1% of peak, is below saturation (70%)"),
            std::string::npos)
      << text.out;
  m.back().second = 2;  // plenty of eligible warps
  m[5].second = 60;
  auto busy = run_keet("analyze " + report("borderline-busy.ncu-rep", {{"k", 4096, 256, m}}));
  EXPECT_NE(busy.out.find("Bottleneck: MEMORY"), std::string::npos) << busy.out;
}

// --- Diff and gate: the change told truly ----------------------------------------------

TEST(JudgementE2E, DiffComparesRatesInPointsPairsTemplateFamiliesAndTotals) {
  const std::string old_name =
      "void cub::CUB_200301_SM_800_NS::detail::transform::transform_kernel<policy1000, int, square>(T1)";
  const std::string new_name =
      "void cub::CUB_300100_SM_800_NS::detail::transform::transform_kernel<policy1200, int, square>(T1)";
  std::string a = report("family-a.ncu-rep", {{old_name,
                                               4096,
                                               256,
                                               {{"gpu__time_duration.sum", 506880},
                                                {"l1tex__t_sector_hit_rate.pct", 0.002},
                                                {"smsp__inst_executed.sum", 1e6}}},
                                              {"steady", 4096, 256, {{"gpu__time_duration.sum", 100000}}}});
  std::string b = report("family-b.ncu-rep", {{new_name,
                                               4096,
                                               256,
                                               {{"gpu__time_duration.sum", 1145000},
                                                {"l1tex__t_sector_hit_rate.pct", 12.4},
                                                {"smsp__inst_executed.sum", 2.8e6}}},
                                              {"steady", 4096, 256, {{"gpu__time_duration.sum", 100000}}}});
  auto text = run_keet("diff " + a + " " + b);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("1 slower"), std::string::npos) << "the changed kernel pairs: " << text.out;
  EXPECT_NE(text.out.find("function family"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("kernel time 606.88 us -> 1.245 ms (+105.1%)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("L1 hit rate: 0.0% -> 12.4% (+12.4 points)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("+619900"), std::string::npos) << "no relative change of a rate";
  auto grew = text.out.find("what grew:");
  ASSERT_NE(grew, std::string::npos) << text.out;
  EXPECT_NE(text.out.substr(grew, text.out.find('\n', grew) - grew).find("instructions executed"), std::string::npos)
      << text.out;
  auto j = json::parse(run_keet("diff --format json " + a + " " + b).out);
  ASSERT_EQ(j["pairs"].size(), 2u);
  bool family = false;
  for (const auto& p : j["pairs"]) {
    family |= p["paired_by"] == "family";
    for (const auto& m : p["metrics"])
      if (m["unit"] == "%") EXPECT_TRUE(m.contains("points")) << m.dump();
  }
  EXPECT_TRUE(family);
  EXPECT_TRUE(j["unmatched_before"].empty());
}

TEST(JudgementE2E, DiffOfDifferentWorkComparesPerInstruction) {
  std::string a = report("work-a.ncu-rep",
                         {{"scale", 64, 256, {{"gpu__time_duration.sum", 10000}, {"smsp__inst_executed.sum", 1e5}}}});
  std::string b =
      report("work-b.ncu-rep",
             {{"scale", 4096, 256, {{"gpu__time_duration.sum", 500000}, {"smsp__inst_executed.sum", 6.4e6}}}});
  auto text = run_keet("diff " + a + " " + b);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("the launches do different work (64.00x the threads, 64.00x the instructions): per "
                          "instruction the after kernel is 1.28x faster"),
            std::string::npos)
      << text.out;
}

TEST(JudgementE2E, GateTakesABaselineReportAndNamesEveryJunitCaseOnce) {
  std::string old_report = report("gate-old.ncu-rep", {{"step", 4096, 256, {{"gpu__time_duration.sum", 100000}}},
                                                       {"step", 4096, 256, {{"gpu__time_duration.sum", 100000}}}});
  std::string new_report = report("gate-new.ncu-rep", {{"step", 4096, 256, {{"gpu__time_duration.sum", 100000}}},
                                                       {"step", 4096, 256, {{"gpu__time_duration.sum", 150000}}}});
  std::string db = shell_quote(temp_path("gate-no-history.sqlite"));
  auto pass = run_keet("gate " + old_report + " --baseline-report " + old_report + " --db " + db);
  EXPECT_EQ(pass.rc, 0) << pass.out << pass.err;
  EXPECT_FALSE(std::filesystem::exists(temp_path("gate-no-history.sqlite"))) << "no history store is made";
  auto fail = run_keet("gate " + new_report + " --baseline-report " + old_report + " --format junit --db " + db);
  EXPECT_EQ(fail.rc, 1) << fail.out << fail.err;
  EXPECT_EQ(count(fail.out, "name=\"step"), 2u) << fail.out;
  EXPECT_NE(fail.out.find(" launch 1\""), std::string::npos) << fail.out;
  EXPECT_NE(fail.out.find(" launch 2\""), std::string::npos) << fail.out;
  EXPECT_NE(fail.out.find("baseline report"), std::string::npos) << fail.out;
  auto both = run_keet("gate " + new_report + " --baseline-report " + old_report + " --baseline main --db " + db);
  EXPECT_EQ(both.rc, 2) << both.err;
  EXPECT_NE(both.err.find("give one of them"), std::string::npos) << both.err;
}

// --- Fixtures that show each case -----------------------------------------------------

std::optional<std::string> fixture(const std::string& rel) {
  auto dir = shared_dir();
  if (!dir) return std::nullopt;
  std::string path = *dir + "/fixtures/public/" + rel;
  if (!std::filesystem::exists(path)) return std::nullopt;
  return path;
}

TEST(JudgementFixtures, CubKernelsAndTheirFillBesideTheWork) {
  auto path = fixture("jestes15__EE384_FinalProject/83e15df/profile_output.ncu-rep");
  if (!path) GTEST_SKIP() << "../shared/fixtures/public is absent";
  auto j = analysis_json(shell_quote(*path));
  std::set<std::string> primitives;
  for (const auto& k : j["kernels"])
    if (k["library"] == "CUB/Thrust") {
      primitives.insert(k["primitive"].get<std::string>());
      for (const auto& a : k["library_advice"]) EXPECT_EQ(a.get<std::string>().find("radix"), std::string::npos);
    }
  EXPECT_EQ(primitives, (std::set<std::string>{"fill", "scan"}));
  ASSERT_FALSE(j["whole_report"]["comparisons"].empty());
  EXPECT_EQ(j["whole_report"]["comparisons"][0]["kind"], "setup_share");
}

TEST(JudgementFixtures, TheCurandSetupKernelIsNamedAndTheTinyOneSaysItsShare) {
  auto path = fixture("BrennenTaylor__Twisty/profile.nsight-cuprof-report");
  if (!path) GTEST_SKIP() << "../shared/fixtures/public is absent";
  auto text = run_keet("analyze " + shell_quote(*path));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("cuRAND state setup (curand_init) kernel"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("This kernel is 0.0% of the analysed GPU time"), std::string::npos) << text.out;
}

TEST(JudgementFixtures, SobelFloatsNotSelectedIsLowAndTheEsmmSeriesMeetsCublas) {
  if (auto examples = oracle_examples_2024()) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(*examples)) {
      if (e.path().filename().string().find("sobel") == std::string::npos || e.path().extension() != ".ncu-rep")
        continue;
      auto j = analysis_json(shell_quote(e.path().string()) + " --top 0");
      for (const auto& k : j["kernels"])
        for (const auto& f : k["findings"])
          if (f["id"] == "latency.stall.not_selected") EXPECT_EQ(f["severity"], "low") << e.path();
    }
  }
  auto esmm = fixture("AveryClapp__ESMM-Research/049ec61/profile.ncu-rep");
  if (!esmm) GTEST_SKIP() << "../shared/fixtures/public is absent";
  auto j = analysis_json(shell_quote(*esmm));
  ASSERT_FALSE(j["whole_report"]["comparisons"].empty());
  EXPECT_NE(j["whole_report"]["comparisons"][0]["text"].get<std::string>().find("as long as cuBLAS's GEMM"),
            std::string::npos);
}

}  // namespace
}  // namespace keet::judgement_e2e
