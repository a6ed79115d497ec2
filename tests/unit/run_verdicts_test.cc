// The run checks the timeline builder makes as events stream past (the
// operations Nsight Systems' six CUDA rules would list, with their
// thresholds) and the verdicts data/rules/timeline.json draws from them, on
// exports the test writes.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/run_verdicts.h"
#include "model/timeline.h"
#include "readers/nsys_export.h"
#include "render/timeline.h"
#include "support/testing.h"
#include "support/timeline_writer.h"

namespace keet {
namespace {

using testing::TimelineWriter;
using Transfer = TimelineWriter::Transfer;

constexpr int64_t kMs = 1'000'000;

model::TimelineSummary read(const TimelineWriter& w, const std::string& name) {
  auto path = testing::temp_path(name);
  w.write(path);
  model::TimelineBuilder b(analysis::run_limits());
  auto ok = readers::read_nsys_export(path, b);
  EXPECT_TRUE(ok) << (ok ? "" : readers::timeline_error_message(ok.error()));
  return std::move(b).finish();
}

const analysis::RunVerdict* verdict(const analysis::RunDiagnosis& d, std::string_view id) {
  auto it = std::ranges::find(d.verdicts, id, &analysis::RunVerdict::id);
  return it == d.verdicts.end() ? nullptr : &*it;
}

// Copies and memsets of every kind NVIDIA's rules tell apart.
TimelineWriter transfers() {
  TimelineWriter w;
  w.kernel({"k(float *)", "k", 1 * kMs, 2 * kMs});
  w.memcpy(Transfer{.kind = 1,
                    .start = 3 * kMs,
                    .end = 18 * kMs,
                    .bytes = 67'108'864,
                    .api = "cudaMemcpy_v3020",
                    .src = 0,
                    .dst = 2});  // synchronous, pageable: flagged
  w.memcpy(Transfer{.kind = 1,
                    .start = 19 * kMs,
                    .end = 19 * kMs + 5000,
                    .bytes = 64000,
                    .api = "cudaMemcpy_v3020",
                    .src = 0,
                    .dst = 2});  // a small host-to-device copy: left out
  w.memcpy(Transfer{.kind = 8,
                    .start = 20 * kMs,
                    .end = 21 * kMs,
                    .bytes = 1 << 20,
                    .api = "cudaMemcpy_v3020",
                    .src = 2,
                    .dst = 2,
                    .src_device = 0,
                    .dst_device = 0});  // within one device: left out
  w.memcpy(Transfer{.kind = 2,
                    .start = 22 * kMs,
                    .end = 24 * kMs,
                    .bytes = 1 << 22,
                    .api = "cudaMemcpyAsync_v3020",
                    .src = 2,
                    .dst = 0});  // asynchronous to pageable memory: flagged
  w.memcpy(Transfer{.kind = 2,
                    .start = 25 * kMs,
                    .end = 26 * kMs,
                    .bytes = 1 << 22,
                    .api = "cudaMemcpyAsync_v3020",
                    .src = 2,
                    .dst = 1});  // pinned: fine
  w.memset(Transfer{.start = 27 * kMs, .end = 28 * kMs, .bytes = 4096, .api = "cudaMemset_v3020", .dst = 1});
  w.memset(Transfer{.start = 29 * kMs, .end = 30 * kMs, .bytes = 4096, .api = "cudaMemset_v3020", .dst = 2});
  w.memset(Transfer{.start = 31 * kMs, .end = 32 * kMs, .bytes = 4096, .api = "cudaMemsetAsync_v3020", .dst = 4});
  w.api_call("cudaDeviceSynchronize_v3020", 33 * kMs, 40 * kMs);
  w.api_call("cudaStreamSynchronize_v3020", 41 * kMs, 41 * kMs + 100);
  w.api_call("cudaLaunchKernel_v7000", 42 * kMs, 42 * kMs + 100);
  return w;
}

TEST(RunChecks, CopiesMemsetsAndSyncCallsAsNsysRulesPickThem) {
  auto t = read(transfers(), "transfers.sqlite");
  const auto& c = t.checks;
  ASSERT_EQ(c.sync_copies.count, 1u);
  EXPECT_EQ(c.sync_copies.longest[0].start, 3 * kMs);
  EXPECT_EQ(c.sync_copies.longest[0].name, "cudaMemcpy");
  EXPECT_EQ(c.sync_copies.longest[0].src, model::HostMemory::Pageable);
  EXPECT_EQ(c.sync_copies.longest[0].direction, "Host-to-Device");
  ASSERT_EQ(c.pageable_async_copies.count, 1u);
  EXPECT_EQ(c.pageable_async_copies.longest[0].start, 22 * kMs);
  ASSERT_EQ(c.sync_memsets.count, 1u);
  EXPECT_EQ(c.sync_memsets.longest[0].start, 27 * kMs);
  ASSERT_EQ(c.sync_calls.count, 2u);
  EXPECT_EQ(c.sync_calls.longest[0].name, "cudaDeviceSynchronize");
  EXPECT_EQ(c.sync_calls.total_ns, 7 * kMs + 100);
}

TEST(RunVerdicts, HostBlockingCopiesAndCallsBecomeVerdictsWithTheirCost) {
  auto t = read(transfers(), "transfers-verdicts.sqlite");
  auto d = analysis::diagnose_run(t);
  const auto* copy = verdict(d, "sync-memcpy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->nsys_rule, "cuda_memcpy_sync");
  ASSERT_TRUE(copy->cost_ns);
  EXPECT_DOUBLE_EQ(*copy->cost_ns, 15.0 * kMs);
  EXPECT_NE(copy->title.find("1 synchronous copy call(s) hold the host for 15.000 ms"), std::string::npos)
      << copy->title;
  EXPECT_NE(copy->explanation.find("1 of them read or write pageable"), std::string::npos) << copy->explanation;
  EXPECT_EQ(verdict(d, "host-sync"), nullptr);  // two calls: the waits a program needs
  ASSERT_NE(verdict(d, "pageable-async-memcpy"), nullptr);
  ASSERT_NE(verdict(d, "sync-memset"), nullptr);
  for (const auto& v : d.verdicts) {
    EXPECT_FALSE(v.title.empty()) << v.id;
    EXPECT_FALSE(v.advice.empty()) << v.id;
  }
  // Largest cost first.
  for (size_t i = 1; i < d.verdicts.size(); ++i)
    EXPECT_GE(d.verdicts[i - 1].cost_ns.value_or(-1), d.verdicts[i].cost_ns.value_or(-1));
  auto check = std::ranges::find(d.checks, "cuda_memcpy_sync", &analysis::RunCheck::nsys_rule);
  ASSERT_NE(check, d.checks.end());
  EXPECT_EQ(check->verdict, "sync-memcpy");
}

// Two 30 ms kernels 600 ms apart: one gap past nsys's 500 ms, and the 30
// slices of the 660 ms range show one stretch in use 2.6% (16 ms of 616).
TimelineWriter idle_run() {
  TimelineWriter w;
  w.kernel({"a(float *)", "a", 1 * kMs, 31 * kMs});
  w.kernel({"b(float *)", "b", 631 * kMs, 661 * kMs});
  return w;
}

TEST(RunChecks, GapsPastTheLimitAndLowUseSlicesAsNsysComputesThem) {
  auto t = read(idle_run(), "idle.sqlite");
  ASSERT_EQ(t.checks.gaps.count, 1u);
  EXPECT_EQ(t.checks.gaps.longest[0].start, 31 * kMs);
  EXPECT_EQ(t.checks.gaps.longest[0].end, 631 * kMs);
  ASSERT_EQ(t.checks.low_use.count, 1u);
  const auto& low = t.checks.low_use.longest[0];
  EXPECT_EQ(low.start, 23 * kMs);
  EXPECT_EQ(low.end, 639 * kMs);
  EXPECT_DOUBLE_EQ(low.in_use_pct.value_or(-1), 2.6);
  EXPECT_EQ(t.gpu_busy_ns, 60 * kMs);
  auto d = analysis::diagnose_run(t);
  ASSERT_NE(verdict(d, "gpu-gaps"), nullptr);
  ASSERT_NE(verdict(d, "gpu-low-use"), nullptr);
  EXPECT_DOUBLE_EQ(*verdict(d, "gpu-gaps")->cost_ns, 600.0 * kMs);
  // No CUDA API trace: nothing said of what the host did in the gap.
  EXPECT_EQ(verdict(d, "gpu-gaps")->explanation.find("synchronisation"), std::string::npos)
      << verdict(d, "gpu-gaps")->explanation;
}

// The kernel after the gap was launched 600 ms into it, and the host sat in
// a synchronisation call for 5 ms of it: the GPU waited on other host work.
TEST(RunChecks, AGapSaysWhenTheHostIssuedTheNextWork) {
  TimelineWriter w;
  w.kernel({"a(float *)", "a", 1 * kMs, 31 * kMs});
  w.kernel({"b(float *)", "b", 700 * kMs, 730 * kMs, 0, 7, 1, 32, 631 * kMs});
  w.api_call("cudaDeviceSynchronize_v3020", 35 * kMs, 40 * kMs);
  auto t = read(w, "gap-cause.sqlite");
  ASSERT_EQ(t.checks.gaps.count, 1u);
  const auto& gap = t.checks.gaps.longest[0];
  EXPECT_EQ(gap.issued_after_ns, 600 * kMs);
  EXPECT_EQ(gap.host_sync_ns, 5 * kMs);
  const auto* v = verdict(analysis::diagnose_run(t), "gpu-gaps");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->explanation.find("ends a gap 90% of the way into it"), std::string::npos) << v->explanation;
  EXPECT_NE(v->explanation.find("synchronisation calls for 1% of the gap time"), std::string::npos) << v->explanation;
  EXPECT_NE(render::timeline_text(t, {}).find("next work issued 600.000 ms in  host in sync calls 5.000 ms"),
            std::string::npos);
}

TEST(RunChecks, ProfilerOverheadFillsAGapAsNsysCountsIt) {
  auto w = idle_run();
  w.overhead(300 * kMs, 301 * kMs);
  w.overhead(400 * kMs, 401 * kMs, "some other overhead");  // not one nsys counts
  auto t = read(w, "overhead.sqlite");
  EXPECT_EQ(t.checks.gaps.count, 0u);  // 269 ms and 330 ms, both under 500
  EXPECT_EQ(t.gpu_busy_ns, 60 * kMs);  // the profiler's own time is not the program's
}

// The tensoriterator fixture's shape: one profiler-overhead range (a buffer
// flush) spans the whole stretch of kernels. GPU busy is still the union of
// the kernels and copies, not the part the overhead did not cover.
TEST(RunChecks, AnOverheadSpanningTheKernelsHidesNoneOfTheirBusyTime) {
  TimelineWriter w;
  w.memcpy(Transfer{.kind = 1, .start = 1 * kMs, .end = 3 * kMs, .bytes = 1 << 20, .api = "cudaMemcpy_v3020"});
  for (int i = 0; i < 10; ++i) w.kernel({"step(float *)", "step", (10 + 10 * i) * kMs, (19 + 10 * i) * kMs});
  w.kernel({"overlap(float *)", "overlap", 15 * kMs, 16 * kMs});  // inside step's first launch: counted once
  w.overhead(9 * kMs, 108 * kMs);
  auto t = read(w, "overhead-spanning.sqlite");
  EXPECT_EQ(t.gpu_busy_ns, 2 * kMs + 10 * 9 * kMs);
}

TEST(RunVerdicts, TheHotKernelComesWithTheCommandThatProfilesIt) {
  TimelineWriter w;
  for (int i = 0; i < 4; ++i) w.kernel({"solve(float *)", "solve", (10 + i * 10) * kMs, (18 + i * 10) * kMs});
  w.kernel({"init()", "init", 1 * kMs, 2 * kMs});
  w.command({"./gaussian", "-s", "4096", "it's"});
  auto t = read(w, "hot.sqlite");
  EXPECT_EQ(t.meta.command, (std::vector<std::string>{"./gaussian", "-s", "4096", "it's"}));
  auto d = analysis::diagnose_run(t);
  const auto* hot = verdict(d, "hot-kernel");
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->subject, "solve(float *)");
  ASSERT_EQ(hot->commands.size(), 2u);
  EXPECT_EQ(hot->commands[0], "keet profile -k 'regex:^solve$' -c 1 -- ./gaussian -s 4096 'it'\\''s'");
  EXPECT_EQ(hot->commands[1], "ncu -k 'regex:^solve$' -c 1 --set full -o solve ./gaussian -s 4096 'it'\\''s'");
  EXPECT_FALSE(hot->cost_ns);  // a pointer to the next step, not a cost
}

TEST(RunVerdicts, ShortKernelsThatLeaveTheirStreamIdleAreLaunchBound) {
  TimelineWriter w;
  for (int i = 0; i < 1200; ++i) w.kernel({"tiny()", "tiny", 1'000 + i * 10'000, 1'000 + i * 10'000 + 3'000});
  auto t = read(w, "tiny.sqlite");
  auto d = analysis::diagnose_run(t);
  const auto* v = verdict(d, "launch-bound");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->title.find("1200 short kernels (3 µs on average) leave their stream idle 70%"), std::string::npos)
      << v->title;
  EXPECT_EQ(v->subject, "device 0 stream 7");
}

// ...the cost there: 3,300 cheap synchronisations are not "too few".
TEST(RunVerdicts, ManyCheapSynchronisationsAreQuietForTheirCost) {
  TimelineWriter w;
  for (int i = 0; i < 3300; ++i) {
    int64_t t = (1 + 3 * i) * kMs;
    w.kernel({"k()", "k", t, t + 2 * kMs, 0, 7, 1, 32, t - 1000});
    w.api_call("cudaStreamSynchronize_v3020", t + 100, t + 2 * kMs + 100);
  }
  auto t = read(w, "cheap-syncs.sqlite");
  auto d = analysis::diagnose_run(t);
  EXPECT_EQ(verdict(d, "host-sync"), nullptr);
  auto check = std::ranges::find(d.checks, "cuda_api_sync", &analysis::RunCheck::nsys_rule);
  ASSERT_NE(check, d.checks.end());
  EXPECT_NE(check->quiet.find("3300 synchronisation calls wait"), std::string::npos) << check->quiet;
  EXPECT_NE(check->quiet.find("under the 1% of the run a verdict needs"), std::string::npos) << check->quiet;
  EXPECT_EQ(check->quiet.find("fewer than"), std::string::npos) << check->quiet;
}

TEST(RunVerdicts, AQuietCheckSaysWhy) {
  TimelineWriter w;
  w.kernel({"k()", "k", 1 * kMs, 1000 * kMs});
  w.api_call("cudaDeviceSynchronize_v3020", 1000 * kMs, 1000 * kMs + 10'000);
  auto t = read(w, "quiet.sqlite");
  auto d = analysis::diagnose_run(t);
  EXPECT_EQ(verdict(d, "host-sync"), nullptr);
  auto check = std::ranges::find(d.checks, "cuda_api_sync", &analysis::RunCheck::nsys_rule);
  ASSERT_NE(check, d.checks.end());
  EXPECT_TRUE(check->verdict.empty());
  // The sentence names the limit the run did not reach: the count here...
  EXPECT_NE(check->quiet.find("1 synchronisation call(s) wait 10.00 us in all: fewer than the 100 a verdict needs. "
                              "That is 0.00% of the run."),
            std::string::npos)
      << check->quiet;
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("Checked, below the level worth acting on:"), std::string::npos) << text;
}

// A loop that launches a 20 us kernel and waits for it, 500 times: each
// wait drains the queue and the GPU idles for a launch latency (10 us).
TEST(RunVerdicts, FrequentHostSynchronisationCostsOneLaunchLatencyEach) {
  TimelineWriter w;
  for (int i = 0; i < 500; ++i) {
    int64_t t0 = 1'000'000 + i * 40'000;
    w.kernel({"step()", "step", t0 + 10'000, t0 + 30'000, 0, 7, 1, 32, t0});
    w.api_call("cudaDeviceSynchronize_v3020", t0 + 3'000, t0 + 31'000);
  }
  auto t = read(w, "sync-loop.sqlite");
  auto d = analysis::diagnose_run(t);
  const auto* v = verdict(d, "host-sync");
  ASSERT_NE(v, nullptr);
  ASSERT_TRUE(v->cost_ns);
  EXPECT_NEAR(*v->cost_ns, 500 * 10'000.0, 1);
  EXPECT_NE(v->title.find("synchronises with the GPU 500 times and waits 14.000 ms"), std::string::npos) << v->title;
}

TEST(RunVerdicts, TheRuleDataLoadsWholly) {
  TimelineWriter w;
  w.kernel({"k()", "k", 1 * kMs, 2 * kMs});
  auto t = read(w, "rules.sqlite");
  auto d = analysis::diagnose_run(t);
  ASSERT_EQ(d.checks.size(), 7u);  // one per nsys analyze CUDA rule, and KEET's copy overlap
  for (const auto& c : d.checks) EXPECT_NE(c.ops, nullptr) << c.list;
  EXPECT_EQ(std::ranges::count(d.checks, "", &analysis::RunCheck::nsys_rule), 1);
  EXPECT_EQ(analysis::run_limits().gap_ns, 500 * kMs);
  EXPECT_EQ(analysis::run_limits().chunks, 30);
}

// A table the export lacks is "none happened" when nsys traced that kind of
// event, and "not traced, this option records it" when it did not.
TEST(RunReport, WhatWasNotRecordedSaysWhetherItWasTraced) {
  TimelineWriter w;
  w.kernel({"k()", "k", 1 * kMs, 2 * kMs});
  w.traced({"Cuda", "NvtxEvents"});
  auto t = read(w, "not-recorded.sqlite");
  EXPECT_EQ(t.meta.traced, (std::vector<std::string>{"Cuda", "NvtxEvents"}));
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("memsets (traced: the program made none)"), std::string::npos) << text;
  EXPECT_NE(text.find("NVTX ranges (traced: the program marks no range"), std::string::npos) << text;
  EXPECT_NE(text.find("OS runtime calls (not traced: `nsys profile --trace=osrt` records them)"), std::string::npos)
      << text;
  auto doc = render::timeline_json(t, {});
  ASSERT_TRUE(doc["not_recorded"].is_array());
  bool osrt = false;
  for (const auto& n : doc["not_recorded"])
    if (n["table"] == "OSRT_API") osrt = n["traced"] == false && n["record_with"] == "nsys profile --trace=osrt";
  EXPECT_TRUE(osrt) << doc["not_recorded"].dump();

  TimelineWriter unknown;  // no META_DATA_CAPTURE: keet cannot tell
  unknown.kernel({"k()", "k", 1 * kMs, 2 * kMs});
  auto u = read(unknown, "not-said.sqlite");
  EXPECT_NE(render::timeline_text(u, {}).find("NVTX ranges (the export does not say whether nsys traced them"),
            std::string::npos);
}

// The HTML picture: a lane per device for kernels and one for copies, the
// gap and the low-use stretch drawn over the kernels, the hot kernel named;
// rendered by headless Chromium, whose screenshot stays in build/test-artifacts.
TEST(RunChart, LanesGapsAndTheHotKernelInChromium) {
  auto w = idle_run();
  w.memcpy(Transfer{
      .kind = 1, .start = 32 * kMs, .end = 40 * kMs, .bytes = 1 << 24, .api = "cudaMemcpy_v3020", .src = 0, .dst = 2});
  auto t = read(w, "chart.sqlite");
  auto html = render::timeline_html(t, {});
  EXPECT_NE(html.find(">device 0 kernels<"), std::string::npos);
  EXPECT_NE(html.find(">device 0 copies<"), std::string::npos);
  EXPECT_NE(html.find("class='gap'"), std::string::npos);
  EXPECT_NE(html.find("class='low-use'"), std::string::npos);
  EXPECT_NE(html.find("Hot kernel: a (50.0% of GPU kernel time)"), std::string::npos);
  EXPECT_NE(html.find("class='hot'"), std::string::npos) << "the hot kernel's row";
  EXPECT_NE(html.find("Verdicts for the run"), std::string::npos);
  auto browser = testing::chromium();
  if (!browser) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  auto dom = testing::render_in_chromium(*browser, html, "timeline-chart");
  EXPECT_NE(dom.find("class=\"gap\""), std::string::npos);
  EXPECT_NE(dom.find("The GPU sits idle"), std::string::npos);
  EXPECT_NE(dom.find(">hot kernel<"), std::string::npos);
  // The kernels' shares are an SVG of their own, not the page's inline share bar.
  EXPECT_NE(dom.find("<svg class=\"kernel-shares\""), std::string::npos);
}

// Kernels at 10-20, 30-40 and 50-60 ms; copies at 5-12, 20-28, 38-46 and
// 60-70 ms (33 ms). Between the first kernel and the last, no kernel runs beside the
// copies at 20-28 and 40-46 ms (14 ms); the copy before the first kernel and
// the one after the last are left out. Hiding the 14 ms needs 14 ms of the
// 30 ms of kernel time.
TEST(RunChecks, CopiesBetweenKernelsWithNoKernelBesideThemAreExposed) {
  TimelineWriter w;
  for (int from : {10, 30, 50}) w.kernel({"k()", "k", from * kMs, (from + 10) * kMs});
  for (auto [from, to] : {std::pair{5, 12}, {20, 28}, {38, 46}, {60, 70}})
    w.memcpy(Transfer{.kind = 1,
                      .start = from * kMs,
                      .end = to * kMs,
                      .bytes = 1 << 20,
                      .api = "cudaMemcpyAsync_v3020",
                      .src = 1,
                      .dst = 2});
  auto t = read(w, "serial-copies.sqlite");
  const auto& exposed = t.checks.exposed_copies;
  ASSERT_EQ(exposed.count, 2u);
  EXPECT_EQ(exposed.total_ns, 14 * kMs);
  EXPECT_EQ(t.checks.copy_ns, 33 * kMs);
  EXPECT_EQ(t.checks.hideable_ns, 14 * kMs);
  std::vector<std::pair<int64_t, int64_t>> stretches;
  for (const auto& op : exposed.longest) stretches.emplace_back(op.start / kMs, op.end / kMs);
  EXPECT_EQ(stretches, (std::vector<std::pair<int64_t, int64_t>>{{20, 28}, {40, 46}}));
  auto d = analysis::diagnose_run(t);
  const auto* v = verdict(d, "serial-copies");
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->cost_ns.value_or(0), 14.0 * kMs);
  EXPECT_NE(v->title.find("between kernels, copies run with no kernel beside them for 14.000 ms (21.5% of the run)"),
            std::string::npos)
      << v->title;
  EXPECT_NE(v->explanation.find("of the 33.000 ms of copies, 14.000 ms fall between two kernels"), std::string::npos)
      << v->explanation;
  EXPECT_TRUE(v->nsys_rule.empty());  // no nsys rule looks at overlap
  auto json = render::timeline_json(t, {});
  bool listed = false;
  for (const auto& c : json["checks"])
    if (c["list"] == "exposed_copies") listed = c["nsys_rule"].is_null() && c["verdict"] == "serial-copies";
  EXPECT_TRUE(listed) << json["checks"].dump();
}

// Copy in, compute, copy out: nothing to overlap without restructuring the
// whole computation, so no verdict.
TEST(RunChecks, CopiesBeforeTheFirstKernelAndAfterTheLastAreLeftOut) {
  TimelineWriter w;
  w.memcpy(Transfer{
      .kind = 1, .start = 1 * kMs, .end = 20 * kMs, .bytes = 1 << 26, .api = "cudaMemcpy", .src = 0, .dst = 2});
  w.kernel({"k()", "k", 21 * kMs, 80 * kMs});
  w.memcpy(Transfer{
      .kind = 2, .start = 81 * kMs, .end = 99 * kMs, .bytes = 1 << 26, .api = "cudaMemcpy", .src = 2, .dst = 0});
  auto t = read(w, "copy-in-out.sqlite");
  EXPECT_EQ(t.checks.exposed_copies.count, 0u);
  EXPECT_EQ(t.checks.copy_ns, 37 * kMs);
  EXPECT_EQ(verdict(analysis::diagnose_run(t), "serial-copies"), nullptr);
}

// Copies that run while kernels compute cost nothing: no verdict, and the
// check stays empty.
TEST(RunChecks, CopiesHiddenBehindKernelsAreFine) {
  TimelineWriter w;
  w.kernel({"k()", "k", 10 * kMs, 50 * kMs});
  w.memcpy(Transfer{
      .kind = 1, .start = 12 * kMs, .end = 30 * kMs, .bytes = 1 << 20, .api = "cudaMemcpyAsync", .src = 1, .dst = 2});
  auto t = read(w, "hidden-copies.sqlite");
  EXPECT_EQ(t.checks.exposed_copies.count, 0u);
  EXPECT_EQ(t.checks.copy_ns, 18 * kMs);
  EXPECT_EQ(verdict(analysis::diagnose_run(t), "serial-copies"), nullptr);
}

// 16 launches, the last quarter 15% slower than the first: drift under the
// default 20%, and a verdict when the user asks for 10%.
TEST(RunVerdicts, DriftIsJudgedAgainstTheUsersThreshold) {
  TimelineWriter w;
  for (int i = 0; i < 16; ++i) {
    int64_t t0 = (1 + i) * kMs, d = i < 8 ? 100'000 : 115'000;
    w.kernel({"grow()", "grow", t0, t0 + d});
  }
  auto t = read(w, "drift.sqlite");
  EXPECT_EQ(verdict(analysis::diagnose_run(t), "kernel-drift"), nullptr);
  const auto* v = verdict(analysis::diagnose_run(t, {.drift_threshold = 0.1}), "kernel-drift");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->subject, "grow()");
  EXPECT_NE(render::timeline_text(t, {.drift_threshold = 0.1}).find("A kernel gets 15% slower"), std::string::npos);
}

