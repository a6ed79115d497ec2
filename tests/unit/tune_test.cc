// keet tune's pieces: unified diffs from an LLM (found, parsed, checked,
// applied), the scratch tree's write rules, sweeps and the occupancy
// calculator's block-size proposals, and the calibration summary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/arch.h"
#include "app/tune.h"
#include "app/tune_llm.h"
#include "app/tune_workspace.h"
#include "compare/calibration.h"
#include "support/testing.h"
#include "util/unified_diff.h"

namespace keet {
namespace {

namespace fs = std::filesystem;

const std::string kSource =
    "int main() {\n"
    "  int a = 1;\n"
    "  int b = 2;\n"
    "  return a + b;\n"
    "}\n";

TEST(TunePatch, ParsesAndAppliesAGitStyleDiff) {
  std::string diff =
      "diff --git a/src/k.cu b/src/k.cu\n"
      "index 123..456 100644\n"
      "--- a/src/k.cu\n"
      "+++ b/src/k.cu\n"
      "@@ -2,2 +2,3 @@ int main() {\n"
      "   int a = 1;\n"
      "-  int b = 2;\n"
      "+  int b = 3;\n"
      "+  int c = 4;\n";
  auto p = parse_unified_diff(diff);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].path(), "src/k.cu");
  ASSERT_EQ((*p)[0].hunks.size(), 1u);
  EXPECT_EQ((*p)[0].hunks[0].old_count, 2);
  EXPECT_EQ((*p)[0].hunks[0].new_count, 3);
  auto out = apply_patch(kSource, (*p)[0]);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, "int main() {\n  int a = 1;\n  int b = 3;\n  int c = 4;\n  return a + b;\n}\n");
}

TEST(TunePatch, WrongLineNumbersMiscountsAndStrippedBlanksStillApply) {
  // Models get line numbers and counts wrong and drop the space of blank context lines.
  std::string src = "a\n\nb\nc\nd\n";
  std::string diff = "--- x\n+++ x\n@@ -40,9 +40,9 @@\n \n-b\n+B\n c\n";
  auto p = parse_unified_diff(diff);
  ASSERT_TRUE(p) << p.error().message;
  auto out = apply_patch(src, (*p)[0]);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, "a\n\nB\nc\nd\n");
}

TEST(TunePatch, ContextThatIsNotThereFailsNamingTheHunk) {
  auto p = parse_unified_diff("--- x\n+++ x\n@@ -1,1 +1,1 @@\n-int z = 0;\n+int z = 1;\n");
  ASSERT_TRUE(p);
  auto out = apply_patch(kSource, (*p)[0]);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("hunk 1"), std::string::npos) << out.error().message;
}

TEST(TunePatch, GarbageIsNotADiff) {
  for (std::string text : {"", "I cannot help with that.", "@@ -1 +1 @@\n-a\n+b\n", "--- a\n+++ b\nno hunk\n",
                           "--- a\n+++ b\n@@ -x,1 +1 @@\n-a\n"})
    EXPECT_FALSE(parse_unified_diff(text)) << text;
  EXPECT_FALSE(parse_unified_diff(std::string(kMaxPatchBytes + 1, '+')));
}

TEST(TunePatch, CanonicalFormRoundTrips) {
  auto p = parse_unified_diff("--- a/k.cu\n+++ b/k.cu\n@@ -3 +3 @@\n-  int b = 2;\n+  int b = 5;\n");
  ASSERT_TRUE(p);
  std::string text = format_unified_diff((*p)[0]);
  EXPECT_EQ(text, "--- a/k.cu\n+++ b/k.cu\n@@ -3,1 +3,1 @@\n-  int b = 2;\n+  int b = 5;\n");
  auto again = parse_unified_diff(text);
  ASSERT_TRUE(again);
  EXPECT_EQ(*apply_patch(kSource, (*again)[0]), *apply_patch(kSource, (*p)[0]));
}

