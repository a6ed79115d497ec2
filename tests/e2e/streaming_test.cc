// Commands stream kernels: memory does not grow with the number of kernels in
// a report, and streaming never changes an answer (a report may store its
// session and modules after its kernels; the analysis still sees them).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

// Peak resident memory (KiB) of one run of `keet ARGS` with stdout discarded
// (an ASan keet without its quarantine of freed memory).
long peak_rss_kb(const std::string& args) {
  std::string cmd = measured_memory_prefix() + keet_binary() + " " + args + " >/dev/null 2>&1";
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  EXPECT_TRUE(WIFEXITED(status)) << args;
  return usage.ru_maxrss;
}

// `n` kernels of a few hundred metrics each (about 6 KB apiece in the file,
// several times that once read into the model), in blocks of 100.
std::string many_kernels(const std::string& name, int n) {
  ReportWriter w;
  std::vector<std::pair<std::string, double>> metrics = {
      {"gpu__time_duration.sum", 12000},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 35},
      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 82},
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 81},
      {"lts__t_sectors.avg.pct_of_peak_sustained_elapsed", 40},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4e6},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1e6},
      {"launch__registers_per_thread", 32},
      {"launch__waves_per_multiprocessor", 4}};
  for (int m = 0; m < 400; ++m)
    metrics.push_back({"test__filler_counter_number_" + std::to_string(m) + ".sum", m * 1.5});
  for (int b = 0; b < n / 100; ++b) {
    ReportWriter::Block block;
    for (int i = 0; i < 100; ++i)
      block.results.push_back(w.kernel("kernel_" + std::to_string(i % 7), 4096, 256, metrics).SerializeAsString());
    w.flush_strings(block);
    w.add(std::move(block));
  }
  std::string path = temp_path(name);
  w.write(path);
  return path;
}

// Every kernel-reading command, in its formats: the peak memory of a run over
// 4,000 kernels stays within a few MB of a run over 200 (a command that held
// the report, its diagnoses or a JSON tree would grow by well over 100 MB).
TEST(Streaming, MemoryDoesNotGrowWithTheNumberOfKernels) {
  std::string small = shell_quote(many_kernels("stream-small.ncu-rep", 200));
  std::string large = shell_quote(many_kernels("stream-large.ncu-rep", 4000));
  const std::vector<std::string> commands = {"analyze",
                                             "analyze --format markdown",
                                             "analyze --format json",
                                             "analyze --format html",
                                             "metrics",
                                             "metrics --format json",
                                             "metrics --format csv",
                                             "export --format json",
                                             "export --format csv",
                                             "source",
                                             "source --format json",
                                             "doctor --format json"};
  for (const auto& c : commands) {
    long base = peak_rss_kb(c + " " + small);
    long big = peak_rss_kb(c + " " + large);
    EXPECT_LT(big - base, 24 * 1024) << c << ": " << base << " KiB at 200 kernels, " << big << " KiB at 4,000";
  }
}

// The commands that keep something per kernel (diff, gate and record a
// snapshot, coverage its rows, doctor its data-quality record, list the light
// kernel) grow with the kernel count, but by a bounded amount per kernel:
// under 12 KiB, which keeps a 20,000-kernel report under 256 MB (the
// reliability target; a command that held whole kernels grows by over 40 KiB
// per kernel of this report).
TEST(Streaming, PerKernelStateOfSnapshotCommandsIsBounded) {
  const std::string small = shell_quote(many_kernels("snap-small.ncu-rep", 200));
  const std::string large = shell_quote(many_kernels("snap-large.ncu-rep", 4000));
  auto db = [](const std::string& name) {
    std::string path = temp_path(name);
    std::filesystem::remove(path);
    return "--db " + shell_quote("sqlite:" + path);
  };
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"diff", "diff %s %s"},      {"diff --format json", "diff --format json %s %s"},
      {"coverage", "coverage %s"}, {"doctor", "doctor %s"},
      {"list", "list %s"},         {"record", "record %s --tag t "},
  };
  for (const auto& [label, pattern] : commands) {
    auto command_for = [&](const std::string& report, const std::string& tag) {
      std::string c = pattern;
      for (std::size_t at; (at = c.find("%s")) != std::string::npos;) c.replace(at, 2, report);
      if (label == "record") c += db("snap-rec-" + tag + ".sqlite");
      return c;
    };
    long base = peak_rss_kb(command_for(small, "small"));
    long big = peak_rss_kb(command_for(large, "large"));
    EXPECT_LT((big - base) / 3800.0, 12.0)
        << label << ": " << base << " KiB at 200 kernels, " << big << " KiB at 4,000";
  }
  // gate: each report against a baseline of itself.
  std::string small_db = db("snap-gate-s.sqlite"), large_db = db("snap-gate-l.sqlite");
  ASSERT_EQ(run_keet("record " + small + " --tag main " + small_db).rc, 0);
  ASSERT_EQ(run_keet("record " + large + " --tag main " + large_db).rc, 0);
  long base = peak_rss_kb("gate " + small + " --baseline main " + small_db);
  long big = peak_rss_kb("gate " + large + " --baseline main " + large_db);
  EXPECT_LT((big - base) / 3800.0, 12.0) << "gate: " << base << " KiB at 200 kernels, " << big << " KiB at 4,000";
}