TEST(RunVerdicts, ACleanRunSaysSo) {
  TimelineWriter w;
  for (int i = 0; i < 10; ++i) w.kernel({"k()", "k", (1 + i * 10) * kMs, (11 + i * 10) * kMs});
  w.kernel({"j()", "j", 101 * kMs, 200 * kMs});
  auto t = read(w, "clean.sqlite");
  auto d = analysis::diagnose_run(t);
  EXPECT_TRUE(d.verdicts.empty() || (d.verdicts.size() == 1 && d.verdicts[0].id == "hot-kernel"));
  EXPECT_EQ(t.checks.low_use.count, 0u);
  EXPECT_EQ(t.checks.gaps.count, 0u);
}

// --- The CUDA API, one-time phases, queueing, several GPUs --------------------------

// Every API function's calls summed as nsys stats cuda_api_sum sums them, the
// version suffix dropped; churn is a function called again and again.
TEST(RunVerdicts, ApiCallsAreSummedAndRepeatedAllocationsAreAVerdict) {
  TimelineWriter w;
  w.kernel({"k()", "k", 1 * kMs, 2 * kMs});
  w.kernel({"k()", "k", 399 * kMs, 400 * kMs});
  w.api_call("cudaFree_v3020", 0, 250 * kMs);  // the first call: it creates the context
  for (int i = 0; i < 3000; ++i) w.api_call("cudaMalloc_v3020", 2 * kMs + i * 100'000, 2 * kMs + i * 100'000 + 50'000);
  w.api_call("cudaStreamCreateWithFlags_v5000", 3 * kMs, 3 * kMs + 7000);
  auto t = read(w, "api-churn.sqlite");
  auto malloc = std::ranges::find(t.api, "cudaMalloc", &model::ApiCallStats::name);
  ASSERT_NE(malloc, t.api.end());
  EXPECT_EQ(malloc->time.count, 3000u);
  EXPECT_EQ(malloc->time.total_ns, 3000 * 50'000);
  EXPECT_EQ(t.api.front().name, "cudaFree");  // largest total first
  auto d = analysis::diagnose_run(t);
  const auto* v = verdict(d, "alloc-churn");
  ASSERT_NE(v, nullptr);
  // 3,000 calls of 50 us, each function without its longest call; the
  // one-time cudaFree is no churn.
  ASSERT_TRUE(v->cost_ns);
  EXPECT_NEAR(*v->cost_ns, 2999 * 50'000.0, 1);
  EXPECT_NE(v->title.find("in 3000 repeated calls, 149.950 ms"), std::string::npos) << v->title;
  EXPECT_EQ(v->subject_label, "Calls");
  EXPECT_NE(v->subject.find("cudaMalloc 3000 call(s)"), std::string::npos) << v->subject;
  EXPECT_EQ(verdict(d, "create-churn"), nullptr);
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("CUDA API calls by host time (3 of 3; nsys stats cuda_api_sum)"), std::string::npos) << text;
}

// A few long allocations (pinned host buffers at start-up) are no churn.
TEST(RunVerdicts, AFewLongAllocationsAreNoChurn) {
  TimelineWriter w;
  w.kernel({"k()", "k", 1 * kMs, 2 * kMs});
  w.kernel({"k()", "k", 299 * kMs, 300 * kMs});
  for (int i = 0; i < 4; ++i)
    w.api_call("cudaHostAlloc_v3020", 3 * kMs + i * 40 * kMs, 3 * kMs + i * 40 * kMs + 36 * kMs);
  for (int i = 0; i < 100; ++i) w.api_call("cudaMalloc_v3020", 200 * kMs + i * 1000, 200 * kMs + i * 1000 + 15);
  auto d = analysis::diagnose_run(read(w, "api-few.sqlite"));
  EXPECT_EQ(verdict(d, "alloc-churn"), nullptr);
}

// The gap an NVTX range explains: named, and kept out of the steady state's
// cost when the range marks one-time compilation.
TEST(RunVerdicts, AGapInsideOneTimeCompilationIsNamedAndNotTheSteadyStatesCost) {
  TimelineWriter w;
  w.nvtx("test_outer", 0, 2000 * kMs);
  w.nvtx("FusionKernelRuntime::compileFusionParallel", 10 * kMs, 810 * kMs);
  w.nvtx("executor_utils::Nvrtc::CompileProgram", 20 * kMs, 700 * kMs);
  int64_t t0 = 1 * kMs;
  w.kernel({"k()", "k", t0, t0 + 1000, 0, 7, 1, 32, t0 - 10'000});
  for (int i = 0; i < 1200; ++i) {
    int64_t t = 900 * kMs + i * 50'000;  // 1 us kernels every 50 us: launch-bound
    w.kernel({"k()", "k", t, t + 1000, 0, 7, 1, 32, t - 10'000});
  }
  auto t = read(w, "nvtx-gap.sqlite");
  ASSERT_EQ(t.phases.size(), 1u);  // the two compilation ranges nest
  EXPECT_EQ(t.phases[0].what, "compilation");
  EXPECT_EQ(t.phases[0].name, "FusionKernelRuntime::compileFusionParallel");
  ASSERT_EQ(t.checks.gaps.longest.size(), 1u);
  const auto& gap = t.checks.gaps.longest[0];
  EXPECT_EQ(gap.nvtx, "executor_utils::Nvrtc::CompileProgram");  // the most specific range over half of it
  EXPECT_EQ(gap.phase, "compilation");
  EXPECT_EQ(gap.phase_ns, 800 * kMs);
  auto d = analysis::diagnose_run(t);
  // The gap lies mostly in the one-time phase: the steady state pays only
  // its 99 ms outside.
  const auto* gaps = verdict(d, "gpu-gaps");
  ASSERT_NE(gaps, nullptr);
  ASSERT_TRUE(gaps->cost_ns);
  EXPECT_NEAR(*gaps->cost_ns, static_cast<double>(gap.duration() - 800 * kMs), 1);
  ASSERT_FALSE(gaps->notes.empty());
  EXPECT_NE(gaps->notes[0].find("One-time compilation (NVTX range FusionKernelRuntime::compileFusionParallel"),
            std::string::npos);
  const auto* launch = verdict(d, "launch-bound");
  ASSERT_NE(launch, nullptr);
  ASSERT_TRUE(launch->cost_ns);
  // The steady state's idle: the gap outside the phase and the 1,199 waits of 49 us.
  EXPECT_NEAR(*launch->cost_ns, 99.0 * kMs - 1000 + 1199 * 49'000.0, 1);
  EXPECT_NE(launch->explanation.find("falls inside one-time phases"), std::string::npos) << launch->explanation;
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("inside NVTX executor_utils::Nvrtc::CompileProgram (one-time compilation)"), std::string::npos)
      << text;
}

// A launch made while earlier work still runs on its stream waits in the
// queue: that is no launch latency.
TEST(RunVerdicts, QueueDelayIsNotLaunchLatency) {
  TimelineWriter w;
  w.kernel({"long()", "long", 1 * kMs, 11 * kMs, 0, 7, 1, 32, 1 * kMs - 5000});
  w.kernel(
      {"next()", "next", 11 * kMs + 4000, 12 * kMs, 0, 7, 1, 32, 2 * kMs});  // called 9 ms before its stream was free
  auto t = read(w, "queue.sqlite");
  EXPECT_EQ(t.latency.count, 2u);
  EXPECT_EQ(t.latency.max_ns, 5000);
  EXPECT_EQ(t.latency.min_ns, 4000);
  ASSERT_EQ(t.queue.count, 1u);
  EXPECT_EQ(t.queue.max_ns, 9 * kMs);
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("Queue delay (launched while earlier work still ran on its stream"), std::string::npos) << text;
}

// No verdict costs more than the run it is about.
TEST(RunVerdicts, NoCostIsLargerThanTheSpan) {
  TimelineWriter w;
  for (int i = 0; i < 200; ++i) {
    int64_t t = 1000 + i * 1000;
    w.kernel({"k()", "k", t, t + 100, 0, 7, 1, 32, t - 800});  // 800 ns launch latency, 200 us span
    for (int j = 0; j < 5; ++j) w.api_call("cudaDeviceSynchronize_v3020", t + 100 + j * 10, t + 105 + j * 10);
  }
  auto t = read(w, "capped.sqlite");
  auto d = analysis::diagnose_run(t);
  for (const auto& v : d.verdicts)
    if (v.cost_ns) EXPECT_LE(*v.cost_ns, static_cast<double>(t.span_ns())) << v.id;
  const auto* sync = verdict(d, "host-sync");
  ASSERT_NE(sync, nullptr);  // 1,000 refills of 800 ns: 800 us, over a 200 us run
  EXPECT_EQ(*sync->cost_ns, static_cast<double>(t.span_ns()));
}

// Two GPUs: device 1's all-reduce runs alone while device 0 computes beside
// its own; device 0 computes far more, device 1 waits.
TEST(RunVerdicts, SeveralGpusWithNcclSayWhichWaitsAndHowMuchCommunicationIsExposed) {
  TimelineWriter w;
  const std::string allreduce = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm *, unsigned long, ncclWork *)";
  for (int step = 0; step < 10; ++step) {
    int64_t t = 1 * kMs + step * 10 * kMs;
    w.kernel({"gemm()", "gemm", t, t + 8 * kMs, 0, 7});
    w.kernel({allreduce, "ncclKernel_AllReduce_RING_LL_Sum_float", t + 6 * kMs, t + 9 * kMs, 0, 13});
    w.kernel({"gemm()", "gemm", t, t + 2 * kMs, 1, 7});
    w.kernel({allreduce, "ncclKernel_AllReduce_RING_LL_Sum_float", t + 2 * kMs, t + 9 * kMs, 1, 13});
  }
  auto t = read(w, "nccl.sqlite");
  ASSERT_EQ(t.device_use.size(), 2u);
  const auto& d0 = t.device_use[0];
  const auto& d1 = t.device_use[1];
  EXPECT_EQ(d0.nccl_launches, 10u);
  EXPECT_EQ(d0.nccl_ns, 30 * kMs);
  EXPECT_EQ(d0.nccl_overlap_ns, 20 * kMs);  // 2 of each 3 ms beside the GEMM
  EXPECT_EQ(d1.nccl_ns, 70 * kMs);
  EXPECT_EQ(d1.nccl_overlap_ns, 0);
  EXPECT_EQ(d0.kernel_ns, 90 * kMs);
  auto d = analysis::diagnose_run(t);
  const auto* nccl = verdict(d, "nccl-exposed");
  ASSERT_NE(nccl, nullptr);
  EXPECT_NE(nccl->title.find("device 1: 70.000 ms"), std::string::npos) << nccl->title;
  EXPECT_EQ(nccl->subject, "AllReduce 20 launch(es), 100.000 ms");
  const auto* balance = verdict(d, "device-imbalance");
  ASSERT_NE(balance, nullptr);
  EXPECT_NE(balance->title.find("device 0 runs 80.000 ms of kernels other than NCCL's, device 1 only 20.000 ms"),
            std::string::npos)
      << balance->title;
  ASSERT_TRUE(balance->cost_ns);
  EXPECT_NEAR(*balance->cost_ns, 30.0 * kMs, 1);  // 80 ms of GEMM on device 0, 50 ms on average
  auto text = render::timeline_text(t, {});
  EXPECT_NE(text.find("device 1: range"), std::string::npos) << text;
  EXPECT_NE(text.find("NCCL 70.000 ms in 10 launch(es), 0.0% of it beside other kernels"), std::string::npos) << text;
}

}  // namespace
}  // namespace keet
