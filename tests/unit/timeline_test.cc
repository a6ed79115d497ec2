// The Nsight Systems timeline: the SQLite-export reader on exports the test
// writes (both schema generations, absent tables, damaged files), the
// builder's summaries (idle gaps, drift, latency), and the join with ncu
// kernels (coverage, Amdahl, the ncu options for missed hot kernels).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/timeline_join.h"
#include "app/profile_nsys.h"
#include "app/timeline_input.h"
#include "model/timeline.h"
#include "readers/nsys_export.h"
#include "render/timeline.h"
#include "support/testing.h"
#include "support/timeline_writer.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TimelineWriter;

model::TimelineSummary read(const std::string& path) {
  model::TimelineBuilder b;
  auto ok = readers::read_nsys_export(path, b);
  EXPECT_TRUE(ok) << (ok ? "" : readers::timeline_error_message(ok.error()));
  return std::move(b).finish();
}

std::string read_error(const std::string& path) {
  model::TimelineBuilder b;
  auto ok = readers::read_nsys_export(path, b);
  return ok ? "" : readers::timeline_error_message(ok.error());
}

// A solver kernel that carries most of the time, an init kernel launched once,
// copies, a memset and NVTX ranges; every kernel launched by a traced API call.
TimelineWriter typical(TimelineWriter::Schema schema = TimelineWriter::Schema::Since2023) {
  TimelineWriter w(schema);
  w.kernel({"init_rng(float *)", "init_rng", 1000, 2000, 0, 7, 1, 32, 500});
  for (int i = 0; i < 10; ++i) {
    int64_t t = 10'000 + i * 20'000;
    w.kernel({"solve(float *, int)", "solve", t, t + 9'000, 0, 7, 128, 256, t - 3'000});
  }
  w.memcpy(1, 3000, 5000, 1 << 20);
  w.memcpy(2, 300'000, 301'000, 4096);
  w.memset(2500, 2600, 256);
  w.nvtx("iteration", 9'000, 30'000);
  w.nvtx("iteration", 29'000, 50'000);
  return w;
}

