// End-to-end: the CSV readers on real exports. The oracle writes a raw CSV of
// a report; reading it back must give what reading the .ncu-rep gives (within
// ncu's print rounding). The fixture CSVs (ncu details pages, nvprof) load.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/file.h"
#include "model/units.h"
#include "readers/reader.h"
#include "support/report_writer.h"
#include "support/testing.h"
#include "util/strings.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using namespace keet::testing;

std::string oracle_raw(const std::string& report, const std::string& units) {
  auto r = run_command(shell_quote(*shared_dir() + "/tools/ncu-oracle") + " --import " + shell_quote(report) +
                       " --page raw --csv --print-units " + units);
  EXPECT_EQ(r.rc, 0) << r.err;
  std::string path = temp_path(fs::path(report).stem().string() + "-" + units + ".csv");
  EXPECT_TRUE(io::write_text_file(path, r.out).has_value());
  return path;
}

// Two decimals in the printed unit: `scale` is the factor to base units.
bool within_rounding(double want, double got, double scale) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(want - got) <= 0.005 * scale + 1e-9 * std::fabs(want);
}

void expect_same_kernels(const model::Report& rep, const model::Report& csv, bool auto_units) {
  ASSERT_EQ(rep.kernels.size(), csv.kernels.size());
  for (size_t i = 0; i < rep.kernels.size(); ++i) {
    const auto& a = rep.kernels[i];
    const auto& b = csv.kernels[i];
    EXPECT_EQ(a.display_name(), b.display_name());
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.block, b.block);
    int compared = 0;
    for (const auto& m : a.metrics) {
      const auto* c = b.find(m.name);
      if (c == nullptr || m.value.empty()) continue;  // hidden or value-less metrics
      SCOPED_TRACE(m.name);
      if (m.value.kind == model::Value::Kind::String)
        EXPECT_EQ(m.value.text, c->value.text);
      else if (auto want = m.value.as_number(); want && c->value.is_number()) {
        // Auto units print 2 decimals of a value scaled into [1, 1000): 0.5% at worst.
        double scale = auto_units ? std::max(1.0, std::fabs(*want)) : 1.0;
        EXPECT_TRUE(within_rounding(*want, *c->value.as_number(), scale)) << *want << " vs " << *c->value.as_number();
      }
      ++compared;
    }
    EXPECT_GT(compared, 50);
  }
}

std::vector<std::string> readback_reports() {
  std::vector<std::string> out;
  if (auto ex = oracle_examples())
    for (const auto& e : fs::directory_iterator(*ex))
      if (e.path().extension() == ".ncu-rep") out.push_back(e.path().string());
  out.push_back(*shared_dir() + "/fixtures/public/Lashi0812__CudaProgramming/profiling/profiles/smemSquare.ncu-rep");
  return out;
}

TEST(CsvReadback, OracleRawCsvReadsLikeTheReport) {
  KEET_REQUIRE_SHARED();
  for (const auto& report : readback_reports()) {
    SCOPED_TRACE(report);
    auto rep = readers::load_file(report);
    auto csv = readers::load_file(oracle_raw(report, "base"));
    ASSERT_TRUE(rep && csv) << (rep ? csv.error().message : rep.error().message);
    EXPECT_EQ(csv->format, model::Format::NcuCsvRaw);
    expect_same_kernels(*rep, *csv, false);
  }
}

TEST(CsvReadback, AutoScaledUnitsConvertBackToBase) {
  KEET_REQUIRE_SHARED();
  auto report = readback_reports().front();
  auto rep = readers::load_file(report);
  auto csv = readers::load_file(oracle_raw(report, "auto"));
  ASSERT_TRUE(rep && csv);
  expect_same_kernels(*rep, *csv, true);
  EXPECT_EQ(csv->kernels[0].find("gpu__time_duration.sum")->unit, "nsecond");
}

TEST(CsvReadback, ExportOfTheOracleCsvIsTheOracleCsv) {
  KEET_REQUIRE_SHARED();
  auto path = oracle_raw(readback_reports().front(), "base");
  auto r = run_keet("export --format csv " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream in(path);
  std::stringstream want;
  want << in.rdbuf();
  // Header and units rows come back column for column, except metrics whose
  // only content is an instance list: a CSV cell holds no list, so those
  // columns are empty in ncu's export and cannot come back. Values are checked
  // below within print rounding (a "0.00" read back is the double 0).
  const std::string want_text = want.str();  // the views below point into it
  auto a = split(want_text, '\n'), b = split(r.out, '\n');
  ASSERT_EQ(a.size(), b.size());
  // ncu quotes every cell, so '","' separates cells even inside kernel names.
  auto cells = [](std::string_view line) {
    std::vector<std::string> out;
    for (size_t pos = 0;;) {
      size_t next = line.find("\",\"", pos);
      out.emplace_back(line.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
      if (next == std::string_view::npos) return out;
      pos = next + 3;
    }
  };
  auto header_a = cells(a[0]), units_a = cells(a[1]), row_a = cells(a[2]);
  ASSERT_EQ(header_a.size(), row_a.size());
  std::vector<std::string> kept_header, kept_units;
  for (size_t i = 0; i < header_a.size(); ++i)
    if (i < 8 || !(row_a[i].empty() || row_a[i] == "\"" || row_a[i] == "\"\"")) {
      kept_header.push_back(header_a[i]);
      kept_units.push_back(units_a[i]);
    }
  EXPECT_EQ(kept_header, cells(b[0]));
  EXPECT_EQ(kept_units, cells(b[1]));
  auto again = readers::load(*io::memory_source("again.csv", r.out));
  auto first = readers::load_file(path);
  ASSERT_TRUE(again && first);
  expect_same_kernels(*first, *again, false);
}

struct FixtureCsv {
  std::string path, kind;
};

std::vector<FixtureCsv> fixture_csvs() {
  std::vector<FixtureCsv> out;
  std::string dir = *shared_dir() + "/fixtures/public/";
  std::ifstream in(dir + "MANIFEST.tsv");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, '\t');) f.push_back(cell);
    if (f.size() > 6 && (f[5] == "csv-details" || f[5] == "nvprof-csv")) out.push_back({dir + f[0], f[5]});
  }
  return out;
}

