// CSV readers (ncu raw/details pages, nvprof), the units table and ncu's value
// formatting, on inline CSV texts.
#include <gtest/gtest.h>

#include <cmath>

#include "io/file.h"
#include "model/units.h"
#include "readers/reader.h"
#include "render/raw_csv.h"
#include "support/testing.h"

namespace keet {
namespace {

using model::Value;

model::Report load_text(const std::string& text, const std::string& name = "input.txt") {
  auto src = io::memory_source(name, text);
  auto r = readers::load(*src);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? std::move(*r) : model::Report{};
}

std::string load_error(const std::string& text, const std::string& name = "bad.csv") {
  auto src = io::memory_source(name, text);
  auto r = readers::load(*src);
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error().message();
}

// --- units and formatting ---

TEST(CsvUnits, TableAndNamingRules) {
  EXPECT_EQ(model::unit_of("gpu__time_duration.sum"), "nsecond");
  EXPECT_EQ(model::unit_of("launch__registers_per_thread"), "register/thread");
  EXPECT_EQ(model::unit_of("device__attribute_clock_rate"), "");  // listed, and unitless
  // Names the table has never seen fall back to the naming rules.
  EXPECT_EQ(model::unit_of("xyz__bytes_read.sum.per_second"), "byte/second");
  EXPECT_EQ(model::unit_of("xyz__sectors_foo.avg.per_cycle_active"), "sector/cycle");
  EXPECT_EQ(model::unit_of("xyz__whatever.avg.pct_of_peak_sustained_elapsed"), "%");
  EXPECT_EQ(model::unit_of("xyz__whatever.sum"), "");
}

TEST(CsvUnits, UnknownChipsGetOnlyChipIndependentUnits) {
  model::Kernel k;
  k.metrics.push_back({"device__attribute_compute_capability_major", Value::of_uint(12), {}, ""});
  k.metrics.push_back({"device__attribute_compute_capability_minor", Value::of_uint(0), {}, ""});
  EXPECT_FALSE(model::chip_has_units(k));
  EXPECT_EQ(model::unit_of("gpu__time_duration.sum", k), "");
  EXPECT_EQ(model::unit_of("launch__occupancy_limit_blocks", k), "block");
  model::Kernel ampere;
  ampere.metrics.push_back({"device__attribute_compute_capability_major", Value::of_uint(8), {}, ""});
  ampere.metrics.push_back({"device__attribute_compute_capability_minor", Value::of_uint(6), {}, ""});
  EXPECT_EQ(model::unit_of("gpu__time_duration.sum", ampere), "nsecond");
}

TEST(CsvUnits, ValuesPrintLikeNcu) {
  EXPECT_EQ(model::csv_value_text("m", Value::of_double(12.564387829369586), true), "12.56");
  EXPECT_EQ(model::csv_value_text("m", Value::of_double(184669493.0), true), "184669493");
  EXPECT_EQ(model::csv_value_text("m", Value::of_double(0.0002), true), "0.00");
  EXPECT_EQ(model::csv_value_text("m", Value::of_double(-0.0), true), "0");
  EXPECT_EQ(model::csv_value_text("m", Value::of_double(std::nan("")), true), "nan");
  EXPECT_EQ(model::csv_value_text("m", Value::of_uint(18446744073709551615ull), true), "18446744073709551615");
  EXPECT_EQ(model::csv_value_text("m", Value::of_string("CachePreferNone"), true), "CachePreferNone");
  EXPECT_EQ(model::csv_value_text("m", Value{}, true), "no data");
  model::Metric list{"numa__id_cpu", Value{}, {{Value::of_uint(0), Value::of_string("0")}}, ""};
  EXPECT_EQ(model::csv_cell_text(list), "");  // a value-less list prints empty, not "no data"
}

TEST(CsvUnits, ScaledUnitsConvertToBase) {
  auto near = [](model::BaseValue b, double v, const std::string& u) {
    EXPECT_NEAR(b.value, v, std::fabs(v) * 1e-12) << u;
    EXPECT_EQ(b.unit, u);
  };
  near(model::to_base_unit(1.5, "Mbyte"), 1.5e6, "byte");
  near(model::to_base_unit(2.5, "usecond"), 2500, "nsecond");
  near(model::to_base_unit(1.41, "Ghz"), 1.41e9, "cycle/second");
  near(model::to_base_unit(1.41, "cycle/nsecond"), 1.41e9, "cycle/second");
  near(model::to_base_unit(7, "cycle/usecond"), 7e6, "cycle/second");
  near(model::to_base_unit(3, "Gbyte/second"), 3e9, "byte/second");
  near(model::to_base_unit(3, "Gbyte/s"), 3e9, "byte/second");
  near(model::to_base_unit(4, "Kinst"), 4000, "inst");
  near(model::to_base_unit(4, "sector/request"), 4, "sector/request");
  near(model::to_base_unit(4, "%"), 4, "%");
}

// --- ncu --page raw ---

const char* kRawBase =
    "==PROF== Connected to process 1 (/tmp/a.out)\n"
    "program output, with a comma\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\","
    "\"dram__bytes.sum\",\"gpu__time_duration.sum\",\"launch__grid_dim_x\",\"sm__throughput.avg.pct_of_peak_sustained_"
    "elapsed\",\"launch__func_cache_config\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte\",\"nsecond\",\"\",\"%\",\"\"\n"
    "\"0\",\"42\",\"a.out\",\"127.0.0.1\",\"k1(int, \"\"x\"\")\",\"2025-Feb-26 "
    "20:10:07\",\"1\",\"7\",\"1024\",\"2048\",\"64\",\"12.56\",\"CachePreferNone\"\n"
    "\"1\",\"42\",\"a.out\",\"127.0.0.1\",\"k2\",\"2025-Feb-26 20:10:08\",\"1\",\"7\",\"\",\"no "
    "data\",\"8\",\"nan\",\"\"\n";

TEST(CsvReaderRaw, ReadsIdColumnsMetricsAndUnits) {
  auto r = load_text(kRawBase);
  EXPECT_EQ(r.format, model::Format::NcuCsvRaw);
  ASSERT_EQ(r.kernels.size(), 2u);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.display_name(), "k1(int, \"x\")");
  EXPECT_EQ(k.process_id, 42u);
  EXPECT_EQ(k.host_name, "127.0.0.1");
  EXPECT_EQ(k.stream_id, 7u);
  EXPECT_EQ(k.grid.x, 64u);
  EXPECT_EQ(k.find("dram__bytes.sum")->value.kind, Value::Kind::Uint64);
  EXPECT_EQ(k.find("dram__bytes.sum")->unit, "byte");
  EXPECT_DOUBLE_EQ(*k.number("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 12.56);
  EXPECT_EQ(*k.text("launch__func_cache_config"), "CachePreferNone");
  const auto& k2 = r.kernels[1];
  EXPECT_EQ(k2.index, 1);
  EXPECT_EQ(k2.find("dram__bytes.sum"), nullptr);  // empty cell: not collected for this kernel
  EXPECT_TRUE(k2.find("gpu__time_duration.sum")->value.empty());
  EXPECT_TRUE(std::isnan(*k2.number("sm__throughput.avg.pct_of_peak_sustained_elapsed")));
}

TEST(CsvReaderRaw, ExportOfABaseUnitCsvReproducesIt) {
  std::string text = kRawBase;
  text = text.substr(text.find("\"ID\""));
  auto r = load_text(text);
  std::vector<const model::Kernel*> ks;
  for (const auto& k : r.kernels) ks.push_back(&k);
  // Column order: ncu sorts metric columns, the input above does not.
  auto out = render::raw_csv(r, ks);
  auto again = load_text(out);
  ASSERT_EQ(again.kernels.size(), 2u);
  EXPECT_EQ(render::raw_csv(again, {&again.kernels[0], &again.kernels[1]}), out);
  EXPECT_NE(out.find("\"dram__bytes.sum\",\"gpu__time_duration.sum\",\"launch__func_cache_config\""),
            std::string::npos);
  EXPECT_NE(out.find("\"2025-Feb-26 20:10:07\""), std::string::npos);
}

TEST(CsvReaderRaw, AutoUnitsWithoutUnitsRowOrWithScaledUnits) {
  std::string no_units =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel "
      "Time\",\"Context\",\"Stream\",\"gpu__time_duration.sum\"\n"
      "\"0\",\"1\",\"p\",\"h\",\"k\",\"\",\"1\",\"7\",\"2,048\"\n";
  auto r = load_text(no_units);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].find("gpu__time_duration.sum")->value.integer, 2048u);
  std::string scaled =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\","
      "\"dram__bytes.sum\",\"gpu__time_duration.sum\",\"dram__bytes.sum.per_second\",\"gpc__cycles_elapsed.avg.per_"
      "second\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Mbyte\",\"usecond\",\"Gbyte/second\",\"Ghz\"\n"
      "\"0\",\"1\",\"p\",\"h\",\"k\",\"\",\"1\",\"7\",\"1.50\",\"2.25\",\"3.5\",\"1.41\"\n";
  r = load_text(scaled);
  const auto& k = r.kernels.at(0);
  EXPECT_NEAR(*k.number("dram__bytes.sum"), 1.5e6, 1e-6);
  EXPECT_EQ(k.find("dram__bytes.sum")->unit, "byte");
  EXPECT_NEAR(*k.number("gpu__time_duration.sum"), 2250, 1e-9);
  EXPECT_EQ(k.find("gpu__time_duration.sum")->unit, "nsecond");
  EXPECT_NEAR(*k.number("dram__bytes.sum.per_second"), 3.5e9, 1e-3);
  EXPECT_EQ(k.find("gpc__cycles_elapsed.avg.per_second")->unit, "cycle/second");
}

// --- ncu --page details ---

const char* kDetails =
    "==PROF== Connected to process 5253 (/w/readWriteOffset_ca)\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid "
    "Size\","
    "\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\","
    "\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n"
    "\"0\",\"9\",\"app\",\"127.0.0.1\",\"kern\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"7.5\","
    "\"GPU Speed Of Light Throughput\",\"DRAM Frequency\",\"cycle/nsecond\",\"4.96\",,,,,\n"
    "\"0\",\"9\",\"app\",\"127.0.0.1\",\"kern\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"7.5\","
    "\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"1,234.50\",,,,,\n"
    "\"0\",\"9\",\"app\",\"127.0.0.1\",\"kern\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"7.5\","
    "\"LaunchStats\",\"Registers Per Thread\",\"register/thread\",\"32\",,,,,\n"
    "\"0\",\"9\",\"app\",\"127.0.0.1\",\"kern\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"7.5\","
    "\"My Section\",\"sector/req\",\"sector/request\",\"4\",,,,,\n"
    "\"0\",\"9\",\"app\",\"127.0.0.1\",\"kern\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"7.5\","
    "\"SpeedOfLight\",\"\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"Memory is more heavily utilized, \"\"see\"\" "
    "below.\",\"global\",\"38.16\"\n"
    "\"1\",\"9\",\"app\",\"127.0.0.1\",\"kern2\",\"1\",\"7\",\"(32, 1, 1)\",\"(8, 1, 1)\",\"0\",\"7.5\","
    "\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"Kbyte\",\"2.00\",,,,,\n";

TEST(CsvReaderDetails, MapsLabelsToMetricNamesAndBaseUnits) {
  auto r = load_text(kDetails);
  EXPECT_EQ(r.format, model::Format::NcuCsvDetails);
  ASSERT_EQ(r.kernels.size(), 2u);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.block, (model::Dim3{256, 1, 1}));
  EXPECT_EQ(k.grid, (model::Dim3{1024, 2, 1}));
  EXPECT_NEAR(*k.number("dram__cycles_elapsed.avg.per_second"), 4.96e9, 1);
  EXPECT_NEAR(*k.number("gpu__time_duration.sum"), 1234500, 1e-6);
  EXPECT_EQ(k.find("gpu__time_duration.sum")->unit, "nsecond");
  EXPECT_EQ(k.find("launch__registers_per_thread")->value.integer, 32u);
  EXPECT_EQ(*k.number("device__attribute_compute_capability_major"), 7);
  EXPECT_EQ(*k.number("details:My Section/sector/req"), 4);  // unknown labels are kept, marked
  EXPECT_EQ(r.kernels[1].find("dram__bytes_read.sum")->value.number, 2000);
}

