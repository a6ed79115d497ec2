// End-to-end: `keet export --format csv` against the oracle's
// `ncu --import R --page raw --csv --print-units base`, on every fixture the
// oracle imports and on NVIDIA's sample reports; plus kernel counts against
// the block headers of every fixture report, and loading the reports the
// oracle cannot import.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "ncu_report.pb.h"
#include "readers/reader.h"
#include "support/testing.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using namespace keet::testing;

using Row = std::vector<std::string>;

std::vector<Row> parse_csv(const std::string& text) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("\"")) rows.push_back(csv_cells(line));  // skips ==PROF== lines
  return rows;
}

struct ManifestRow {
  std::string path, import_ok, kind, n_kernels;
};

std::vector<ManifestRow> manifest() {
  std::vector<ManifestRow> rows;
  std::string dir = *shared_dir() + "/fixtures/public/";
  std::istringstream in(read_file(dir + "MANIFEST.tsv"));
  std::string line;
  std::getline(in, line);  // header: local_path repo commit original_path bytes kind ncu_import_ok ... n_kernels
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, '\t');) f.push_back(cell);
    if (f.size() > 10) rows.push_back({dir + f[0], f[6], f[5], f[10]});
  }
  return rows;
}

// What the oracle imports: manifest "yes" rows plus NVIDIA's samples.
std::vector<std::string> oracle_reports() {
  std::vector<std::string> out;
  for (const auto& r : manifest())
    if (r.import_ok == "yes") out.push_back(r.path);
  if (auto ex = oracle_examples())
    for (const auto& e : fs::directory_iterator(*ex))
      if (e.path().extension() == ".ncu-rep") out.push_back(e.path().string());
  return out;
}

// Oracle pages by (oracle, report): each oracle runs once per report for the
// whole test binary (it starts slowly).
std::map<std::pair<std::string, std::string>, std::string>& oracle_cache() {
  static std::map<std::pair<std::string, std::string>, std::string> cache;
  return cache;
}

// Runs the oracle on every report not cached yet, two at a time (CI has two
// cores). "" for a report the oracle does not open.
std::vector<std::string> oracle_all(const std::string& oracle, const std::vector<std::string>& reports) {
  std::vector<std::string> out(reports.size());
  std::vector<bool> cached(reports.size());
  for (size_t i = 0; i < reports.size(); ++i)
    if (auto it = oracle_cache().find({oracle, reports[i]}); it != oracle_cache().end()) {
      out[i] = it->second;
      cached[i] = true;
    }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < reports.size();) {
      if (cached[i]) continue;
      auto r = run_command(shell_quote(*shared_dir() + "/tools/" + oracle) + " --import " + shell_quote(reports[i]) +
                           " --page raw --csv --print-units base");
      if (r.rc == 0) out[i] = std::move(r.out);
    }
  };
  auto helper = std::async(std::launch::async, work);
  work();
  helper.get();
  for (size_t i = 0; i < reports.size(); ++i) oracle_cache()[{oracle, reports[i]}] = out[i];
  return out;
}

// ncu prints non-integral doubles with two decimals: equal within that rounding.
bool numerically_close(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  if (a.empty() || b.empty() || *ea || *eb) return false;
  return std::fabs(x - y) <= 0.005 + 1e-12 * std::fabs(x);
}

struct Comparison {
  int exact_cells = 0, close_cells = 0, unit_diffs = 0;
  std::vector<std::string> problems;
};

// Units row: exact, except derived__* metrics, whose units ncu takes from the
// section that defined them (documented: KEET's table holds the usual one).
void compare_units(const Row& head, const Row& want, const Row& got, Comparison& c) {
  for (size_t i = 0; i < head.size() && i < got.size(); ++i) {
    if (want[i] == got[i]) continue;
    if (head[i].starts_with("derived__"))
      ++c.unit_diffs;
    else
      c.problems.push_back("unit of " + head[i] + ": oracle '" + want[i] + "', keet '" + got[i] + "'");
  }
}

void compare_cells(const Row& head, const Row& want, const Row& got, Comparison& c) {
  for (size_t i = 0; i < head.size() && i < got.size(); ++i) {
    if (want[i] == got[i])
      ++c.exact_cells;
    else if (numerically_close(want[i], got[i]))
      ++c.close_cells;
    else
      c.problems.push_back(head[i] + ": oracle '" + want[i] + "', keet '" + got[i] + "'");
  }
}

Comparison compare(const std::string& oracle, const std::string& keet) {
  Comparison c;
  auto want = parse_csv(oracle), got = parse_csv(keet);
  if (want.size() != got.size() || want.size() < 2) {
    c.problems.push_back("row count: oracle " + std::to_string(want.size()) + ", keet " + std::to_string(got.size()));
    return c;
  }
  if (want[0] != got[0]) c.problems.push_back("header row differs");
  compare_units(want[0], want[1], got[1], c);
  for (size_t r = 2; r < want.size(); ++r) {
    if (want[r].size() != got[r].size()) c.problems.push_back("row " + std::to_string(r) + " width differs");
    compare_cells(want[0], want[r], got[r], c);
  }
  return c;
}

