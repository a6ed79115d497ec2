// End-to-end: the real keet binary on reports built by the test writer and on
// NVIDIA's sample reports (when ../shared is present).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "model/select.h"
#include "readers/reader.h"
#include "render/raw_csv.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

std::string vecadd_report() {
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
  auto r = run_keet("list --format json " + shell_quote(vecadd_report()));
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
  std::string path = temp_path("cut.ncu-rep");
  std::ofstream(path, std::ios::binary) << cut_short_report({"k0", "k1"}, 3);
  auto r = run_keet("list " + shell_quote(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("k0"), std::string::npos);
  EXPECT_NE(r.err.find("warning"), std::string::npos);
  auto ok = run_keet("list --allow-partial " + shell_quote(path));
  EXPECT_EQ(ok.rc, 0);
}

TEST(CliBasic, KernelSelection) {
  std::string path = vecadd_report();
  EXPECT_EQ(run_keet("list -k 0 " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k 'regex:^vec' " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k vecAdd " + shell_quote(path)).rc, 0);
  EXPECT_EQ(run_keet("list -k nosuch " + shell_quote(path)).rc, 2);
  EXPECT_EQ(run_keet("list -k 'regex:(' " + shell_quote(path)).rc, 2);
}

// Three kernels over two blocks with different metric sets, a value-less
// metric with instances, a quote in a string value, and the process name in a
// block after the first kernel.
std::string mixed_report() {
  ReportWriter w;
  ReportWriter::Block b1;
  auto k0 = w.kernel("alpha", 10, 128, {{"gpu__time_duration.sum", 1000}, {"sm__cycles_elapsed.avg", 12.25}});
  w.flush_strings(b1);
  b1.results.push_back(k0.SerializeAsString());
  w.add(b1);
  ReportWriter::Block b2;
  auto k1 = w.kernel("beta", 20, 64, {{"gpu__time_duration.sum", 2000}, {"zz_custom", 42.5}});
  auto* text = k1.add_metric_results();
  text->set_name_id(w.name_id("device__attribute_display_name"));
  text->mutable_value()->set_string_value("GPU \"X\"");
  auto k2 = w.kernel("gamma", 1, 32, {{"group:hidden", 1}, {"launch__grid_size", 1}});
  auto* listed = k2.add_metric_results();  // instances but no value: prints ""
  listed->set_name_id(w.name_id("sass__inst_executed_per_opcode"));
  auto* e = listed->add_instances();
  e->mutable_correlation_id()->set_string_value("FFMA");
  e->mutable_element_value()->set_uint64_value(64);
  w.flush_strings(b2);
  b2.header.mutable_process()->set_process_name("/usr/bin/app");
  b2.results.push_back(k1.SerializeAsString());
  b2.results.push_back(k2.SerializeAsString());
  w.add(b2);
  std::string path = temp_path("mixed.ncu-rep");
  w.write(path);
  return path;
}

// keet export streams a binary report twice (columns, then rows); it must
// print exactly what the in-memory renderer prints for the same selection.
TEST(CliBasic, StreamingExportEqualsInMemoryCsv) {
  std::string path = mixed_report();
  auto report = readers::load_file(path);
  ASSERT_TRUE(report) << report.error().message;
  for (std::string k : {"", "0", "beta", "regex:ta", "regex:^(alpha|gamma)"}) {
    auto sel = model::KernelSelector::parse(k);
    ASSERT_TRUE(sel);
    auto r = run_keet("export --format csv " + shell_quote(path) + (k.empty() ? "" : " -k " + shell_quote(k)));
    ASSERT_EQ(r.rc, 0) << k << ": " << r.err;
    EXPECT_EQ(r.out, render::raw_csv(*report, model::select(*report, *sel))) << k;
  }
  auto all = run_keet("export --format csv " + shell_quote(path));
  EXPECT_NE(all.out.find("\"GPU \"\"X\"\"\""), std::string::npos) << all.out;  // quotes doubled
  EXPECT_EQ(all.out.find("group:hidden"), std::string::npos);
  auto none = run_keet("export --format csv -k nosuch " + shell_quote(path));
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("no kernel matches"), std::string::npos);
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