TEST(CsvReaderDetails, RuleRowsBecomeRuleResults) {
  auto r = load_text(kDetails);
  ASSERT_EQ(r.kernels.at(0).rules.size(), 1u);
  const auto& rule = r.kernels[0].rules[0];
  EXPECT_EQ(rule.id, "SOLBottleneck");
  EXPECT_EQ(rule.section, "SpeedOfLight");
  ASSERT_EQ(rule.messages.size(), 1u);
  EXPECT_EQ(rule.messages[0].type, 4);
  EXPECT_EQ(rule.messages[0].text, "Memory is more heavily utilized, \"see\" below.");
  EXPECT_DOUBLE_EQ(*rule.messages[0].estimated_speedup, 38.16);
  EXPECT_EQ(rule.messages[0].speedup_type, 1);
  readers::ReadOptions no_rules;
  no_rules.rules = false;
  auto src = io::memory_source("d.csv", kDetails);
  EXPECT_TRUE(readers::load(*src, no_rules)->kernels[0].rules.empty());
}

// --- nvprof ---

const char* kNvprof =
    "==15227== NVPROF is profiling process 15227, command: ./jacobi\n"
    "==15227== Metric result:\n"
    "\"Device\",\"Kernel\",\"Invocations\",\"Metric Name\",\"Metric Description\",\"Min\",\"Max\",\"Avg\"\n"
    "\"Tesla K20c (0)\",\"kern(float*, int)\",3,\"achieved_occupancy\",\"Achieved Occupancy\",0.9,0.95,0.93\n"
    "\"Tesla K20c (0)\",\"kern(float*, int)\",3,\"gld_efficiency\",\"Global Memory Load "
    "Efficiency\",23.17%,23.17%,23.17%\n"
    "\"Tesla K20c (0)\",\"kern(float*, int)\",3,\"gld_throughput\",\"Global Load "
    "Throughput\",94.1GB/s,95.0GB/s,94.5GB/s\n"
    "\"Tesla K20c (0)\",\"kern(float*, int)\",3,\"ldst_fu_utilization\",\"Load/Store Function Unit Utilization\",Low "
    "(1),Low (1),Low (1)\n"
    "\n==15227== Event result:\n"
    "\"Device\",\"Kernel\",\"Invocations\",\"Event Name\",\"Min\",\"Max\",\"Avg\"\n"
    "\"Tesla K20c (0)\",\"kern(float*, int)\",3,\"gld_request\",10,12,11\n"
    "\"Tesla K20c (0)\",\"other()\",1,\"gld_request\",5,5,5\n";