TEST(CsvOracleExport, EveryImportableReportMatchesNcuRawCsv) {
  KEET_REQUIRE_SHARED();
  auto reports = oracle_reports();
  ASSERT_GE(reports.size(), 40u);
  int identical = 0;
  auto pages = oracle_all("ncu-oracle", reports);
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& path = reports[i];
    SCOPED_TRACE(path);
    const std::string& want = pages[i];
    EXPECT_FALSE(want.empty()) << "the oracle should open it";
    auto got = run_keet("export --format csv " + shell_quote(path));
    ASSERT_EQ(got.rc, 0) << got.err;
    auto c = compare(want, got.out);
    EXPECT_TRUE(c.problems.empty()) << c.problems.size() << " differences, first: " << c.problems.front();
    // Byte-identical, except the documented derived__* unit differences.
    if (want == got.out)
      ++identical;
    else
      EXPECT_GT(c.unit_diffs, 0) << "differs from the oracle's bytes with no documented reason";
    EXPECT_EQ(c.close_cells, 0) << "values should print exactly as ncu prints them";
  }
  EXPECT_GE(identical, static_cast<int>(reports.size()) - 1);
}

// --- ncu 2024.1 ---
//
// The same comparison against ncu 2024.1 on every fixture it opens (82 of 83;
// it crashes on evozone96__matrixMul, as 2022.3 does), including the 2023.2+
// reports 2022.3 refuses. The two ncu versions disagree in places; KEET's
// rules, each checked below:
// - ID columns: 2024.1 prints ID, Process ID, Process Name, Host Name, Kernel
//   Name, Context, Stream, Block Size, Grid Size, Device, CC (no Kernel Time);
//   2022.3 the 8 columns ID..Stream with Kernel Time. KEET keeps 2022.3's
//   layout, the page its contract names and scripts written against it parse.
//   The columns both print must agree.
// - Values: every metric cell both print must be equal, byte for byte.
// - Units: where 2022.3 and 2024.1 print different units for a metric (the
//   metric database changed, e.g. 2024.1 gives profiler__replayer_passes the
//   unit "pass"), KEET follows 2022.3, the oracle its units table was built
//   and is tested against. Units of metrics 2022.3 never printed (newer
//   reports' metrics) come from KEET's naming rules; the differences left are
//   listed (RecordProperty and on failure) and may not grow.

std::map<std::string, size_t> column_index(const Row& head) {
  std::map<std::string, size_t> m;
  for (size_t i = 0; i < head.size(); ++i) m.emplace(head[i], i);
  return m;
}

// metric -> the units an oracle printed for it (they depend on the chip).
using UnitSets = std::map<std::string, std::set<std::string>>;
void collect_units(const std::string& csv, UnitSets& units) {
  auto rows = parse_csv(csv);
  if (rows.size() < 2) return;
  for (size_t i = 0; i < rows[0].size() && i < rows[1].size(); ++i) units[rows[0][i]].insert(rows[1][i]);
}

struct Compared24 {
  int values = 0, reports = 0;
  std::vector<std::string> problems;
  std::set<std::string> new_metric_unit_gaps;  // metric: 2024.1 unit vs KEET's
};

void compare_2024(const std::string& path, const std::string& oracle, const std::string& keet, bool checked_by_2022,
                  const UnitSets& units_2022, Compared24& c) {
  auto want = parse_csv(oracle), got = parse_csv(keet);
  if (want.size() != got.size() || want.size() < 2) {
    c.problems.push_back(path + ": row count: oracle " + std::to_string(want.size()) + ", keet " +
                         std::to_string(got.size()));
    return;
  }
  ++c.reports;
  auto mine = column_index(got[0]);
  const std::set<std::string> only_2024 = {"Block Size", "Grid Size", "Device", "CC"};
  for (size_t i = 0; i < want[0].size(); ++i) {
    const auto& name = want[0][i];
    auto at = mine.find(name);
    if (at == mine.end()) {
      if (!only_2024.contains(name)) c.problems.push_back(path + ": keet lacks column " + name);
      continue;
    }
    const auto& unit = want[1][i];
    const auto& keet_unit = got[1][at->second];
    // derived__: see the 2022.3 test. A report 2022.3 opens had its units
    // checked against 2022.3's page of it.
    if (unit != keet_unit && !name.starts_with("derived__") && !checked_by_2022) {
      auto old = units_2022.find(name);
      if (old == units_2022.end())
        c.new_metric_unit_gaps.insert(name + ": 2024.1 '" + unit + "', keet '" + keet_unit + "'");
      else if (!old->second.contains(keet_unit))
        c.problems.push_back(path + ": unit of " + name + ": keet '" + keet_unit + "', neither 2024.1's '" + unit +
                             "' nor one 2022.3 prints");
    }
    for (size_t r = 2; r < want.size(); ++r) {
      if (want[r][i] == got[r][at->second])
        ++c.values;
      else
        c.problems.push_back(path + ": " + name + " row " + std::to_string(r) + ": oracle '" + want[r][i] +
                             "', keet '" + got[r][at->second] + "'");
    }
  }
}

