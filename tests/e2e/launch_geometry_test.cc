// End-to-end: launch geometry (grid and block, in blocks and threads per
// block) as `keet list`, `analyze` and `export` show it, against what ncu
// itself counts (launch__grid_size / launch__block_size), on every fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "readers/reader.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

// Every fixture's kernels: grid x y z equals the report's own launch__grid_size
// and block x y z its launch__block_size. 2019/2020-era reports store GridSize in
// threads; the reader turns it into blocks.
TEST(LaunchGeometry, EveryFixtureKernelAgreesWithItsLaunchMetrics) {
  KEET_REQUIRE_SHARED();
  readers::ReadOptions opt;
  opt.instances = opt.rules = opt.modules = false;
  opt.metric_filter = [](std::string_view n) { return n == "launch__grid_size" || n == "launch__block_size"; };
  int checked = 0;
  for (const auto& path : fixture_reports()) {
    SCOPED_TRACE(path);
    auto r = readers::load_file(path, opt);
    ASSERT_TRUE(r) << r.error().message;
    for (const auto& k : r->kernels) {
      auto g = k.number("launch__grid_size"), b = k.number("launch__block_size");
      if (!g || !b) continue;
      EXPECT_EQ(static_cast<double>(k.grid.product()), *g) << "kernel " << k.index;
      EXPECT_EQ(static_cast<double>(k.block.product()), *b) << "kernel " << k.index;
      ++checked;
    }
  }
  EXPECT_GE(checked, 500);
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("\"")) rows.push_back(csv_cells(line));
  }
  return rows;
}

// launch__grid_size and launch__block_size per kernel, as ncu 2024.1 prints them.
std::vector<std::pair<uint64_t, uint64_t>> oracle_launch(const std::string& report) {
  auto r = run_command(shell_quote(*shared_dir() + "/tools/ncu-oracle-2024.1") + " --import " + shell_quote(report) +
                       " --page raw --csv --print-units base");
  EXPECT_EQ(r.rc, 0) << r.err;
  auto rows = csv_rows(r.out);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (rows.size() < 3) return out;
  auto col = [&](const std::string& name) { return std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin(); };
  auto g = col("launch__grid_size"), b = col("launch__block_size");
  for (size_t i = 2; i < rows.size(); ++i) out.emplace_back(std::stoull(rows[i][g]), std::stoull(rows[i][b]));
  return out;
}

uint64_t product(const nlohmann::json& d) { return d[0].get<uint64_t>() * d[1].get<uint64_t>() * d[2].get<uint64_t>(); }

// The 2019-era .nsight-cuprof-report fixtures ncu 2024.1 opens: list, analyze
// and export (JSON) agree with ncu's own block and thread counts.
TEST(LaunchGeometry, OldReportsShowBlocksInListAnalyzeAndExport) {
  KEET_REQUIRE_SHARED();
  for (std::string name :
       {"BrennenTaylor__Twisty/profile.nsight-cuprof-report", "strrules105__PhysiCell/profile.nsight-cuprof-report"}) {
    std::string path = *shared_dir() + "/fixtures/public/" + name;
    SCOPED_TRACE(path);
    auto want = oracle_launch(path);
    ASSERT_FALSE(want.empty());
    auto list = run_keet("list --format json " + shell_quote(path));
    auto exported = run_keet("export --format json " + shell_quote(path));
    auto analysis = run_keet("analyze --format json " + shell_quote(path));
    ASSERT_EQ(list.rc, 0) << list.err;
    ASSERT_EQ(exported.rc, 0) << exported.err;
    ASSERT_EQ(analysis.rc, 0) << analysis.err;
    auto lj = nlohmann::json::parse(list.out)["kernels"];
    auto ej = nlohmann::json::parse(exported.out)["kernels"];
    auto aj = nlohmann::json::parse(analysis.out)["kernels"];
    ASSERT_EQ(lj.size(), want.size());
    ASSERT_EQ(ej.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(product(lj[i]["grid"]), want[i].first) << "list, kernel " << i;
      EXPECT_EQ(product(lj[i]["block"]), want[i].second) << "list, kernel " << i;
      EXPECT_EQ(product(ej[i]["grid"]), want[i].first) << "export, kernel " << i;
      EXPECT_EQ(product(ej[i]["block"]), want[i].second) << "export, kernel " << i;
    }
    for (const auto& k : aj) {  // analyze shows the kernels it ranks, by report index
      size_t i = k["index"].get<size_t>();
      ASSERT_LT(i, want.size());
      EXPECT_EQ(product(k["grid"]), want[i].first) << "analyze, kernel " << i;
    }
  }
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

using namespace keet::testing;

nlohmann::json list_json(const std::string& path) {
  auto r = run_keet("list --format json " + shell_quote(path));
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.rc == 0 ? nlohmann::json::parse(r.out)["kernels"] : nlohmann::json::array();
}

// The raw CSV that ncu 2024.1 (and 2022.3, where it opens the report) writes
// of a report lists the same grid and block as the report itself, in `list`
// and in `analyze`.
TEST(LaunchGeometry, NcuRawCsvShowsTheBinaryReportsGeometry) {
  KEET_REQUIRE_SHARED();
  std::string dir = *shared_dir() + "/fixtures/public/";
  for (std::string name :
       {"BrennenTaylor__Twisty/profile.nsight-cuprof-report",
        "Lashi0812__CudaProgramming/profiling/profiles/smemTranspose.ncu-rep", "ZSL98__bitwise_spgemm/sgemm.ncu-rep"}) {
    std::string path = dir + name;
    for (std::string oracle : {"ncu-oracle", "ncu-oracle-2024.1"}) {
      SCOPED_TRACE(path + " via " + oracle);
      std::string csv = temp_path("geometry.csv");
      auto made = run_command(shell_quote(*shared_dir() + "/tools/" + oracle) + " --import " + shell_quote(path) +
                              " --page raw --csv");
      ASSERT_EQ(made.rc, 0) << made.err;
      std::ofstream(csv, std::ios::binary) << made.out;
      auto want = list_json(path), got = list_json(csv);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i]["grid"], want[i]["grid"]) << "kernel " << i;
        EXPECT_EQ(got[i]["block"], want[i]["block"]) << "kernel " << i;
      }
      auto analysis = run_keet("analyze --format json " + shell_quote(csv));
      ASSERT_EQ(analysis.rc, 0) << analysis.err;
      const auto doc = nlohmann::json::parse(analysis.out);  // named: a range over a temporary's member dangles
      for (const auto& k : doc["kernels"]) {
        size_t i = k["index"].get<size_t>();
        ASSERT_LT(i, want.size());
        EXPECT_EQ(k["grid"], want[i]["grid"]) << "analyze, kernel " << i;
        EXPECT_EQ(k["block"], want[i]["block"]) << "analyze, kernel " << i;
      }
    }
  }
}

// nvprof's metric/event tables: one row per kernel name with its invocation count.
TEST(LaunchGeometry, NvprofTablesGiveInvocations) {
  KEET_REQUIRE_SHARED();
  auto k = list_json(*shared_dir() + "/fixtures/public/pssrawat__IEEE2017/dsl-float/j2d5pt/jacobi-orig.profile");
  ASSERT_FALSE(k.empty());
  for (const auto& kernel : k) EXPECT_EQ(kernel["invocations"], 3);  // the file's "Invocations" column
  auto text = run_keet("list " +
                       shell_quote(*shared_dir() + "/fixtures/public/pssrawat__IEEE2017/dsl-float/cheby/untiled.csv"));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("calls"), std::string::npos);
}

}  // namespace
}  // namespace keet