TEST(CsvReaderNvprof, ReadsMetricAndEventTables) {
  auto r = load_text(kNvprof, "jacobi.profile");
  EXPECT_EQ(r.format, model::Format::NvprofCsv);
  ASSERT_EQ(r.kernels.size(), 2u);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.display_name(), "kern(float*, int)");
  EXPECT_DOUBLE_EQ(*k.number("achieved_occupancy"), 0.93);
  EXPECT_DOUBLE_EQ(*k.number("gld_efficiency"), 23.17);
  EXPECT_EQ(k.find("gld_efficiency")->unit, "%");
  EXPECT_NEAR(*k.number("gld_throughput"), 94.5e9, 1);
  EXPECT_EQ(k.find("gld_throughput")->unit, "byte/second");
  EXPECT_EQ(*k.text("ldst_fu_utilization"), "Low (1)");
  EXPECT_EQ(k.find("gld_request")->value.integer, 11u);
  EXPECT_EQ(*k.text("device__attribute_display_name"), "Tesla K20c");
  EXPECT_EQ(r.kernels[1].find("gld_request")->value.integer, 5u);
}

// --- detection and errors ---

TEST(CsvReaderErrors, DetectsFromContentNotName) {
  EXPECT_EQ(load_text(kNvprof, "looks.ncu-rep").format, model::Format::NvprofCsv);
  EXPECT_EQ(load_text(kRawBase, "report.profile").format, model::Format::NcuCsvRaw);
  EXPECT_NE(load_error("just,some,text\n1,2,3\n", "x.csv").find("not a report"), std::string::npos);
}

