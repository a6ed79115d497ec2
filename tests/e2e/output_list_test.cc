// -o FORMAT=FILE,...: analyze, diff, timeline and gate read (and analyse)
// once and write each format to its file, byte for byte what `--format
// FORMAT` writes alone. keet serve's one child per job stands on it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/kineto_writer.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet::testing {
namespace {

std::string fresh_folder(const std::string& name) {
  std::string dir = temp_path("output_list_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Identical launches that fold in the formats people read (JSON lists every
// launch), and a second kernel.
std::string folding_report(const std::string& dir, double step_ns = 100000) {
  std::vector<WrittenLaunch> launches;
  for (int i = 0; i < 6; ++i) launches.push_back({"train_step", 8192, 256, scenario_metrics(step_ns + (i % 3) * 400)});
  launches.push_back({"reduce", 64, 128, scenario_metrics(20000)});
  std::string path = dir + "/r" + std::to_string(static_cast<int>(step_ns)) + ".ncu-rep";
  write_file(path, launches_report(launches));
  return path;
}

// `command -o f1=F1,f2=F2,...` writes nothing to stdout, and each file is what
// `command --format f` writes to stdout.
void expect_each_as_alone(const std::string& command, const std::string& dir, const std::vector<std::string>& formats,
                          int rc = 0) {
  std::string list;
  for (const auto& f : formats) list += (list.empty() ? "" : ",") + f + "=" + dir + "/out." + f;
  auto all = run_keet(command + " -o " + shell_quote(list));
  ASSERT_EQ(all.rc, rc) << command << "\n" << all.err;
  EXPECT_EQ(all.out, "");
  for (const auto& f : formats) {
    auto alone = run_keet(command + " --format " + f);
    EXPECT_EQ(alone.rc, rc) << alone.err;
    ASSERT_TRUE(std::filesystem::exists(dir + "/out." + f)) << f;
    EXPECT_EQ(read_file(dir + "/out." + f), alone.out) << command << " --format " << f;
  }
}

TEST(OutputList, AnalyzeWritesEveryFormatAsEachAlone) {
  std::string dir = fresh_folder("analyze");
  std::string report = shell_quote(folding_report(dir));
  for (std::string how : {"", " --launches all", " --print-summary per-kernel", " --top 0 --report-name=k.ncu-rep"})
    expect_each_as_alone("analyze " + report + how, dir, {"json", "html", "markdown", "text"});
}

// A real report of 154 launches (folds, several kernels, source counters).
TEST(OutputList, AnalyzeOfARealReportWritesEveryFormatAsEachAlone) {
  auto shared = shared_dir();
  if (!shared) GTEST_SKIP() << "../shared is absent: the fixtures are not here";
  std::string report = *shared + "/fixtures/public/bwd29__self-join-MiSTIC/profile.ncu-rep";
  if (!std::filesystem::exists(report)) GTEST_SKIP() << report << " is absent";
  expect_each_as_alone("analyze " + shell_quote(report), fresh_folder("analyze_real"), {"json", "html", "markdown"});
}

TEST(OutputList, DiffAndGateWriteEveryFormatAsEachAlone) {
  std::string dir = fresh_folder("diff");
  std::string before = shell_quote(folding_report(dir, 100000)), after = shell_quote(folding_report(dir, 150000));
  expect_each_as_alone("diff " + before + " " + after, dir, {"json", "markdown", "html", "text"});
  // The second report is slower: the gate fails (exit 1) and still writes every output.
  // (JUnit is left out: it carries the second it was written.)
  expect_each_as_alone("gate " + after + " --baseline-report " + before, dir, {"json", "sarif", "markdown", "text"}, 1);
}

TEST(OutputList, TimelineWritesEveryFormatAsEachAlone) {
  std::string dir = fresh_folder("timeline");
  KinetoWriter w;
  for (int i = 0; i < 20; ++i) w.launch("void gemm_kernel<float>(float*)", i * 100.0, i * 100.0 + 8, 60);
  w.memcpy("Memcpy HtoD (Pageable -> Device)", 2100, 400, 1 << 20, 7);
  write_file(dir + "/trace.json", w.json());
  expect_each_as_alone("timeline " + shell_quote(dir + "/trace.json"), dir, {"json", "html", "text"});
}

// A list is all FORMAT=FILE or an error that says so; nothing is written.
TEST(OutputList, ABadListIsRefusedBeforeAnythingIsWritten) {
  std::string dir = fresh_folder("bad");
  std::string report = shell_quote(folding_report(dir)), a = dir + "/a", b = dir + "/b";
  struct Case {
    std::string list, says;
  };
  for (const auto& c : std::vector<Case>{{"json=" + a + ",bogus", "a list of outputs is FORMAT=FILE"},
                                         {"json=" + a + ",pdf=" + b, "a list of outputs is FORMAT=FILE"},
                                         {"json=" + a + ",json=" + b, "json is given twice"},
                                         {"json=" + a + ",html=" + a, a + " is named twice"}}) {
    auto r = run_keet("analyze " + report + " -o " + shell_quote(c.list));
    EXPECT_EQ(r.rc, 2) << c.list;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.list << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(a)) << c.list;
  }
  auto two = run_keet("analyze " + report + " " + report + " -o " + shell_quote("text=" + a + ",json=" + b));
  EXPECT_EQ(two.rc, 2);
  EXPECT_NE(two.err.find("give one report"), std::string::npos) << two.err;
  EXPECT_FALSE(std::filesystem::exists(a));
}

// A path that names no format is a path, '=' and all; one FORMAT=FILE is
// that format.
TEST(OutputList, APlainPathStaysAPath) {
  std::string dir = fresh_folder("plain");
  std::string report = shell_quote(folding_report(dir));
  auto plain = run_keet("analyze " + report + " -o " + shell_quote(dir + "/x=y.txt"));
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_EQ(read_file(dir + "/x=y.txt"), run_keet("analyze " + report).out);
  auto one = run_keet("analyze " + report + " -o " + shell_quote("json=" + dir + "/one.json"));
  ASSERT_EQ(one.rc, 0) << one.err;
  EXPECT_EQ(read_file(dir + "/one.json"), run_keet("analyze " + report + " --format json").out);
}

}  // namespace
}  // namespace keet::testing