TEST(CsvOracleExport, EveryReportNcu2024OpensMatchesItsRawCsv) {
  KEET_REQUIRE_SHARED();
  auto reports = fixture_reports();
  if (auto ex = oracle_examples())
    for (const auto& e : fs::recursive_directory_iterator(*ex))
      if (e.path().extension() == ".ncu-rep") reports.push_back(e.path().string());
  auto pages_2024 = oracle_all("ncu-oracle-2024.1", reports);
  auto pages_2022 = oracle_all("ncu-oracle", reports);
  UnitSets units_2022;
  for (const auto& page : pages_2022) collect_units(page, units_2022);
  Compared24 c;
  int opened_only_by_2024 = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (pages_2024[i].empty()) continue;
    if (pages_2022[i].empty()) ++opened_only_by_2024;
    auto got = run_keet("export --format csv " + shell_quote(reports[i]));
    ASSERT_EQ(got.rc, 0) << reports[i] << ": " << got.err;
    compare_2024(reports[i], pages_2024[i], got.out, !pages_2022[i].empty(), units_2022, c);
  }
  EXPECT_GE(c.reports, 80);
  EXPECT_GE(opened_only_by_2024, 30);  // the 2023.2+ reports 2022.3 refuses
  EXPECT_GT(c.values, 0);
  EXPECT_TRUE(c.problems.empty()) << c.problems.size() << " differences, first: " << c.problems.front();
  std::string gaps;
  for (const auto& g : c.new_metric_unit_gaps) gaps += g + "; ";
  RecordProperty("unit_gaps_vs_2024_1", gaps);
  // Units of newer reports' metrics that KEET's naming rules get wrong; the
  // fix belongs in data/metrics/units.json. Do not let the list grow.
  EXPECT_LE(c.new_metric_unit_gaps.size(), 131u) << gaps;
  std::cout << "[ info ] " << c.reports << " reports, " << c.values << " value cells equal; " << opened_only_by_2024
            << " opened by 2024.1 only; " << c.new_metric_unit_gaps.size() << " unit gaps on newer metrics\n";
}

// Sum of NumResults over the block headers: an independent framing walk.
std::optional<uint64_t> header_kernel_count(const std::string& bytes) {
  auto u32 = [&](size_t at) -> std::optional<uint32_t> {
    if (at + 4 > bytes.size()) return std::nullopt;
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  auto n = u32(4);
  if (bytes.compare(0, 4, std::string("NVR\0", 4)) != 0 || !n) return std::nullopt;
  size_t at = 8 + *n;
  uint64_t kernels = 0;
  while (at < bytes.size()) {
    auto hl = u32(at);
    if (!hl || at + 4 + *hl > bytes.size()) return std::nullopt;
    pb::BlockHeader h;
    if (!h.ParsePartialFromString(bytes.substr(at + 4, *hl))) return std::nullopt;
    at += 4 + *hl;
    kernels += h.num_results();
    for (uint64_t i = 0; i < uint64_t{h.num_sources()} + h.num_results() + h.num_range_results(); ++i) {
      auto il = u32(at);
      if (!il) return std::nullopt;
      at += 4 + *il;
    }
  }
  return kernels;
}

TEST(CsvOracleExport, EveryFixtureListsTheKernelCountOfItsBlockHeaders) {
  KEET_REQUIRE_SHARED();
  auto reports = fixture_reports();
  ASSERT_GE(reports.size(), 60u);
  for (const auto& path : reports) {
    SCOPED_TRACE(path);
    auto expected = header_kernel_count(read_file(path));
    ASSERT_TRUE(expected.has_value()) << "the test's framing walk could not read it";
    readers::ReadOptions opt;
    opt.metrics = opt.instances = opt.rules = opt.modules = false;
    auto report = readers::load_file(path, opt);
    ASSERT_TRUE(report.has_value()) << report.error().message;
    EXPECT_EQ(report->kernels.size(), *expected);
  }
}

TEST(CsvOracleExport, ReportsTheOracleCannotImportStillLoad) {
  KEET_REQUIRE_SHARED();
  int checked = 0;
  for (const auto& row : manifest()) {
    if (row.kind != "ncu-rep" || !row.import_ok.starts_with("no")) continue;
    SCOPED_TRACE(row.path);
    auto report = readers::load_file(row.path);
    ASSERT_TRUE(report.has_value()) << report.error().message;
    EXPECT_FALSE(report->kernels.empty());
    if (!row.n_kernels.empty() && std::isdigit(static_cast<unsigned char>(row.n_kernels[0])))
      EXPECT_EQ(report->kernels.size(), std::stoul(row.n_kernels));
    if (checked++ < 3) {  // the CLI path too, on a few (each export takes seconds)
      auto exported = run_keet("export --format csv " + shell_quote(row.path));
      EXPECT_EQ(exported.rc, 0) << exported.err;
      EXPECT_EQ(parse_csv(exported.out).size(), report->kernels.size() + 2);  // header, units, kernels
    }
  }
  EXPECT_GE(checked, 30);
}

}  // namespace
}  // namespace keet