TEST(CsvReaderErrors, BadCsvNamesFileAndLine) {
  std::string unterminated = std::string(kRawBase) + "\"2\",\"42\",\"oops\n";
  auto e = load_error(unterminated, "bad.csv");
  EXPECT_EQ(e, "bad.csv: line 7: unterminated quoted cell");
  std::string wide = std::string(kRawBase) +
                     "\"2\",\"1\",\"p\",\"h\",\"k\",\"t\",\"1\",\"7\",\"1\",\"2\",\"3\",\"4\",\"5\",\"extra\"\n";
  EXPECT_EQ(load_error(wide, "wide.csv"), "wide.csv: line 7: row has 14 cells but the header has 13");
  auto junk = load_error(std::string(kRawBase) + "\"3\"x,\"1\"\n", "junk.csv");
  EXPECT_EQ(junk, "junk.csv: line 7: text after a closing quote");
}

TEST(CsvReaderErrors, LoadFileGivesBadInputExitCode) {
  std::string path = testing::temp_path("bad-quote.csv");
  ASSERT_TRUE(io::write_text_file(path, std::string(kRawBase) + "\"open\n"));
  auto r = readers::load_file(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ExitCode::BadInput);
  EXPECT_NE(r.error().message.find(path + ": line 7:"), std::string::npos);
}

