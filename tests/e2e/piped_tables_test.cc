// Tables behave as ncu's do in a pipe: stdout to another program keeps every
// name, path and metric whole (grep and awk read values, not a screen), and
// on a terminal a cut cell keeps the part that tells rows apart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet::piped_tables {
namespace {

using namespace keet::testing;

// keet with stdout to a pipe and no $COLUMNS (as `keet ... | grep` runs it);
// `columns` set: as on a terminal that wide.
ProcessResult keet_piped(const std::string& args, const std::string& columns = "") {
  std::string env = columns.empty() ? "env -u COLUMNS " : "env COLUMNS=" + columns + " ";
  return run_command(env + shell_quote(keet_binary()) + " " + args);
}

size_t lines_holding(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// 40 metrics whose names end in pct_of_peak_sustained_elapsed, long enough
// that a 100-column table wrapped them mid-word, and ncu's pseudo-metric.
std::string many_metrics_report() {
  std::vector<std::pair<std::string, double>> m = {{"gpu__time_duration.sum", 10000}, {"group:memory__dram_table", 1}};
  for (int i = 0; i < 40; ++i)
    m.emplace_back("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld_unit_" + std::to_string(i) +
                       ".avg.pct_of_peak_sustained_elapsed",
                   i);
  std::string path = temp_path("piped-metrics.ncu-rep");
  write_file(path, one_kernel_report("copy_kernel", 64, 256, m));
  return path;
}

TEST(PipedTables, MetricsKeepEveryNameWholeAndShowNoPseudoMetric) {
  auto path = shell_quote(many_metrics_report());
  auto piped = keet_piped("metrics " + path);
  ASSERT_EQ(piped.rc, 0) << piped.err;
  auto json = nlohmann::json::parse(keet_piped("metrics --format json " + path).out);
  size_t want = 0;
  for (const auto& [name, v] : json["kernels"][0]["metrics"].items())
    want += name.find("pct_of_peak_sustained_elapsed") != std::string::npos;
  EXPECT_EQ(want, 40u);
  EXPECT_EQ(lines_holding(piped.out, "pct_of_peak_sustained_elapsed"), want) << piped.out;
  EXPECT_EQ(piped.out.find("group:"), std::string::npos) << piped.out;
  EXPECT_FALSE(json["kernels"][0]["metrics"].contains("group:memory__dram_table"));
  // On a 100-column terminal the long names wrap within their column.
  auto narrow = keet_piped("metrics " + path, "100");
  EXPECT_LT(lines_holding(narrow.out, "pct_of_peak_sustained_elapsed"), want) << narrow.out;
}

TEST(PipedTables, ListKeepsThePartOfAPathThatTellsReportsApart) {
  std::string deep = temp_path("a-folder-whose-name-is-long-enough-to-fill-a-terminal-column-by-itself-alone");
  std::filesystem::create_directories(deep + "/before");
  std::filesystem::create_directories(deep + "/after");
  for (std::string side : {"before", "after"})
    write_file(deep + "/" + side + "/run.ncu-rep",
               one_kernel_report("copy_kernel", 64, 256, {{"gpu__time_duration.sum", 1000}}));
  std::string args =
      "list " + shell_quote(deep + "/before/run.ncu-rep") + " " + shell_quote(deep + "/after/run.ncu-rep");
  auto piped = keet_piped(args);
  ASSERT_EQ(piped.rc, 0) << piped.err;
  EXPECT_NE(piped.out.find(deep + "/before/run.ncu-rep"), std::string::npos) << piped.out;  // whole in a pipe
  auto terminal = keet_piped(args, "100");
  EXPECT_NE(terminal.out.find("before/run.ncu-rep"), std::string::npos) << terminal.out;
  EXPECT_NE(terminal.out.find("after/run.ncu-rep"), std::string::npos) << terminal.out;
  EXPECT_EQ(terminal.out.find(deep), std::string::npos) << "the cut keeps the end: " << terminal.out;
}

TEST(PipedTables, DoctorKeepsItsIssuesWholeInAPipe) {
  std::string path = temp_path("piped-doctor.ncu-rep");
  write_file(path, one_kernel_report("copy_kernel", 64, 256,
                                     {{"gpu__time_duration.sum", 1000}, {"lts__t_sector_hit_rate.pct", 100.4}}));
  auto piped = keet_piped("doctor " + shell_quote(path));
  EXPECT_EQ(piped.rc, 1) << piped.err;
  EXPECT_EQ(piped.out.find("..."), std::string::npos) << piped.out;
}

}  // namespace
}  // namespace keet::piped_tables