TEST(TunePatch, OnlyPlainRelativePathsAreSafe) {
  EXPECT_EQ(safe_relative_path("src/k.cu"), "src/k.cu");
  for (std::string bad : {"", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a\\b", ".."})
    EXPECT_FALSE(safe_relative_path(bad)) << bad;
}

TEST(TunePatch, FindsFencedDiffsAndTheirFindings) {
  std::string answer =
      "Here are two ideas.\n\nFinding: memory.uncoalesced_global\n```diff\n--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 "
      "@@\n-x\n+y\n```\n"
      "Second, for occupancy.low:\n```patch\n--- a/k.cu\n+++ b/k.cu\n@@ -2 +2 @@\n-p\n+q\n```\n```cpp\nnot a "
      "diff\n```\n";
  auto blocks = extract_diff_blocks(answer);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_NE(blocks[0].diff.find("+y"), std::string::npos);
  auto ps = app::proposals_in(answer, {"memory.uncoalesced_global", "occupancy.low"}, 5);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].target, "memory.uncoalesced_global");
  EXPECT_EQ(ps[1].target, "occupancy.low");
  EXPECT_EQ(app::proposals_in(answer, {}, 1).size(), 1u);
  // No fence: the answer from its first header line.
  auto bare = extract_diff_blocks("Try this:\n--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-x\n+y\n");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_TRUE(bare[0].diff.starts_with("--- a/k.cu"));
  EXPECT_TRUE(extract_diff_blocks("no diff here").empty());
}

TEST(TuneLlm, LocalModelsAreOllamaOrLoopback) {
  EXPECT_TRUE(app::local_model({"ollama", "m", "http://gpu-box:11434"}));
  EXPECT_TRUE(app::local_model({"openai", "m", "http://127.0.0.1:8080/v1"}));
  EXPECT_TRUE(app::local_model({"openai", "m", "http://localhost/v1"}));
  EXPECT_FALSE(app::local_model({"openai", "m", "https://api.openai.com/v1"}));
  EXPECT_FALSE(app::local_model({"openai", "m", "http://localhost.evil.com/v1"}));
}

TEST(TuneSweep, ParsesValuesAndRefusesWhatIsNotAPlainDefine) {
  auto s = app::parse_sweep("BLOCK_SIZE=64,128, 256");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->name, "BLOCK_SIZE");
  EXPECT_EQ(s->values, (std::vector<std::string>{"64", "128", "256"}));
  auto a = app::parse_sweep("TILE=auto");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->values.empty());
  for (std::string bad : {"=1", "1X=2", "A B=1", "X=1;rm -rf /", "X=$(id)", "X=", "X=,"})
    EXPECT_FALSE(app::parse_sweep(bad)) << bad;
}

TEST(TuneSweep, BlockSizesFromTheOccupancyCalculator) {
  const auto* arch = analysis::find_arch("8.6");
  ASSERT_NE(arch, nullptr);
  // 32 threads per block: the 16-block cap leaves 16 of 48 warps; 128 and more fill the SM.
  analysis::OccupancyInput in{.block_size = 32, .registers_per_thread = 16, .shared_mem_per_block = 0};
  auto sizes = app::proposed_block_sizes(*arch, in);
  ASSERT_FALSE(sizes.empty());
  EXPECT_TRUE(std::ranges::is_sorted(sizes));
  EXPECT_LE(sizes.size(), 5u);
  EXPECT_NE(std::ranges::find(sizes, 32), sizes.end());  // the launched size stays, to compare against
  auto best = analysis::compute_occupancy(*arch, {.block_size = sizes.back(), .registers_per_thread = 16});
  EXPECT_DOUBLE_EQ(best.occupancy_pct, 100.0);
  // 255 registers: large blocks no longer fit; what is proposed must still launch.
  analysis::OccupancyInput heavy{.block_size = 256, .registers_per_thread = 255, .shared_mem_per_block = 0};
  for (int s : app::proposed_block_sizes(*arch, heavy))
    EXPECT_GT(analysis::compute_occupancy(*arch, {.block_size = s, .registers_per_thread = 255}).active_blocks, 0) << s;
}

