// ncu's conventions the other end-to-end files do not cover: several reports
// in one call, --print-units, and the one unit formatter behind every
// human-readable number (durations, sizes, counts, table width).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using nlohmann::json;

std::string one_kernel(const std::string& file, const std::string& name,
                       std::vector<std::pair<std::string, double>> metrics) {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(w.kernel(name, 8192, 256, metrics).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return path;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(SeveralReports, ListMetricsAndAnalyzeTakeThemInOrder) {
  auto a = one_kernel("several_a.ncu-rep", "first_k", {{"gpu__time_duration.sum", 1000}});
  auto b = one_kernel("several_b.ncu-rep", "second_k", {{"gpu__time_duration.sum", 2000}});
  std::string both = shell_quote(a) + " " + shell_quote(b);
  auto list = run_keet("list --format json " + both);
  ASSERT_EQ(list.rc, 0) << list.err;
  auto k = json::parse(list.out)["kernels"];
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0]["name"], "first_k()");
  EXPECT_EQ(k[0]["report"], a);
  EXPECT_EQ(k[1]["report"], b);
  EXPECT_EQ(k[1]["index"], 0);  // indices stay those of each report
  auto one = json::parse(run_keet("list --format json " + shell_quote(a)).out)["kernels"];
  EXPECT_FALSE(one[0].contains("report"));  // one report: the document is as before
  auto table = run_keet("list " + both);
  EXPECT_EQ(table.out.rfind("report", 0), 0u) << table.out;  // a leading report column
  EXPECT_NE(table.out.find(b), std::string::npos);
  auto metrics = run_keet("metrics --format json -g duration " + both);
  ASSERT_EQ(metrics.rc, 0) << metrics.err;
  auto mk = json::parse(metrics.out)["kernels"];
  ASSERT_EQ(mk.size(), 2u);
  EXPECT_EQ(mk[1]["report"], b);
  auto csv = run_keet("metrics --format csv -g duration " + both);
  EXPECT_EQ(lines_of(csv.out).at(0), "\"report\",\"kernel_index\",\"kernel\",\"metric\",\"unit\",\"value\"");
  EXPECT_EQ(lines_of(csv.out).at(2).rfind("\"" + b + "\",0,", 0), 0u) << csv.out;
  auto text = run_keet("analyze " + both);
  ASSERT_EQ(text.rc, 0) << text.err;
  auto at_a = text.out.find("Report: " + a), at_b = text.out.find("Report: " + b);
  ASSERT_NE(at_a, std::string::npos) << text.out;
  ASSERT_NE(at_b, std::string::npos);
  EXPECT_LT(at_a, text.out.find("first_k"));
  EXPECT_LT(at_b, text.out.find("second_k"));
  auto json_two = run_keet("analyze --format json " + both);
  EXPECT_EQ(json_two.rc, 2);
  EXPECT_NE(json_two.err.find("describes one report"), std::string::npos) << json_two.err;
  // A missing second report is the usual one-line error.
  auto missing = run_keet("list " + shell_quote(a) + " /nonexistent.ncu-rep");
  EXPECT_EQ(missing.rc, 2);
}

TEST(Units, DurationsPastASecondReadInSeconds) {
  auto r = one_kernel("long_kernel.ncu-rep", "slow_k", {{"gpu__time_duration.sum", 10411204000.0}});
  for (std::string cmd : {"list ", "analyze ", "list --print-summary per-kernel "}) {
    auto out = run_keet(cmd + shell_quote(r));
    ASSERT_EQ(out.rc, 0) << out.err;
    EXPECT_NE(out.out.find("10.41 s"), std::string::npos) << cmd << out.out;
    EXPECT_EQ(out.out.find("10411.204 ms"), std::string::npos) << cmd;
  }
}

// The scenario's excess sectors: ncu's raw page labels the derived metric
// "byte", but it counts sectors; text and HTML show one number one way.
TEST(Units, TextAndHtmlShowCountsAndSizesTheSameWay) {
  auto r = shell_quote(one_kernel("units_scenario.ncu-rep", "strided_copy", scenario_metrics(120000)));
  auto text = run_keet("analyze " + r);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("(6,000,000 sectors)"), std::string::npos) << text.out;
  // Evidence rows: the reader's words, the number, its unit (the metric name with --verbose).
  EXPECT_NE(text.out.find("L1-L2 sectors of global accesses no thread needed  6,000,000  sector"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("6.00 MB"), std::string::npos) << text.out;
  auto html = run_keet("analyze --format html " + r);
  ASSERT_EQ(html.rc, 0) << html.err;
  EXPECT_NE(html.out.find("<td class='num'>6,000,000 sector</td>"), std::string::npos) << html.out;
  EXPECT_EQ(html.out.find("e+06"), std::string::npos) << "no exponent notation for the count";
  auto md = run_keet("analyze --format markdown " + r);
  EXPECT_NE(md.out.find("6,000,000 sector"), std::string::npos);
}