// keet's raw CSV has ncu's units row; reading it back takes each column's unit
// from that row. The reader once kept the unit as a view of a temporary string
// (a stack use after scope under ASan: scripts/sanitize), so units could read
// as whatever the stack held next. Needs no ../shared.
TEST(CsvReadback, OwnRawExportReadsBackToTheSameCsv) {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(w.kernel("void scale<float>(float*, int)", 1024, 256,
                               {{"gpu__time_duration.sum", 52000},
                                {"dram__bytes_read.sum", 4194304},
                                {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 81.5},
                                {"sm__cycles_elapsed.avg.per_second", 1.41e9},
                                {"launch__registers_per_thread", 32}})
                          .SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string rep = temp_path("readback-writer.ncu-rep");
  w.write(rep);
  auto first = run_keet("export --format csv " + shell_quote(rep));
  ASSERT_EQ(first.rc, 0) << first.err;
  ASSERT_NE(first.out.find("\"nsecond\""), std::string::npos) << "no units row:\n" << first.out;
  std::string csv = temp_path("readback-writer.csv");
  write_file(csv, first.out);
  auto again = run_keet("export --format csv " + shell_quote(csv));
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
}

TEST(CsvReadback, EveryFixtureCsvLoads) {
  KEET_REQUIRE_SHARED();
  auto files = fixture_csvs();
  ASSERT_GE(files.size(), 20u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.path);
    auto r = readers::load_file(f.path);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    ASSERT_FALSE(r->kernels.empty());
    auto want = f.kind == "nvprof-csv" ? model::Format::NvprofCsv : model::Format::NcuCsvDetails;
    EXPECT_EQ(r->format, want);
    for (const auto& k : r->kernels) EXPECT_FALSE(k.metrics.empty()) << k.display_name();
  }
}

TEST(CsvReadback, DetailsPagesOfStandardSectionsMapToMetricNames) {
  KEET_REQUIRE_SHARED();
  std::string dir = *shared_dir() + "/fixtures/public/";
  auto r = readers::load_file(dir + "brycelelbach__nsightful/tests/copy_blocked.csv");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& k = r->kernels.at(0);
  for (const char* name : {"gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                           "launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active"})
    EXPECT_NE(k.find(name), nullptr) << name;
  EXPECT_EQ(k.find("gpu__time_duration.sum")->unit, "nsecond");
  EXPECT_FALSE(k.rules.empty());
  // Breakdown rows ("L1: Data Bank Reads") and sections newer than the table
  // stay as "details:" names; the sections' own labels map.
  int mapped = 0;
  for (const auto& m : k.metrics) mapped += !m.name.starts_with("details:");
  EXPECT_GE(mapped, 40);
}

TEST(CsvReadback, DetailsPageFromTheOracleMatchesTheReport) {
  KEET_REQUIRE_SHARED();
  auto report = readback_reports().front();
  auto out = run_command(shell_quote(*shared_dir() + "/tools/ncu-oracle") + " --import " + shell_quote(report) +
                         " --page details --csv");
  ASSERT_EQ(out.rc, 0);
  auto src = io::memory_source("details.csv", out.out);
  auto det = readers::load(*src);
  auto rep = readers::load_file(report);
  ASSERT_TRUE(det && rep);
  EXPECT_EQ(det->format, model::Format::NcuCsvDetails);
  const auto& a = rep->kernels.at(0);
  const auto& b = det->kernels.at(0);
  int compared = 0;
  for (const auto& m : b.metrics) {
    if (m.name.starts_with("details:") || m.name.starts_with("device__")) continue;
    auto want = a.number(m.name);
    auto got = m.value.as_number();
    if (!want || !got) continue;
    // The details page keeps 3-4 significant digits in auto-scaled units.
    EXPECT_NEAR(*got, *want, std::max(0.006, std::fabs(*want) * 0.006)) << m.name;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

}  // namespace
}  // namespace keet
