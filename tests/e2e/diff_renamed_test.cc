// End-to-end: keet diff pairs a renamed kernel and says so in every format
// (issue 24, point 8): NVIDIA's before/after samples, whose kernels are
// renamed by the fix; a one-kernel rename and a several-kernel report made by
// the test writer, where some kernels pair by name, some by launch
// configuration and order, and the rest stay unpaired with a --pair hint.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <tuple>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using json = nlohmann::json;

struct Launch {
  std::string name;
  uint64_t grid, block;
  double ns;
};

// A report of these kernels, in this order, on "Test GPU".
std::string report(const std::string& file, const std::vector<Launch>& kernels) {
  ReportWriter w;
  ReportWriter::Block b;
  for (const auto& k : kernels) {
    auto r = w.kernel(k.name, k.grid, k.block, {{"gpu__time_duration.sum", k.ns}});
    auto* dev = r.add_metric_results();
    dev->set_name_id(w.name_id("device__attribute_display_name"));
    dev->mutable_value()->set_string_value("Test GPU");
    b.results.push_back(r.SerializeAsString());
  }
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return shell_quote(path);
}

ProcessResult diff(const std::string& args) { return run_keet("diff " + args); }

// The JSON conforms to schemas/diff.schema.json (the contract these members extend).
void expect_conforms(const std::string& doc) {
  std::string path = temp_path("diff-renamed.json");
  std::ofstream(path) << doc;
  auto v = run_command(shell_quote(source_dir() + "/scripts/validate-json") + " " +
                       shell_quote(source_dir() + "/schemas/diff.schema.json") + " " + shell_quote(path));
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

// Text, Markdown, HTML and JSON of one diff each say how `before_short` and
// `after_short` were paired (`note`) and that their names differ.
void expect_every_format_says(const std::string& reports, const std::string& note, const std::string& paired_by) {
  std::string names = note.substr(note.find(": the kernel names differ"));
  auto text = diff(reports);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("  paired by:             " + note + "\n"), std::string::npos) << text.out;
  auto md = diff("--format markdown " + reports);
  ASSERT_EQ(md.rc, 0) << md.err;
  EXPECT_NE(md.out.find("- **paired by**: "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("the kernel names differ"), std::string::npos) << md.out;
  std::string html_path = temp_path("diff-renamed.html");
  ASSERT_EQ(diff("--format html -o " + shell_quote(html_path) + " " + reports).rc, 0);
  std::string html = read_file(html_path);
  std::string escaped = note;
  for (size_t at = 0; (at = escaped.find("->", at)) != std::string::npos; at += 5) escaped.replace(at, 2, "-&gt;");
  EXPECT_NE(html.find("<tr><th>paired by</th><td>" + escaped + "</td></tr>"), std::string::npos) << html;
  auto j = diff("--format json " + reports);
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = json::parse(j.out);
  ASSERT_EQ(doc["pairs"].size(), 1u) << j.out;
  EXPECT_EQ(doc["pairs"][0]["paired_by"], paired_by);
  EXPECT_NE(doc["pairs"][0]["before"]["name"], doc["pairs"][0]["after"]["name"]);
  expect_conforms(j.out);
}

// --- NVIDIA's samples: the fix renames the kernel ----------------------------

TEST(DiffRenamed, NvidiaUncoalescedSamplePairsItsOnlyKernels) {
  KEET_REQUIRE_SHARED();
  auto dir = oracle_examples();
  if (!dir) GTEST_SKIP() << "ncu-oracle examples unavailable";
  std::string reports =
      shell_quote(*dir + "/addConstDouble3.ncu-rep") + " " + shell_quote(*dir + "/addConstDouble.ncu-rep");
  expect_every_format_says(reports,
                           "position, the only kernel of each report: the kernel names differ "
                           "(addConstDouble3 -> addConstDouble)",
                           "only_kernel");
  auto text = diff(reports).out;
  EXPECT_TRUE(text.starts_with("1 pair(s): 1 faster, 0 slower, 0 unchanged; 0 missing, 0 new")) << text;
  EXPECT_NE(text.find("\npairing: 1 by position (the only kernel of each report)\n"), std::string::npos) << text;
  auto p = json::parse(diff("--format json " + reports).out)["pairs"][0];
  EXPECT_NEAR(p["speedup"].get<double>(), 294336.0 / 239008.0, 1e-3);
  auto resolved = p["resolved"].get<std::vector<std::string>>();
  EXPECT_NE(std::ranges::find(resolved, "memory.uncoalesced_global"), resolved.end()) << p.dump(2);

  // By name only they stay apart, and the hint names the pair to pass.
  auto apart = diff("--names-only " + reports);
  EXPECT_NE(apart.out.find("0 pair(s)"), std::string::npos) << apart.out;
  EXPECT_NE(apart.out.find("pair them by index (BEFORE:AFTER), e.g. --pair 0:0\n"), std::string::npos) << apart.out;
}

TEST(DiffRenamed, NvidiaBankConflictSamplePairsItsOnlyKernels) {
  KEET_REQUIRE_SHARED();
  auto dir = oracle_examples_2024();
  if (!dir) GTEST_SKIP() << "ncu-oracle 2024.1 examples unavailable";
  std::string reports = shell_quote(*dir + "/sharedBankConflicts/transposeCoalesced.ncu-rep") + " " +
                        shell_quote(*dir + "/sharedBankConflicts/transposeNoBankConflicts.ncu-rep");
  expect_every_format_says(reports,
                           "position, the only kernel of each report: the kernel names differ "
                           "(transposeCoalesced -> transposeNoBankConflicts)",
                           "only_kernel");
  auto p = json::parse(diff("--format json " + reports).out)["pairs"][0];
  EXPECT_EQ(p["verdict"], "faster");
  auto resolved = p["resolved"].get<std::vector<std::string>>();
  EXPECT_NE(std::ranges::find(resolved, "memory.shared_bank_conflicts"), resolved.end()) << p.dump(2);
}

// --- reports from the test writer --------------------------------------------

TEST(DiffRenamed, OneKernelRenamedIsPairedAndSaidSo) {
  std::string reports = report("renamed-old.ncu-rep", {{"oldName", 64, 256, 2000}}) + " " +
                        report("renamed-new.ncu-rep", {{"newName", 128, 256, 1000}});
  expect_every_format_says(
      reports, "position, the only kernel of each report: the kernel names differ (oldName -> newName)", "only_kernel");
  auto text = diff(reports).out;
  EXPECT_NE(text.find("oldName() -> newName()\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch:                grid (64, 1, 1) block (256, 1, 1) -> grid (128, 1, 1) block (256, 1, 1)"),
            std::string::npos)
      << text;
  // A forced pair says it was forced, and still that the names differ.
  auto forced = diff("--pair 0:0 " + reports).out;
  EXPECT_NE(forced.find("paired by:             --pair 0:0: the kernel names differ (oldName -> newName)"),
            std::string::npos)
      << forced;
}

// Before: prep, scale_v1, reduce_old. After: warmup (new), prep, rescale
// (another function family than scale_v1, the same launch), reduce_new
// (another grid than reduce_old).
TEST(DiffRenamed, SeveralKernelsPairByNameThenLaunchConfigurationAndTheRestAreListed) {
  std::string before = report("several-before.ncu-rep",
                              {{"prep", 64, 256, 1000}, {"scale_v1", 128, 256, 2000}, {"reduce_old", 32, 128, 3000}});
  std::string after = report(
      "several-after.ncu-rep",
      {{"warmup", 8, 32, 100}, {"prep", 64, 256, 1000}, {"rescale", 128, 256, 1000}, {"reduce_new", 64, 128, 2000}});
  auto j = diff("--format json " + before + " " + after);
  ASSERT_EQ(j.rc, 0) << j.err;
  expect_conforms(j.out);
  auto doc = json::parse(j.out);
  std::vector<std::tuple<int, int, std::string>> pairs;
  for (const auto& p : doc["pairs"]) pairs.emplace_back(p["before"]["index"], p["after"]["index"], p["paired_by"]);
  EXPECT_EQ(pairs, (std::vector<std::tuple<int, int, std::string>>{{0, 1, "name"}, {1, 2, "launch_config_order"}}));
  ASSERT_EQ(doc["unmatched_before"].size(), 1u);
  EXPECT_EQ(doc["unmatched_before"][0]["name"], "reduce_old()");
  ASSERT_EQ(doc["unmatched_after"].size(), 2u);
  EXPECT_EQ(doc["unmatched_after"][0]["name"], "warmup()");
  EXPECT_EQ(doc["unmatched_after"][1]["name"], "reduce_new()");
  // reduce_new has reduce_old's block size: the suggestion skips warmup for it.
  EXPECT_EQ(doc["suggested_pairs"], json::parse("[[2, 3]]"));

  auto text = diff(before + " " + after).out;
  EXPECT_NE(text.find("\npairing: 1 by name, 1 by launch configuration and order\n"), std::string::npos) << text;
  EXPECT_NE(text.find("scale_v1() -> rescale()\n  paired by:             launch configuration (same grid and block) "
                      "and order of appearance: the kernel names differ (scale_v1 -> rescale)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("missing (only in before): #2 reduce_old() (grid (32, 1, 1) block (128, 1, 1))\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("new (only in after): #0 warmup() (grid (8, 1, 1) block (32, 1, 1))\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("new (only in after): #3 reduce_new() (grid (64, 1, 1) block (128, 1, 1))\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("hint: 1 kernel(s) only in before and 2 only in after have no partner; if a kernel here is "
                      "another one renamed, "
                      "pair them by index (BEFORE:AFTER), e.g. --pair 2:3\n"),
            std::string::npos)
      << text;
  auto md = diff("--format markdown " + before + " " + after).out;
  EXPECT_NE(md.find("e.g. --pair 2:3"), std::string::npos) << md;

  // Taking the hint pairs reduce_old with reduce_new; warmup stays new, with no hint left.
  auto taken = diff("--format json --pair 2:3 " + before + " " + after);
  ASSERT_EQ(taken.rc, 0) << taken.err;
  auto t = json::parse(taken.out);
  ASSERT_EQ(t["pairs"].size(), 3u);
  EXPECT_EQ(t["pairs"][0]["paired_by"], "forced");
  EXPECT_EQ(t["pairs"][0]["before"]["name"], "reduce_old()");
  EXPECT_EQ(t["unmatched_after"].size(), 1u);
  EXPECT_TRUE(t["suggested_pairs"].empty());
  EXPECT_EQ(diff("--pair 2:3 " + before + " " + after).out.find("hint:"), std::string::npos);
}

TEST(DiffRenamed, AKernelStillLaunchedIsNeverTakenForARenamedOne) {
  // k runs twice before and once after; "other" is new with k's launch: k's
  // second launch is not a rename of anything, so it stays missing.
  std::string before = report("still-before.ncu-rep", {{"k", 64, 256, 1000}, {"k", 64, 256, 1000}});
  std::string after = report("still-after.ncu-rep", {{"k", 64, 256, 1000}, {"other", 64, 256, 500}});
  auto doc = json::parse(diff("--format json " + before + " " + after).out);
  ASSERT_EQ(doc["pairs"].size(), 1u);
  EXPECT_EQ(doc["pairs"][0]["paired_by"], "name");
  EXPECT_EQ(doc["unmatched_before"].size(), 1u);
  EXPECT_EQ(doc["unmatched_after"].size(), 1u);
  EXPECT_EQ(doc["suggested_pairs"], json::parse("[[1, 1]]"));
}

}  // namespace
}  // namespace keet