// A report whose session (the device) is stored after its kernel: every
// format analyses the kernel on that device, as a whole-file read would.
TEST(Streaming, SessionStoredAfterTheKernelStillReachesTheAnalysis) {
  ReportWriter w;
  ReportWriter::Block first;
  first.results.push_back(
      w.kernel("late_session", 264, 256, {{"gpu__time_duration.sum", 50000}, {"launch__registers_per_thread", 40}})
          .SerializeAsString());
  w.flush_strings(first);
  w.add(std::move(first));
  ReportWriter::Block second;
  auto* dev = second.header.mutable_session_details()->add_device_attributes();
  dev->set_id(0);
  dev->set_name("NVIDIA H100 80GB HBM3");
  auto attr = [&](const std::string& n, uint32_t v) {
    auto* a = dev->add_attributes();
    a->set_name(n);
    a->mutable_value()->set_uint32_value(v);
  };
  auto* display = dev->add_attributes();
  display->set_name("display_name");
  display->mutable_value()->set_string_value("NVIDIA H100 80GB HBM3");
  attr("compute_capability_major", 9);
  attr("compute_capability_minor", 0);
  attr("multiprocessor_count", 132);
  w.add(std::move(second));
  std::string path = temp_path("late-session.ncu-rep");
  w.write(path);

  auto json = run_keet("analyze --format json " + shell_quote(path));
  ASSERT_EQ(json.rc, 0) << json.err;
  auto k = nlohmann::json::parse(json.out)["kernels"][0];
  EXPECT_EQ(k["device"]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(k["device"]["compute_capability"], "9.0");
  for (std::string fmt : {"text", "html", "markdown"}) {
    auto r = run_keet("analyze --format " + fmt + " " + shell_quote(path));
    ASSERT_EQ(r.rc, 0) << fmt << r.err;
    EXPECT_NE(r.out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << fmt;
  }
}

// Written kernel by kernel, JSON documents are still the bytes of one dump
// (checked by parsing and re-dumping: a stray comma or bracket would fail).
TEST(Streaming, StreamedJsonIsOneValidDocument) {
  std::string path = shell_quote(many_kernels("stream-json.ncu-rep", 300));
  for (std::string cmd : {"analyze --format json", "metrics --format json", "export --format json",
                          "source --format json", "doctor --format json"}) {
    auto r = run_keet(cmd + " " + path);
    ASSERT_TRUE(r.rc == 0 || r.rc == 1) << cmd << r.err;  // doctor: 1 when data is thin
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << cmd;
    EXPECT_EQ(doc["kernels"].size(), 300u) << cmd;
  }
}

// -o writes the file only when the command succeeds: a failure half-way
// leaves no half-written answer behind.
TEST(Streaming, OutputFileIsWrittenWhole) {
  std::string out = temp_path("stream-out.html");
  std::filesystem::remove(out);
  auto bad = run_keet("analyze --format html -o " + shell_quote(out) + " " + shell_quote(temp_path("no-such.ncu-rep")));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
  std::string path = shell_quote(many_kernels("stream-o.ncu-rep", 100));
  auto ok = run_keet("analyze --format html -o " + shell_quote(out) + " " + path);
  ASSERT_EQ(ok.rc, 0) << ok.err;
  std::ifstream in(out);
  std::string html((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(html.ends_with("</html>\n"));
  EXPECT_FALSE(std::filesystem::exists(out + ".keet-partial"));
}

}  // namespace
}  // namespace keet
