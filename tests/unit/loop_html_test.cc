// The self-contained HTML pages: content, no outside references, and a real
// render in headless Chromium (skipped when chromium is not installed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/engine.h"
#include "readers/reader.h"
#include "render/html.h"
#include "render/html_parts.h"
#include "support/testing.h"
#include "util/pattern.h"

namespace keet::render {
namespace {

namespace fs = std::filesystem;

model::Metric metric(std::string name, double v) { return {std::move(name), model::Value::of_double(v), {}, ""}; }

model::Report sample_report() {
  model::Report r;
  r.path = "hand.ncu-rep";
  model::Kernel k;
  k.index = 0;
  k.demangled = "scale<float>(float*, int)";
  k.grid = {1024, 1, 1};
  k.block = {128, 1, 1};
  k.metrics = {metric("gpu__time_duration.sum", 250000),
               metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", 31.5),
               metric("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 88.3),
               metric("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 12.5),
               metric("smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio", 4.25),
               metric("smsp__average_warps_issue_stalled_not_issued_per_issue_active.ratio", 99),
               metric("dram__bytes.sum.peak_sustained", 48),
               metric("dram__cycles_elapsed.avg.per_second", 6e9),
               metric("dram__bytes.sum.per_second", 2.5e11),
               metric("sm__cycles_elapsed.avg.per_second", 1.5e9),
               metric("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 3328),
               metric("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 40)};
  k.metrics.push_back({"device__attribute_display_name", model::Value::of_string("NVIDIA RTX A2000"), {}, ""});
  r.kernels.push_back(k);
  return r;
}

analysis::Diagnosis sample_diagnosis() {
  analysis::KernelDiagnosis kd;
  kd.index = 0;
  kd.display = "scale<float>(float*, int)";
  kd.grid = {1024, 1, 1};
  kd.block = {128, 1, 1};
  kd.duration_ns = 250000;
  kd.device = "NVIDIA RTX A2000";
  kd.compute_capability = "8.6";
  kd.bottleneck = {analysis::BottleneckClass::Memory, 0.9, {}, "DRAM moves 88% of peak"};
  analysis::Finding f;
  f.id = "memory.uncoalesced_global";
  f.severity = analysis::Severity::High;
  f.title = "Global loads touch 3x the sectors they need";
  f.explanation = "Each warp's load <spans> 12 sectors instead of 4.";
  f.evidence = {{"derived:sectors_per_request", 12, "sector", "> 4", "sectors / requests"}};
  f.estimated_speedup = 1.8;
  f.advice = {"Use a structure of arrays"};
  f.source = {{"scale.cu", 42, 0.61, "out[i] = in[3 * i] * s;"}};
  kd.findings = {f};
  kd.limiter.units = {{"dram", "DRAM", analysis::BottleneckClass::Memory, 88.3, {}},
                      {"pipe_fma", "FMA pipe", analysis::BottleneckClass::Compute, 12.5, {}}};
  kd.data_quality.stall_unit = "warps per issued instruction";
  kd.data_quality.stall_reasons = {"long_scoreboard", "wait"};
  kd.data_quality.stall_values = {6.5, 1.2};
  return {"hand.ncu-rep", "ncu-rep", "2022.3", {kd}};
}

// src=, href= and CSS url() pointing anywhere: a self-contained page has none.
bool references_outside(const std::string& html) {
  static const Pattern ref =
      Pattern::compile(R"((src|href)\s*=|url\s*\(|@import|<script|<link|<iframe|<img)", {.case_insensitive = true})
          .value();
  return ref.search(html);
}

TEST(LoopHtml, ReportHasEverySection) {
  auto page = html_report(sample_report(), sample_diagnosis());
  for (std::string want :
       {"Kernel ranking", "scale&lt;float&gt;(float*, int)", "memory-bound", "Unit utilisation", "88.3%", "Roofline",
        "<svg class='roofline'", "long_scoreboard", "Warp stalls (warps per issued instruction)",
        "memory.uncoalesced_global", "1.80x", "derived:sectors_per_request", "sectors / requests",
        "Use a structure of arrays", "scale.cu:42", "out[i] = in[3 * i] * s;", "61.0%"})
    EXPECT_NE(page.find(want), std::string::npos) << want;
  EXPECT_EQ(page.find("not_issued"), std::string::npos);     // not a stall reason
  EXPECT_NE(page.find("&lt;spans&gt;"), std::string::npos);  // text is escaped
  EXPECT_FALSE(references_outside(page));
}

TEST(LoopHtml, RooflineFromReportMetrics) {
  auto r = html::roofline_of(sample_report().kernels[0]);
  ASSERT_TRUE(r.drawable());
  EXPECT_DOUBLE_EQ(*r.peak_bandwidth, 48 * 6e9);
  EXPECT_DOUBLE_EQ(*r.peak_fp32, 2 * 3328 * 1.5e9);
  EXPECT_DOUBLE_EQ(*r.fp32, 80 * 1.5e9);
  EXPECT_FALSE(r.fp64);
  EXPECT_FALSE(html::roofline_of(model::Kernel{}).drawable());
}

TEST(LoopHtml, DiffPage) {
  compare::KernelSnapshot a{
      {0, "k<int>", "", {1, 1, 1}, {32, 1, 1}, "G", 2000}, "memory", {}, {{"memory.atomics", "t", "high", 1.5}}};
  compare::KernelSnapshot b = a;
  b.duration_ns = 1000;
  b.findings.clear();
  auto page = html_diff(compare::diff({a}, {b}, {}));
  EXPECT_NE(page.find("k&lt;int&gt;"), std::string::npos);
  EXPECT_NE(page.find("badge faster"), std::string::npos);
  EXPECT_NE(page.find("memory.atomics: predicted 1.50x, measured 2.00x"), std::string::npos);
  EXPECT_FALSE(references_outside(page));
}

using testing::chromium;
using testing::render_in_chromium;

TEST(LoopHtmlChromium, RendersOfflineWithContent) {
  auto browser = chromium();
  if (!browser) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  auto dom = render_in_chromium(*browser, html_report(sample_report(), sample_diagnosis()), "loop-html-hand");
  EXPECT_NE(dom.find("Kernel ranking"), std::string::npos);
  EXPECT_NE(dom.find("memory.uncoalesced_global"), std::string::npos);
  EXPECT_NE(dom.find("<svg class=\"roofline\""), std::string::npos);
  EXPECT_FALSE(references_outside(dom)) << "the rendered DOM refers to something outside the page";
}

// NVIDIA's sample report through the real engine, rendered in Chromium.
TEST(LoopHtmlChromium, SampleReportThroughEngine) {
  KEET_REQUIRE_SHARED();
  auto dir = testing::oracle_examples();
  auto browser = chromium();
  if (!dir || !browser) GTEST_SKIP() << "needs the ncu-oracle examples and chromium";
  auto report = readers::load_file(*dir + "/addConstDouble3.ncu-rep");
  ASSERT_TRUE(report) << report.error().message;
  std::vector<const model::Kernel*> all;
  for (const auto& k : report->kernels) all.push_back(&k);
  auto html = html_report(*report, analysis::analyze(*report, all));
  EXPECT_FALSE(references_outside(html));
  auto dom = render_in_chromium(*browser, html, "loop-html-sample");
  EXPECT_NE(dom.find("addConstDouble3"), std::string::npos);
  EXPECT_NE(dom.find("FP64"), std::string::npos) << "roofline should plot the FP64 work";
}

}  // namespace
}  // namespace keet::render
