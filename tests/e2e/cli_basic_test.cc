// End-to-end: the real keet binary on reports built by the test writer and on
// NVIDIA's sample reports (when ../shared is present).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

std::string small_report() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("vecAdd", 64, 256, {{"gpu__time_duration.sum", 5120}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("small.ncu-rep");
  w.write(path);
  return path;
}

TEST(CliBasic, VersionAndHelp) {
  auto v = run_keet("--version");
  EXPECT_EQ(v.rc, 0);
  EXPECT_NE(v.out.find("keet "), std::string::npos);
  for (std::string cmd : {"list", "metrics", "export"}) {
    auto h = run_keet(cmd + " --help");
    EXPECT_EQ(h.rc, 0) << cmd;
    EXPECT_NE(h.out.find("report"), std::string::npos) << cmd;
  }
}

TEST(CliBasic, ListJson) {
  auto r = run_keet("list --format json " + shell_quote(small_report()));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_EQ(j["kernels"][0]["name"], "vecAdd()");
  EXPECT_EQ(j["kernels"][0]["duration_ns"], 5120);
  EXPECT_EQ(j["kernels"][0]["grid"][0], 64);
}

TEST(CliBasic, BadInputExitsTwoWithOneLine) {
  std::string path = temp_path("junk.ncu-rep");
  run_command("printf 'NVR\\000\\002\\000\\000\\000\\010' > " + shell_quote(path));
  auto r = run_keet("list " + shell_quote(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(path), std::string::npos);
  EXPECT_NE(r.err.find("at byte"), std::string::npos);
  auto missing = run_keet("list /nonexistent/file.ncu-rep");
  EXPECT_EQ(missing.rc, 2);
  auto bad_flag = run_keet("list --format nope " + shell_quote(path));
  EXPECT_EQ(bad_flag.rc, 2);
}

TEST(CliBasic, PartialReportNeedsAllowPartial) {
  ReportWriter w;
  for (int i = 0; i < 2; ++i) {
    ReportWriter::Block b;
    auto k = w.kernel("k" + std::to_string(i), 1, 32, {{"gpu__time_duration.sum", 100.0 + i}});
    w.flush_strings(b);
    b.results.push_back(k.SerializeAsString());
    w.add(b);
  }
  std::string bytes = w.bytes();
  std::string path = temp_path("cut.ncu-rep");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  auto r = run_keet("list " + shell_quote(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("k0"), std::string::npos);
  EXPECT_NE(r.err.find("warning"), std::string::npos);
  auto ok = run_keet("list --allow-partial " + shell_quote(path));
  EXPECT_EQ(ok.rc, 0);
}

TEST(CliBasic, KernelSelection) {
  std::string path = small_report();
  EXPECT_EQ(run_keet("list -k 0 " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k 'regex:^vec' " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k vecAdd " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k nosuch " + shell_quote(path)).rc, 2);
  EXPECT_EQ(run_keet("list -k 'regex:(' " + shell_quote(path)).rc, 2);
}

TEST(CliBasic, SampleReportLists) {
  auto ex = oracle_examples();
  if (!ex) GTEST_SKIP() << "../shared (ncu-oracle examples) is absent";
  auto r = run_keet("list " + shell_quote(*ex + "/addConstDouble3.ncu-rep"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("addConstDouble3"), std::string::npos);
  EXPECT_NE(r.out.find("NVIDIA RTX A2000"), std::string::npos);
}

}  // namespace
}  // namespace keet