TEST(TuneWorkspace, WritesStayInTheTreeAndNeverFollowLinks) {
  fs::path root = testing::temp_path("tune-ws");
  fs::remove_all(root);
  fs::create_directories(root / "src");
  fs::path outside = testing::temp_path("tune-ws-outside.txt");
  std::ofstream(outside) << "outside\n";
  std::ofstream(root / "src/k.cu") << "kernel\n";
  fs::create_symlink(outside, root / "src/link.cu");
  fs::create_directory_symlink(fs::path(outside).parent_path(), root / "up");
  EXPECT_TRUE(app::write_in_tree(root, "src/k.cu", "changed\n"));
  EXPECT_EQ(*app::read_in_tree(root, "src/k.cu"), "changed\n");
  EXPECT_FALSE(app::write_in_tree(root, "src/link.cu", "x"));
  EXPECT_FALSE(app::write_in_tree(root, "up/tune-ws-outside.txt", "x"));
  EXPECT_FALSE(app::write_in_tree(root, "../tune-ws-outside.txt", "x"));
  EXPECT_FALSE(app::write_in_tree(root, "/tmp/x", "x"));
  std::ifstream in(outside);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "outside\n");
  // The copy keeps links as links (and skips .git and the output folder).
  fs::create_directories(root / ".git");
  fs::create_directories(root / "keet-tune");
  fs::path copy = testing::temp_path("tune-ws-copy");
  fs::remove_all(copy);
  auto copied = app::copy_tree(root, copy, {root / "keet-tune"});
  ASSERT_TRUE(copied) << copied.error().message;
  EXPECT_TRUE(fs::is_symlink(copy / "src/link.cu"));
  EXPECT_FALSE(fs::exists(copy / ".git"));
  EXPECT_FALSE(fs::exists(copy / "keet-tune"));
  EXPECT_FALSE(app::write_in_tree(copy, "src/link.cu", "x"));
}

TEST(TuneWorkspace, StepsRunInTheirFolderWithALimit) {
  fs::path dir = testing::temp_path("tune-step");
  fs::create_directories(dir);
  fs::path log = dir / "log";
  auto ok = app::run_step(app::system_runner(), dir, "pwd; echo $(( 6 * 7 ))", 0, log);
  EXPECT_TRUE(ok.ok());
  std::ifstream in(log);
  std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(text.find(fs::canonical(dir).string()), std::string::npos) << text;
  EXPECT_NE(text.find("42"), std::string::npos);
  auto failed = app::run_step(app::system_runner(), dir, "exit 4", 0, log);
  EXPECT_EQ(failed.status, 4);
  EXPECT_FALSE(failed.ok());
  auto slow = app::run_step(app::system_runner(), dir, "sleep 20", 1, log);
  EXPECT_TRUE(slow.timed_out);
  std::ofstream(dir / "a") << "x\ny\n";
  std::ofstream(dir / "b") << "x\nz\n";
  EXPECT_EQ(app::first_difference(dir / "a", dir / "b"), 2u);
  EXPECT_FALSE(app::first_difference(dir / "a", dir / "a"));
}

TEST(TuneCalibration, MedianRatioSpreadAndCountPerRuleAndArch) {
  std::vector<compare::CalibrationPoint> ps = {
      {"diff", "memory.uncoalesced_global", "8.6", "k", 2.0, 1.0, 0},
      {"diff", "memory.uncoalesced_global", "8.6", "k", 2.0, 3.0, 0},
      {"tune", "memory.uncoalesced_global", "8.6", "k", 1.0, 1.1, 0},
      {"tune", "memory.uncoalesced_global", "9.0", "k", 1.5, 1.5, 0},
      {"tune", "occupancy.low", "8.6", "k", 0, 1.5, 0},  // not a ratio: left out
  };
  auto rows = compare::summarise_calibration(ps);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].arch, "8.6");
  EXPECT_EQ(rows[0].count, 3u);
  EXPECT_DOUBLE_EQ(rows[0].median_ratio, 1.1);  // ratios 0.5, 1.1, 1.5
  EXPECT_DOUBLE_EQ(rows[0].min_ratio, 0.5);
  EXPECT_DOUBLE_EQ(rows[0].max_ratio, 1.5);
  EXPECT_DOUBLE_EQ(rows[0].median_predicted, 2.0);
  EXPECT_EQ(rows[1].arch, "9.0");
  auto other_arch = compare::calibration_for(ps, "memory.uncoalesced_global", "7.0");
  ASSERT_TRUE(other_arch);
  EXPECT_EQ(other_arch->arch, "any");
  EXPECT_EQ(other_arch->count, 4u);
  EXPECT_DOUBLE_EQ(other_arch->median_ratio, (1.0 + 1.1) / 2);
  EXPECT_FALSE(compare::calibration_for(ps, "occupancy.low", "8.6"));
}

}  // namespace
}  // namespace keet
