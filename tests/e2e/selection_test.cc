// ncu's selection conventions on every reading command: -k with
// --kernel-name-base, -s/--launch-skip and -c/--launch-count.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using nlohmann::json;

// Launches in order: a a b a b a a (indices 0..6).
std::string launches_report() {
  ReportWriter w;
  ReportWriter::Block b;
  int i = 0;
  for (std::string name : {"kern_a", "kern_a", "kern_b", "kern_a", "kern_b", "kern_a", "kern_a"})
    b.results.push_back(w.kernel(name, 64, 256,
                                 {{"gpu__time_duration.sum", 1000.0 + 100 * i++},
                                  {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 50}})
                            .SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path("selection.ncu-rep");
  w.write(path);
  return shell_quote(path);
}

std::vector<int> indices(const std::string& json_text) {
  std::vector<int> out;
  auto doc = json::parse(json_text);
  for (const auto& k : doc["kernels"]) out.push_back(k["index"].get<int>());
  return out;
}

TEST(Selection, SkipAndCountApplyToTheKernelsKSelects) {
  std::string r = launches_report();
  for (std::string cmd : {"list --format json", "analyze --format json", "metrics --format json",
                          "export --format json", "source --format json"}) {
    auto out = run_keet(cmd + " -k kern_a -s 1 -c 2 " + r);
    ASSERT_EQ(out.rc, 0) << cmd << out.err;
    EXPECT_EQ(indices(out.out), (std::vector<int>{1, 3})) << cmd;
    auto all_b = run_keet(cmd + " -k kern_b " + r);
    EXPECT_EQ(indices(all_b.out), (std::vector<int>{2, 4})) << cmd;
    auto first = run_keet(cmd + " -c 1 " + r);
    EXPECT_EQ(indices(first.out), (std::vector<int>{0})) << cmd;
  }
  // The CSV export (two passes over the file) counts the same way.
  auto csv = run_keet("export --format csv -s 5 " + r);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 2 + 2);  // header, units, launches 5 and 6
}

TEST(Selection, SkippingPastEveryMatchIsAnError) {
  auto r = run_keet("analyze -k kern_b -s 2 " + launches_report());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no kernel matches -k kern_b -s 2"), std::string::npos) << r.err;
  // Every command says it in the same words, the CSV export's own pass included.
  for (std::string cmd : {"list", "metrics", "export --format json", "export --format csv", "source"}) {
    auto e = run_keet(cmd + " -k kern_b -s 2 -c 1 " + launches_report());
    EXPECT_EQ(e.rc, 2) << cmd;
    EXPECT_NE(e.err.find("no kernel matches -k kern_b -s 2 -c 1"), std::string::npos) << cmd << ": " << e.err;
  }
}