TEST(CsvReaderErrors, StreamingStopsWhenTheSinkSaysSo) {
  auto src = io::memory_source("r.csv", kRawBase);
  int seen = 0;
  auto r = readers::stream(*src, {}, [&](model::Kernel&&) { return ++seen < 1; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

TEST(CsvReaderNvprof, InvocationsComeFromTheTable) {
  auto r = load_text(kNvprof, "jacobi.profile");
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].invocations, 3u);
  EXPECT_EQ(r.kernels[1].invocations, 1u);
  EXPECT_EQ(r.kernels[0].grid.product(), 0u);  // nvprof's summary tables hold no launch shape
}

// ncu 2022.3's raw page: launch shape as metrics only; `keet list` keeps none
// of them, yet the kernel's grid and block must not depend on that.
const char* kRawLaunch =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\","
    "\"launch__block_dim_x\",\"launch__block_dim_y\",\"launch__block_dim_z\",\"launch__block_size\","
    "\"launch__grid_dim_x\",\"launch__grid_dim_y\",\"launch__grid_dim_z\",\"launch__grid_size\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"\n"
    "\"0\",\"42\",\"a.out\",\"h\",\"k1\",\"2025-Feb-26 "
    "20:10:07\",\"1\",\"7\",\"32\",\"16\",\"1\",\"512\",\"128\",\"256\",\"1\",\"32768\"\n";

// ncu 2022.3's raw page of a 2019-era report: totals only.
const char* kRawTotals =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\","
    "\"launch__block_size\",\"launch__grid_size\"\n"
    "\"0\",\"42\",\"a.out\",\"h\",\"k1\",\"2020-Jan-28 16:43:03\",\"1\",\"7\",\"64\",\"10\"\n";

// ncu 2024.1's raw page of a 2019-era report: its "Grid Size" repeats the
// stored size, in threads.
const char* kRaw2024Old =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
    "\"Grid Size\",\"Device\",\"CC\",\"launch__block_size\",\"launch__grid_size\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"\n"
    "\"0\",\"42\",\"a.out\",\"h\",\"k1\",\"1\",\"7\",\"(64, 1, 1)\",\"(640, 1, 1)\",\"0\",\"6.1\",\"64\",\"10\"\n";

TEST(CsvReaderRaw, LaunchShapeWhateverTheFilterKeeps) {
  readers::ReadOptions few;
  few.metric_filter = [](std::string_view n) { return n == "gpu__time_duration.sum"; };
  for (const auto& opt : {readers::ReadOptions{}, few}) {
    auto src = io::memory_source("r.csv", kRawLaunch);
    auto r = readers::load(*src, opt);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->kernels[0].grid, (model::Dim3{128, 256, 1}));
    EXPECT_EQ(r->kernels[0].block, (model::Dim3{32, 16, 1}));
    auto totals = io::memory_source("t.csv", kRawTotals);
    auto t = readers::load(*totals, opt);
    ASSERT_TRUE(t) << t.error().message();
    EXPECT_EQ(t->kernels[0].grid, (model::Dim3{10, 1, 1}));
    EXPECT_EQ(t->kernels[0].block, (model::Dim3{64, 1, 1}));
    auto old = io::memory_source("o.csv", kRaw2024Old);
    auto o = readers::load(*old, opt);
    ASSERT_TRUE(o) << o.error().message();
    EXPECT_EQ(o->kernels[0].grid, (model::Dim3{10, 1, 1}));
    EXPECT_EQ(o->kernels[0].block, (model::Dim3{64, 1, 1}));
  }
}

}  // namespace
}  // namespace keet
