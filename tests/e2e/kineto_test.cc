// End-to-end: `keet timeline` on PyTorch profiler (Kineto) traces. Every
// fixture trace in ../shared/fixtures/kineto reads, and its kernels, copies,
// memsets and runtime calls, and each device's busy time, equal a plain count
// made by Python's json module (tests/e2e/kineto_count.py, exact decimals),
// not by keet's reader; a HIP trace, a trace without deviceProperties, a
// truncated .json.gz; a trace written here gives its verdicts in text, JSON
// and HTML, recognised by content under any file name.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/kineto_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using namespace keet::testing;
using json = nlohmann::json;

std::optional<std::string> kineto_fixtures() {
  auto shared = shared_dir();
  if (!shared || !fs::is_directory(*shared + "/fixtures/kineto")) return std::nullopt;
  return *shared + "/fixtures/kineto";
}

#define SKIP_WITHOUT_FIXTURES() \
  auto dir = kineto_fixtures(); \
  if (!dir) GTEST_SKIP() << "../shared/fixtures/kineto is absent: no real PyTorch traces to read"

std::vector<std::string> fixture_traces(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    auto name = e.path().filename().string();
    if (e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))) out.push_back(e.path());
  }
  std::ranges::sort(out);
  return out;
}

std::string fixture(const std::string& dir, const std::string& tail) {
  for (const auto& f : fixture_traces(dir))
    if (f.ends_with(tail)) return f;
  ADD_FAILURE() << "no fixture ends with " << tail;
  return "";
}

json timeline_json(const std::string& path) {
  auto r = run_keet("timeline --format json " + shell_quote(path));
  EXPECT_EQ(r.rc, 0) << path << ": " << r.err;
  return r.rc == 0 ? json::parse(r.out) : json::object();
}

TEST(KinetoE2E, EveryFixtureTraceCountsAsAPlainCountOfItsEvents) {
  SKIP_WITHOUT_FIXTURES();
  auto traces = fixture_traces(*dir);
  ASSERT_EQ(traces.size(), 36u) << "the fixture README lists 36 traces";
  std::string cmd = "python3 " + shell_quote(source_dir() + "/tests/e2e/kineto_count.py");
  for (const auto& t : traces) cmd += " " + shell_quote(t);
  auto counted = run_command(cmd);
  ASSERT_EQ(counted.rc, 0) << counted.err;
  std::istringstream lines(counted.out);
  std::string line;
  size_t checked = 0;
  while (std::getline(lines, line)) {
    auto plain = json::parse(line);
    std::string path = plain["path"];
    SCOPED_TRACE(path);
    auto t = timeline_json(path);
    if (t.empty()) continue;
    EXPECT_EQ(t["source"], "kineto");
    EXPECT_EQ(t["launches"], plain["kernels"]);
    uint64_t copies = 0, memsets = 0, calls = 0;
    for (const auto& m : t["memory"]) (m["direction"] == "memset" ? memsets : copies) += m["count"].get<uint64_t>();
    for (const auto& a : t["api_calls"]) calls += a["count"].get<uint64_t>();
    EXPECT_EQ(copies, plain["copies"]);
    EXPECT_EQ(memsets, plain["memsets"]);
    EXPECT_EQ(calls, plain["calls"]);
    std::map<std::string, int64_t> busy;
    for (const auto& d : t["device_use"]) busy[std::to_string(d["device"].get<uint64_t>())] = d["busy_ns"];
    EXPECT_EQ(busy, plain["busy_ns"].get<decltype(busy)>());
    ++checked;
  }
  EXPECT_EQ(checked, traces.size());
}