TEST(Selection, RegexIsSearchedInTheFunctionNameByDefaultAsNcuDoes) {
  std::string r = launches_report();
  auto function = run_keet("list --format json -k 'regex:^kern_b$' " + r);
  ASSERT_EQ(function.rc, 0) << function.err;
  EXPECT_EQ(indices(function.out), (std::vector<int>{2, 4}));
  // The demangled name is kern_b(): the anchored pattern no longer matches...
  EXPECT_EQ(run_keet("list -k 'regex:^kern_b$' --kernel-name-base demangled " + r).rc, 2);
  auto demangled = run_keet("list --format json -k 'regex:^kern_b\\(\\)$' --kernel-name-base demangled " + r);
  EXPECT_EQ(indices(demangled.out), (std::vector<int>{2, 4}));
  // ... and the mangled one is _Z6kern_bv.
  auto mangled = run_keet("list --format json -k 'regex:^_Z6kern_bv$' --kernel-name-base mangled " + r);
  EXPECT_EQ(indices(mangled.out), (std::vector<int>{2, 4}));
  EXPECT_EQ(run_keet("list --kernel-name-base nickname " + r).rc, 2);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// --print-summary per-kernel folds repeated launches of one configuration:
// one diagnosis each (of the median launch), with count and duration spread.
TEST(Selection, PerKernelSummaryFoldsRepeatedLaunches) {
  std::string r = launches_report();  // kern_a at 0,1,3,5,6 (1000..1600 ns); kern_b at 2,4
  auto j = run_keet("analyze --format json --print-summary per-kernel " + r);
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = json::parse(j.out);
  ASSERT_EQ(doc["kernels"].size(), 2u);
  // In report order of the launches that stand for each group: kern_b's (2) first.
  EXPECT_EQ(doc["kernels"][0]["index"], 2);  // 1200 and 1400 ns: the lower median
  EXPECT_EQ(doc["kernels"][0]["launches"]["indices"], json({2, 4}));
  const auto& a = doc["kernels"][1]["launches"];
  EXPECT_EQ(doc["kernels"][1]["index"], 3);
  EXPECT_EQ(a["count"], 5);
  EXPECT_EQ(a["indices"], json({0, 1, 3, 5, 6}));
  EXPECT_EQ(a["representative"], 3);  // durations 1000, 1100, 1300, 1500, 1600: median 1300
  EXPECT_DOUBLE_EQ(a["total_ns"].get<double>(), 6500);
  EXPECT_DOUBLE_EQ(a["min_ns"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(a["max_ns"].get<double>(), 1600);
  auto text = run_keet("analyze --print-summary per-kernel " + r);
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("x5 launches"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("5 launches: median 1.30 us (1.00 us to 1.60 us), total 6.50 us"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("[0] "), std::string::npos);  // launch 0 is folded into launch 3
  auto list = run_keet("list --format json --print-summary per-kernel " + r);
  ASSERT_EQ(list.rc, 0);
  auto groups = json::parse(list.out)["kernels"];
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0]["launches"], 5);
  EXPECT_DOUBLE_EQ(groups[0]["mean_ns"].get<double>(), 1300);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// export --metrics, as ncu's: names and regex:<pattern>, comma-separated.
TEST(Selection, ExportMetricsKeepsOnlyTheNamedColumns) {
  std::string r = launches_report();
  auto csv = run_keet("export --format csv --metrics gpu__time_duration.sum,regex:^sm__ " + r);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  std::string header = csv.out.substr(0, csv.out.find('\n'));
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 8 + 2 - 1) << header;  // 8 ID columns + 2 metrics
  EXPECT_NE(header.find("\"gpu__time_duration.sum\""), std::string::npos);
  EXPECT_NE(header.find("\"sm__throughput.avg.pct_of_peak_sustained_elapsed\""), std::string::npos);
  auto j = run_keet("export --format json --metrics gpu__time_duration.sum " + r);
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = json::parse(j.out);
  EXPECT_EQ(doc["kernels"][0]["metrics"].size(), 1u);
  EXPECT_EQ(run_keet("export --metrics 'regex:(' " + r).rc, 2);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// "-" reads the report from standard input, for every pass a command makes.
TEST(Selection, DashReadsTheReportFromStandardInput) {
  std::string r = launches_report();
  for (std::string cmd :
       {"analyze --format json", "export --format csv", "doctor --format json", "list --format json"}) {
    auto piped = run_command("(cat " + r + " | " + keet_binary() + " " + cmd + " -)");
    auto direct = run_keet(cmd + " " + r);
    EXPECT_EQ(piped.rc, direct.rc) << cmd << piped.err;
    EXPECT_FALSE(piped.out.empty()) << cmd;
    if (cmd.starts_with("export")) EXPECT_EQ(piped.out, direct.out) << cmd;
  }
  auto empty = run_command(keet_binary() + " analyze -");
  EXPECT_EQ(empty.rc, 2);
  EXPECT_NE(empty.err.find("empty"), std::string::npos) << empty.err;
}

}  // namespace
}  // namespace keet