// On a terminal ($COLUMNS here) the table fits it and a long name wraps in
// its column; piped, as ncu's tables do, every name stays whole on its line.
TEST(Units, MetricsTableFitsTheTerminalAndKeepsNamesWholeInAPipe) {
  std::string long_name =
      "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued_with_a_very_long_suffix"
      ".sum.pct_of_peak_sustained_elapsed.per_second";
  auto r = one_kernel("wide.ncu-rep", "k", {{long_name, 1.5}, {"gpu__time_duration.sum", 1000}});
  for (size_t width : {60, 100}) {
    auto out = run_command("COLUMNS=" + std::to_string(width) + " " + shell_quote(keet_binary()) + " metrics " +
                           shell_quote(r));
    ASSERT_EQ(out.rc, 0) << out.err;
    auto lines = lines_of(out.out);
    std::string joined;
    for (size_t i = 1; i < lines.size(); ++i) {  // the first line is the kernel's heading
      EXPECT_LE(lines[i].size(), width) << lines[i];
      joined += lines[i].substr(0, lines[i].find(' '));
    }
    EXPECT_NE(joined.find(long_name), std::string::npos) << "the name wraps, it is not cut: " << out.out;
  }
  auto piped = run_command("env -u COLUMNS " + shell_quote(keet_binary()) + " metrics " + shell_quote(r));
  ASSERT_EQ(piped.rc, 0) << piped.err;
  EXPECT_NE(piped.out.find(long_name + " "), std::string::npos) << "one line, whole: " << piped.out;
  if (auto ex = oracle_examples()) {  // the report the issue measured at 219 columns
    auto sample = run_command("COLUMNS=100 " + shell_quote(keet_binary()) + " metrics " +
                              shell_quote(*ex + "/addConstDouble3.ncu-rep"));
    ASSERT_EQ(sample.rc, 0) << sample.err;
    auto lines = lines_of(sample.out);
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_LE(lines[i].size(), 100u) << lines[i];
  }
}

TEST(PrintUnits, AutoScalesColumnsAndMetricsAsNcu) {
  auto r = shell_quote(one_kernel("auto_units.ncu-rep", "k",
                                  {{"gpu__time_duration.sum", 10776576},
                                   {"dram__bytes_read.sum.per_second", 7.84e11},
                                   {"launch__block_size", 256}}));
  auto csv = run_keet("export --format csv --print-units auto " + r);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  auto lines = lines_of(csv.out);
  ASSERT_EQ(lines.size(), 3u) << csv.out;
  EXPECT_NE(lines[1].find("\"msecond\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"Gbyte/second\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"10.776576\""), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("\"784.000000\""), std::string::npos) << lines[2];
  auto base = run_keet("export --format csv " + r);
  EXPECT_NE(base.out.find("\"10776576\""), std::string::npos);  // base stays as ncu --print-units base
  auto m = run_keet("metrics --format json --print-units auto -g duration " + r);
  ASSERT_EQ(m.rc, 0) << m.err;
  auto d = json::parse(m.out)["kernels"][0]["metrics"]["gpu__time_duration.sum"];
  EXPECT_EQ(d["unit"], "msecond");
  EXPECT_DOUBLE_EQ(d["value"].get<double>(), 10.776576);
  auto table = run_keet("metrics --print-units auto -g duration " + r);
  EXPECT_NE(table.out.find("msecond"), std::string::npos);
  auto none = run_keet("metrics -g no_such_metric_anywhere " + r);  // says so rather than an empty table
  EXPECT_EQ(none.rc, 0) << none.err;
  EXPECT_NE(none.out.find("no metric of this kernel matches"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("metric  unit"), std::string::npos) << none.out;
  EXPECT_EQ(run_keet("export --format json --print-units auto " + r).rc, 2);
  EXPECT_EQ(run_keet("metrics --print-units kilo " + r).rc, 2);
}

// Where ../shared has the oracle: keet's auto page is ncu's, byte for byte, on
// every report whose base page already is (the base comparison lists the rest).
TEST(PrintUnits, AutoPageIsNcusOnTheFixtures) {
  KEET_REQUIRE_SHARED();
  std::string ncu = *shared_dir() + "/tools/ncu-oracle";
  size_t compared = 0, identical = 0;
  std::vector<std::string> differ;
  for (const auto& report : fixture_reports()) {
    auto q = shell_quote(report);
    auto base = run_command(shell_quote(ncu) + " --import " + q + " --page raw --csv --print-units base");
    if (base.rc != 0 || base.out.empty() || run_keet("export --format csv " + q).out != base.out) continue;
    auto want = run_command(shell_quote(ncu) + " --import " + q + " --page raw --csv --print-units auto");
    auto got = run_keet("export --format csv --print-units auto " + q);
    ++compared;
    if (got.out == want.out)
      ++identical;
    else
      differ.push_back(report);
    if (compared >= 6) break;  // bounded: two oracle runs per report
  }
  ASSERT_GT(compared, 0u);
  EXPECT_EQ(identical, compared) << "first differing: " << (differ.empty() ? "" : differ[0]);
}

}  // namespace
}  // namespace keet