TEST(TimelineReader, PerKernelTotalsLaunchesAndShares) {
  auto path = testing::temp_path("typical.sqlite");
  typical().write(path);
  auto t = read(path);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.launches, 11u);
  EXPECT_EQ(t.kernels[0].name, "solve(float *, int)");
  EXPECT_EQ(t.kernels[0].short_name, "solve");
  EXPECT_EQ(t.kernels[0].time.count, 10u);
  EXPECT_EQ(t.kernels[0].time.total_ns, 90'000);
  EXPECT_EQ(t.kernels[1].time.total_ns, 1'000);
  EXPECT_EQ(t.kernel_ns, 91'000);
  EXPECT_NEAR(t.gpu_share(t.kernels[0]), 90.0 / 91.0, 1e-12);
  EXPECT_EQ(t.span_start, 1000);   // the init kernel
  EXPECT_EQ(t.span_end, 301'000);  // the last copy
  EXPECT_EQ(t.meta.schema, "META_DATA_EXPORT");
  EXPECT_EQ(t.meta.tool_version, "2023.3.3.42");
  ASSERT_EQ(t.meta.gpus.size(), 1u);
  EXPECT_EQ(t.meta.gpus[0].name, "Test GPU");
}

TEST(TimelineReader, ReadsTheSchemaBefore2023) {
  auto path = testing::temp_path("old-schema.sqlite");
  typical(TimelineWriter::Schema::Before2023).write(path);
  auto t = read(path);
  EXPECT_EQ(t.meta.schema, "EXPORT_META_DATA");
  EXPECT_EQ(t.meta.tool_version, "2022.4.2.1");
  EXPECT_EQ(t.launches, 11u);
}

TEST(TimelineReader, LaunchLatencyThroughTheCorrelationId) {
  auto path = testing::temp_path("latency.sqlite");
  typical().write(path);
  auto t = read(path);
  EXPECT_EQ(t.latency.count, 11u);
  EXPECT_EQ(t.kernels[0].latency.min_ns, 3'000);
  EXPECT_EQ(t.kernels[1].latency.max_ns, 500);
}

TEST(TimelineReader, CopiesByDirectionMemsetsAndNvtx) {
  auto path = testing::temp_path("copies.sqlite");
  typical().write(path);
  auto t = read(path);
  ASSERT_EQ(t.memory.size(), 3u);
  EXPECT_EQ(t.memory[0].direction, "Host-to-Device");
  EXPECT_EQ(t.memory[0].bytes, 1u << 20);
  EXPECT_EQ(t.memory[0].time.total_ns, 2000);
  EXPECT_EQ(t.memory[1].direction, "Device-to-Host");
  EXPECT_EQ(t.memory[2].direction, "memset");
  ASSERT_EQ(t.nvtx.size(), 1u);
  EXPECT_EQ(t.nvtx[0].time.count, 2u);
  EXPECT_EQ(t.nvtx[0].time.total_ns, 42'000);
}

TEST(TimelineReader, AbsentTablesAreListedNotErrors) {
  TimelineWriter w;
  w.memcpy(1, 0, 100, 64);  // copies only: no kernel, runtime or NVTX table
  auto path = testing::temp_path("copies-only.sqlite");
  w.write(path);
  auto t = read(path);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_EQ(t.memory.size(), 1u);
  for (std::string table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"})
    EXPECT_NE(std::ranges::find(t.meta.absent_tables, table), t.meta.absent_tables.end()) << table;
}

// nsys traced the CUDA API but not the GPU: the launches ran, and saying
// "no kernel ran" would be false. Calls are counted only for the activity the
// export lacks; traced kinds are not counted twice.
TEST(TimelineReader, ApiCallsWithoutGpuActivityAreUntracedNotAbsent) {
  TimelineWriter w;
  for (int i = 0; i < 5; ++i) w.api_call("cudaLaunchKernel_v7000", 1000 * i);
  w.api_call("cuLaunchKernel", 9000);
  w.api_call("cudaMemcpyAsync_v3020", 10'000);
  w.api_call("cudaMemset_v3020", 11'000);
  w.api_call("cudaDeviceSynchronize_v3020", 12'000);  // neither a launch, a copy nor a memset
  w.memcpy(1, 20'000, 21'000, 64);                    // copies were traced
  auto path = testing::temp_path("api-only.sqlite");
  w.write(path);
  auto t = read(path);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_EQ(t.meta.untraced.launch_calls, 6u);
  EXPECT_EQ(t.meta.untraced.memcpy_calls, 0u);  // the copy table exists: its calls are not "untraced"
  EXPECT_EQ(t.meta.untraced.memset_calls, 1u);
  std::string text = render::timeline_text(t, {});
  EXPECT_EQ(text.find("No kernel ran"), std::string::npos) << text;
  EXPECT_NE(text.find("Kernels ran but were not traced: the CUDA API trace holds 6 kernel launch call(s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nsys profile --trace=cuda"), std::string::npos) << text;
  EXPECT_NE(text.find("Memsets ran but were not traced: the CUDA API trace holds 1 memset call(s)"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("Copies ran"), std::string::npos) << text;
  // One statement: the header's list of absent activity agrees with the lines above.
  EXPECT_NE(text.find("memsets (calls traced, their GPU activity not: see below)"), std::string::npos) << text;
  EXPECT_EQ(text.find("the program made none"), std::string::npos) << text;
  auto j = render::timeline_json(t, {});
  EXPECT_EQ(j["untraced"]["kernel_launch_calls"], 6);
  EXPECT_EQ(j["untraced"]["memset_calls"], 1);
  EXPECT_NE(render::timeline_html(t, {}).find("Kernels ran but were not traced"), std::string::npos);

  // With neither kernels nor launch calls, nothing ran: that is still said.
  TimelineWriter quiet;
  quiet.memcpy(1, 0, 100, 64);
  auto quiet_path = testing::temp_path("copies-no-api.sqlite");
  quiet.write(quiet_path);
  auto q = read(quiet_path);
  EXPECT_EQ(q.meta.untraced.launch_calls, 0u);
  EXPECT_NE(render::timeline_text(q, {}).find("No kernel ran in this timeline."), std::string::npos);
}

// A real export with the CUDA API trace and no GPU kernel activity (nsys
// 2023.2, an RTX 3060 Laptop GPU).
TEST(TimelineReader, RealExportWithUntracedKernels) {
  KEET_REQUIRE_SHARED();
  auto t = read(*testing::shared_dir() + "/fixtures/nsys/haroonsyed__NVIDIA_SGEMM_PRACTICE/report1.sqlite");
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_EQ(t.meta.untraced.launch_calls, 192u);
  EXPECT_EQ(render::timeline_text(t, {}).find("No kernel ran"), std::string::npos);
}

TEST(TimelineReader, TruncatedAndDamagedFilesAreErrorsNotCrashes) {
  auto path = testing::temp_path("whole.sqlite");
  typical().write(path);
  std::string bytes = read_file(path);
  ASSERT_GT(bytes.size(), 4096u);
  auto cut = testing::temp_path("cut.sqlite");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(read_error(cut).find("truncated"), std::string::npos) << read_error(cut);
  // Every page after the first overwritten: the b-trees are garbage.
  std::string damaged = bytes;
  for (size_t i = 4096; i < damaged.size(); ++i) damaged[i] = static_cast<char>((i * 131) ^ 0x5a);
  auto bad = testing::temp_path("damaged.sqlite");
  std::ofstream(bad, std::ios::binary) << damaged;
  EXPECT_FALSE(read_error(bad).empty());
  model::TimelineBuilder b;
  EXPECT_FALSE(readers::read_nsys_export_bytes(damaged, "damaged", b));
  auto text = testing::temp_path("not-sqlite.sqlite");
  std::ofstream(text) << "hello";
  EXPECT_NE(read_error(text).find("not an SQLite database"), std::string::npos);
}

TEST(TimelineReader, AnSqliteFileThatIsNoExportIsNamedSo) {
  auto path = testing::temp_path("other.sqlite");
  {
    TimelineWriter w;
    w.write(path);  // metadata only: an export with nothing in it reads as empty
  }
  EXPECT_TRUE(read_error(path).empty());
  auto history = testing::temp_path("plain.sqlite");
  fs::remove(history);
  testing::run_command("sqlite3 " + testing::shell_quote(history) + " 'CREATE TABLE runs (id INTEGER)'");
  if (!fs::exists(history)) GTEST_SKIP() << "no sqlite3 command";
  EXPECT_NE(read_error(history).find("not an Nsight Systems export"), std::string::npos) << read_error(history);
}

TEST(TimelineReader, BytesInMemoryReadLikeTheFile) {
  auto path = testing::temp_path("memory.sqlite");
  typical().write(path);
  std::string bytes = read_file(path);
  model::TimelineBuilder b;
  ASSERT_TRUE(readers::read_nsys_export_bytes(bytes, "mem", b));
  auto t = std::move(b).finish();
  EXPECT_EQ(t.launches, 11u);
  EXPECT_EQ(t.kernel_ns, 91'000);
}

TEST(TimelineSniff, ReportsExportsAndVersions) {
  EXPECT_EQ(readers::sniff_timeline(std::string("SQLite format 3\0xx", 18)), readers::TimelineFile::NsysExport);
  EXPECT_EQ(readers::sniff_timeline("NVIDIA Tegra Profiler Report 1.\n"), readers::TimelineFile::NsysReport);
  EXPECT_EQ(readers::sniff_timeline("NVIDIA Nsight"), readers::TimelineFile::Other);
  EXPECT_EQ(readers::nsys_report_version("NVIDIA Tegra Profiler Report 2026@1@3@425-261338342291v0.\n"),
            "2026.1.3.425");
  EXPECT_EQ(readers::nsys_report_version("NVIDIA Tegra Profiler Report 1.\n"), "");
}

model::KernelLaunch launch(uint64_t key, int64_t start, int64_t end, uint64_t stream = 7) {
  return {.start = start,
          .end = end,
          .device = 0,
          .stream = stream,
          .name_key = key,
          .name = key == 1 ? "a" : "b",
          .short_name = key == 1 ? "a" : "b"};
}

TEST(TimelineBuilder, IdleGapsPerStreamAndPerDevice) {
  model::TimelineBuilder b;
  b.begin({}, 0, 1000);
  b.kernel(launch(1, 0, 100));      // stream 7
  b.kernel(launch(2, 50, 300, 9));  // stream 9 overlaps: the device stays busy
  b.kernel(launch(1, 400, 500));    // gap 300 on stream 7, 100 on the device
  b.kernel(launch(1, 900, 1000));   // gap 400 on both
  auto t = std::move(b).finish();
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].busy_ns, 500);
  EXPECT_EQ(t.devices[0].idle_ns, 500);
  EXPECT_EQ(t.devices[0].gaps, 2u);
  EXPECT_EQ(t.devices[0].max_gap_ns, 400);
  EXPECT_EQ(t.devices[0].max_gap_start, 500);
  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(t.streams[0].stream, 7u);
  EXPECT_EQ(t.streams[0].idle_ns, 700);
  EXPECT_EQ(t.streams[0].gaps, 2u);
  int64_t binned = 0;
  for (auto v : t.devices[0].bins) binned += v;
  EXPECT_EQ(binned, 500);  // the chart's slices add up to the busy time
}

TEST(TimelineBuilder, DriftSeesKernelsThatSlowDown) {
  model::TimelineBuilder b;
  b.begin({}, 0, 0);
  int64_t t = 0;
  for (int i = 0; i < 1000; ++i) {
    b.kernel(launch(1, t, t + 1000 + i));     // grows from 1000 to 1999 ns
    b.kernel(launch(2, t + 3000, t + 3500));  // steady
    t += 5000;
  }
  auto s = std::move(b).finish();
  ASSERT_EQ(s.kernels.size(), 2u);
  const auto& growing = s.kernels[0];
  EXPECT_LE(growing.drift.buckets().size(), model::DriftSeries::kBuckets);
  uint64_t launches = 0;
  for (const auto& bucket : growing.drift.buckets()) launches += bucket.launches;
  EXPECT_EQ(launches, 1000u);
  auto g = analysis::drift_growth(growing);
  ASSERT_TRUE(g);
  EXPECT_GT(*g, 0.5);  // last quarter ~1.87 us against first ~1.12 us
  EXPECT_TRUE(analysis::drifting(growing, 0.2));
  EXPECT_NEAR(*analysis::drift_growth(s.kernels[1]), 0.0, 1e-12);
  EXPECT_FALSE(analysis::drifting(s.kernels[1], 0.2));
}

TEST(TimelineBuilder, LaunchConfigurationsApartWhenTheyVary) {
  model::TimelineBuilder b;
  b.begin({}, 0, 0);
  auto k = launch(1, 0, 10);
  k.grid = {4, 1, 1};
  b.kernel(k);
  k.start = 20, k.end = 50, k.grid = {8, 1, 1};
  b.kernel(k);
  auto t = std::move(b).finish();
  ASSERT_EQ(t.kernels[0].configs.size(), 2u);
  EXPECT_EQ(t.kernels[0].configs[1].time.total_ns, 30);
  EXPECT_EQ(t.kernels[0].time.total_ns, 40);
}

analysis::ProfiledKernel profiled(const std::string& demangled, const std::string& function, double speedup) {
  analysis::ProfiledKernel p;
  p.display = demangled.empty() ? function : demangled;
  p.function = function;
  p.demangled = demangled;
  p.gains = {{"memory.uncoalesced_global", "Uncoalesced global accesses", speedup}};
  return p;
}

TEST(TimelineJoin, HotKernelProfiledGivesApplicationGain) {
  auto path = testing::temp_path("join-hot.sqlite");
  typical().write(path);
  auto t = read(path);
  auto j = analysis::join_timeline(t, {profiled("solve(float*, int)", "solve", 2.0)}, 0.5);
  EXPECT_FALSE(j.low_coverage);
  EXPECT_NEAR(j.coverage, 90.0 / 91.0, 1e-12);
  ASSERT_EQ(j.kernels.size(), 1u);
  EXPECT_TRUE(j.kernels[0].in_timeline);
  EXPECT_EQ(j.kernels[0].launches, 10u);
  double p = 90.0 / 91.0;
  EXPECT_NEAR(j.kernels[0].gains[0].app_speedup, 1 / ((1 - p) + p / 2), 1e-12);
  EXPECT_EQ(analysis::coverage_warning(j), "");
}

TEST(TimelineJoin, ColdKernelProfiledWarnsAndNamesTheHotOne) {
  auto path = testing::temp_path("join-cold.sqlite");
  typical().write(path);
  auto t = read(path);
  auto j = analysis::join_timeline(t, {profiled("", "init_rng", 3.0)}, 0.5);
  EXPECT_TRUE(j.low_coverage);
  EXPECT_NEAR(j.coverage, 1.0 / 91.0, 1e-12);
  double p = 1.0 / 91.0;
  EXPECT_NEAR(j.kernels[0].gains[0].app_speedup, 1 / ((1 - p) + p / 3), 1e-12);
  ASSERT_EQ(j.not_profiled.size(), 1u);
  EXPECT_EQ(j.not_profiled[0].short_name, "solve");
  std::vector<std::string> want = {"-k", "solve", "--launch-skip", "1", "--launch-count", "1"};
  EXPECT_EQ(j.not_profiled[0].ncu_options, want);
  auto w = analysis::coverage_warning(j);
  EXPECT_NE(w.find("1.1%"), std::string::npos) << w;
  EXPECT_NE(w.find("ncu -k solve --launch-skip 1 --launch-count 1"), std::string::npos) << w;
}

TEST(TimelineJoin, AKernelMissingFromTheTimelineCoversNothing) {
  auto path = testing::temp_path("join-missing.sqlite");
  typical().write(path);
  auto j = analysis::join_timeline(read(path), {profiled("other(int)", "other", 2.0)}, 0.5);
  EXPECT_FALSE(j.kernels[0].in_timeline);
  EXPECT_EQ(j.coverage, 0);
  EXPECT_EQ(j.kernels[0].gains[0].app_speedup, 1);
  EXPECT_EQ(j.not_profiled.size(), 2u);
}

TEST(TimelineProfile, HotKernelFilterAndNsysCommands) {
  auto path = testing::temp_path("filter.sqlite");
  typical().write(path);
  auto t = read(path);
  std::vector<std::string> want = {"--kernel-name-base",       "function",       "--kernel-name",
                                   "regex:^(solve|init_rng)$", "--launch-count", "6"};
  EXPECT_EQ(app::hot_kernel_filter(t, 3), want);
  EXPECT_EQ(app::hot_kernel_filter(t, 1)[3], "regex:^(solve)$");
  auto p = app::nsys_profile_arguments("nsys", "out", {"-app", "x"});
  EXPECT_EQ(p.back(), "x");
  EXPECT_EQ(p[p.size() - 2], "./-app");
  EXPECT_EQ(app::export_path_for("dir/run.nsys-rep"), "dir/run.sqlite");
  EXPECT_EQ(app::export_path_for("run.qdrep"), "run.sqlite");
  auto e = app::nsys_export_arguments("nsys", "r.nsys-rep", "r.sqlite");
  std::vector<std::string> export_want = {"nsys", "export", "--type",   "sqlite",    "--force-overwrite",
                                          "true", "-o",     "r.sqlite", "r.nsys-rep"};
  EXPECT_EQ(e, export_want);
}

}  // namespace
}  // namespace keet