TEST(KinetoE2E, AHipTraceReadsWithItsGpuAndItsLaunchesJoined) {
  SKIP_WITHOUT_FIXTURES();
  auto t = timeline_json(fixture(*dir, "mi300/resnet_act_checkpoint.json.gz"));
  ASSERT_FALSE(t.empty());
  ASSERT_FALSE(t["gpus"].empty());
  EXPECT_EQ(t["gpus"][0]["name"], "AMD Instinct MI300X");
  EXPECT_GT(t["launch_latency"]["launches"].get<uint64_t>(), 0u);
  bool hip = false;
  for (const auto& a : t["api_calls"]) hip |= a["name"].get<std::string>().starts_with("hip");
  EXPECT_TRUE(hip);
  EXPECT_EQ(t["distributed"]["world_size"], 8);
  EXPECT_GT(t["device_use"][0]["nccl_launches"].get<uint64_t>(), 0u);  // RCCL's kernels are NCCL's names
  // Its kernels without grid and block in their args say so, not (0,0,0);
  // and on an AMD GPU no ncu command is given for the kernel to profile.
  auto text = run_keet("timeline " + shell_quote(fixture(*dir, "mi300/resnet_act_checkpoint.json.gz")));
  EXPECT_NE(text.out.find("grid and block not in the trace"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("grid (0,0,0)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("ncu -k"), std::string::npos) << text.out;
}

// TraceLens (AMD-AGI/TraceLens at 171dd74721ca1ec45709e5805b68ae1f65e27811,
// the commit the fixtures come from, byte-identical) states for each of its
// H100 test traces the GPU's busy and total time in
// tests/traces/h100/<trace>_perf_report_csvs/gpu_timeline.csv ("busy_time",
// "total_time", in ms), measured over the GPU side of the trace's profiler
// step. KEET's step window and the busy time inside it agree within 20 ns:
// TraceLens adds epoch microseconds as doubles (at 1.4e12 us a double holds
// about a quarter of a nanosecond, and a union over hundreds of kernels adds
// those up: 10 ns on the Qwen trace), while KEET reads the trace's decimals
// exactly to the nanosecond.
TEST(KinetoE2E, StepBusyTimeAgreesWithTraceLens) {
  SKIP_WITHOUT_FIXTURES();
  struct Stated {
    const char* trace;
    double busy_ms, total_ms;  // gpu_timeline.csv: busy_time, total_time
  };
  const Stated stated[] = {
      {"h100/Falconsai_nsfw_image_detection__1016002.json.gz", 1.225308837890625, 7.559843994140625},
      {"h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 31.905483154296874, 34.8924189453125},
      {"h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz", 158.43317309570313, 159.9924267578125},
      {"h100/gaunernst_bert-small-uncased__1016001.json.gz", 0.309437744140625, 3.907824951171875},
      {"h100/google_owlv2-large-patch14-ensemble__1016001.json.gz", 566.7594729003906, 1078.2883791503907},
  };
  for (const auto& s : stated) {
    SCOPED_TRACE(s.trace);
    auto t = timeline_json(fixture(*dir, s.trace));
    ASSERT_EQ(t["steps"].size(), 1u);
    const auto& step = t["steps"][0];
    double length_ms = (step["end_ns"].get<double>() - step["start_ns"].get<double>()) / 1e6;
    EXPECT_NEAR(length_ms, s.total_ms, 2e-5);
    EXPECT_NEAR(step["busy_ns"].get<double>() / 1e6, s.busy_ms, 2e-5);
    EXPECT_EQ(step["busy_ns"].get<int64_t>() + step["idle_ns"].get<int64_t>(),
              step["end_ns"].get<int64_t>() - step["start_ns"].get<int64_t>());
  }
  auto text = run_keet("timeline " + shell_quote(fixture(*dir, "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")));
  EXPECT_NE(text.out.find("Step ProfilerStep#6 on the GPU: 34.892 ms, busy 31.905 ms (91.4%), idle 2.987 ms"),
            std::string::npos)
      << text.out;
}

TEST(KinetoE2E, ATraceWithoutDevicePropertiesStillReads) {
  SKIP_WITHOUT_FIXTURES();
  auto path = fixture(*dir, "trace_filter/sampled_rank-0.json.gz");
  auto r = run_keet("timeline " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("PyTorch profiler (Kineto) trace, schemaVersion 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Rank 0 of 128 (nccl)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GPU 0:"), std::string::npos);  // no GPU name invented
}

TEST(KinetoE2E, ATruncatedGzipTraceIsOneLineAndExitTwo) {
  SKIP_WITHOUT_FIXTURES();
  auto bytes = read_file(fixture(*dir, "dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"));
  auto path = temp_path("truncated.pt.trace.json.gz");
  auto gz = gzip(bytes);
  write_file(path, gz.substr(0, gz.size() * 2 / 3));
  auto r = run_keet("timeline " + shell_quote(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "keet: " + path + ": truncated: the gzip stream ends before its end marker\n");
}

// A trace written here, under a name that says nothing: the verdicts of an
// nsys export, in every format.
TEST(KinetoE2E, AWrittenTraceGivesItsVerdictsInEveryFormat) {
  KinetoWriter w;
  w.annotation("ProfilerStep#1", 900, 1'300'000);
  w.launch("void at::native::gemm<float>(float*)", 1000, 1010, 100);
  // 29 ms of a 1.2 s run: over the 1% a synchronous-copy verdict needs.
  w.runtime("cudaMemcpy", 1200, 30'000, 77);
  w.memcpy("Memcpy DtoH (Device -> Pageable)", 1210, 29'000, 1 << 24, 77);
  w.launch("void at::native::gemm<float>(float*)", 1'200'000, 1'200'010, 100);
  auto path = temp_path("kineto-run.bin");
  write_file(path, gzip(w.json()));
  auto text = run_keet("timeline " + shell_quote(path));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("synchronous copy call(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ProfilerStep#1"), std::string::npos) << text.out;
  auto j = json::parse(run_keet("timeline --format json " + shell_quote(path)).out);
  std::vector<std::string> ids;
  for (const auto& v : j["verdicts"]) ids.push_back(v["id"]);
  EXPECT_NE(std::ranges::find(ids, "gpu-gaps"), ids.end());
  EXPECT_NE(std::ranges::find(ids, "sync-memcpy"), ids.end());
  auto html = run_keet("timeline --format html " + shell_quote(path));
  ASSERT_EQ(html.rc, 0) << html.err;
  EXPECT_NE(html.out.find("PyTorch profiler (Kineto) trace"), std::string::npos);
  // Standard input too: a pipe inside a group, because run_command gives
  // the command line /dev/null as its standard input.
  auto piped =
      run_command("(cat " + shell_quote(path) + " | " + shell_quote(keet_binary()) + " timeline --format json -)");
  EXPECT_EQ(piped.rc, 0) << piped.err;
  EXPECT_EQ(json::parse(piped.out)["launches"], 2);
}

TEST(KinetoE2E, JsonThatIsNoTraceIsRefusedWithWhatKeetReads) {
  auto path = temp_path("package.json");
  write_file(path, R"({"name": "x", "version": "1.0.0"})");
  auto r = run_keet("timeline " + shell_quote(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("or a PyTorch profiler trace, .json or .json.gz"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace keet
