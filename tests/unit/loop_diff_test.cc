// keet diff's core: pairing, verdicts, findings resolved/introduced, metric
// deltas and predicted-vs-measured, on snapshots and diagnoses built here.
#include <gtest/gtest.h>

#include "render/diff.h"

#include <sstream>

#include "render/diff_format.h"
#include "util/json.h"

namespace keet::render {
using namespace compare;
namespace {

KernelSnapshot snap(int index, std::string name, uint64_t grid, double ns, std::vector<std::string> findings = {}) {
  KernelSnapshot s;
  s.index = index;
  s.display = std::move(name);
  s.grid = {grid, 1, 1};
  s.block = {256, 1, 1};
  s.device = "NVIDIA RTX A2000";
  s.duration_ns = ns;
  for (auto& f : findings) s.findings.push_back({f, "title " + f, "high", std::nullopt});
  return s;
}

TEST(LoopDiffPairing, ALoneKernelNeverPairsWithADifferentlyNamedOne) {
  EXPECT_TRUE(pair_kernels({snap(0, "a", 1, 10)}, {snap(0, "b", 2, 10)}, {}).empty());
  auto d = diff({snap(0, "a", 1, 10)}, {snap(0, "b", 1, 10)}, {});
  EXPECT_TRUE(d.pairs.empty());
  ASSERT_EQ(d.unmatched_before.size(), 1u);  // missing
  ASSERT_EQ(d.unmatched_after.size(), 1u);   // new
}

TEST(LoopDiffPairing, SameNameInOrderOfOccurrenceThenNothing) {
  std::vector<KernelSnapshot> before = {snap(0, "k", 1, 10), snap(1, "k", 2, 10), snap(2, "gone", 1, 10)};
  std::vector<KernelSnapshot> after = {snap(0, "k", 2, 10), snap(1, "k", 3, 10), snap(2, "new", 1, 10)};
  auto pairs = pair_kernels(before, after, {});
  ASSERT_EQ(pairs.size(), 2u);
  // The n-th launch of k before pairs with its n-th launch after, whatever the launch configuration.
  EXPECT_EQ(pairs[0], (KernelPair{0, 0, PairedBy::Name}));
  EXPECT_EQ(pairs[1], (KernelPair{1, 1, PairedBy::Name}));
  auto d = diff(before, after, {});
  ASSERT_EQ(d.unmatched_before.size(), 1u);
  EXPECT_EQ(d.unmatched_before[0].display, "gone");
  ASSERT_EQ(d.unmatched_after.size(), 1u);
  EXPECT_EQ(d.unmatched_after[0].display, "new");
}

TEST(LoopDiffPairing, MangledNamesDecideWhenBothSidesHaveThem) {
  auto f = snap(0, "k", 1, 10), d = snap(0, "k", 1, 10), old = snap(0, "k", 1, 10);
  f.mangled = "_Z1kPf";
  d.mangled = "_Z1kPd";  // an overload with the same short name
  EXPECT_FALSE(f.same_function(d));
  EXPECT_TRUE(f.same_function(old));  // a baseline recorded without mangled names: display names decide
  EXPECT_TRUE(pair_kernels({f}, {d}, {}).empty());
  EXPECT_EQ(pair_kernels({f}, {old}, {}).size(), 1u);
}

TEST(LoopDiffPairing, RepeatedLaunchesPairInOrder) {
  std::vector<KernelSnapshot> before = {snap(0, "k", 1, 10), snap(1, "k", 1, 20)};
  std::vector<KernelSnapshot> after = {snap(0, "k", 1, 11), snap(1, "k", 1, 21)};
  auto pairs = pair_kernels(before, after, {});
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], (KernelPair{0, 0, PairedBy::Name}));
  EXPECT_EQ(pairs[1], (KernelPair{1, 1, PairedBy::Name}));
}

TEST(LoopDiffPairing, ForcedPairOverridesIdentity) {
  std::vector<KernelSnapshot> before = {snap(0, "x", 1, 10), snap(1, "y", 1, 10)};
  std::vector<KernelSnapshot> after = {snap(0, "x", 1, 10), snap(1, "y", 1, 10)};
  auto pairs = pair_kernels(before, after, {{0, 1}});
  ASSERT_EQ(pairs.size(), 1u);  // x->y forced; y and x left have no partner by name
  EXPECT_EQ(pairs[0], (KernelPair{0, 1, PairedBy::Forced}));
}

// --- renamed kernels (Matching::NameThenRenamed, keet diff's default) ---

constexpr auto kRenames = Matching::NameThenRenamed;

KernelSnapshot launched(int index, std::string name, model::Dim3 grid, model::Dim3 block) {
  auto s = snap(index, std::move(name), 1, 100);
  s.grid = grid;
  s.block = block;
  return s;
}

TEST(LoopDiffRenamed, TheOnlyKernelOfEachReportPairsWhateverItsNameAndLaunch) {
  auto pairs = pair_kernels({snap(0, "a", 1, 10)}, {snap(3, "b", 2, 10)}, {}, kRenames);
  EXPECT_EQ(pairs, (std::vector<KernelPair>{{0, 0, PairedBy::OnlyKernel}}));
  auto d = diff({snap(0, "a", 1, 20)}, {snap(3, "b", 2, 10)}, {.matching = kRenames});
  ASSERT_EQ(d.pairs.size(), 1u);
  EXPECT_EQ(d.pairs[0].paired_by, PairedBy::OnlyKernel);
  EXPECT_EQ(d.pairs[0].verdict, Verdict::Faster);
  EXPECT_TRUE(d.unmatched_before.empty() && d.unmatched_after.empty() && d.suggested_pairs.empty());
  // The same name is still a pair by name, and name-only matching leaves a rename apart.
  EXPECT_EQ(pair_kernels({snap(0, "a", 1, 10)}, {snap(0, "a", 2, 10)}, {}, kRenames)[0].by, PairedBy::Name);
  EXPECT_TRUE(pair_kernels({snap(0, "a", 1, 10)}, {snap(0, "b", 1, 10)}, {}, Matching::NameOnly).empty());
}

TEST(LoopDiffRenamed, ForcedPairsComeFirstAndSayForced) {
  auto pairs = pair_kernels({snap(0, "a", 1, 10)}, {snap(0, "b", 1, 10)}, {{0, 0}}, kRenames);
  EXPECT_EQ(pairs, (std::vector<KernelPair>{{0, 0, PairedBy::Forced}}));
}

// Before: k k old1 old2 gone; after: k new1 new2 fresh. k pairs by name; its
// second launch before is not a rename (k is still there) and stays missing;
// old1 and old2 pair with new1 and new2 by launch configuration in order;
// gone and fresh share no launch configuration and stay apart.
TEST(LoopDiffRenamed, ByLaunchConfigurationAndOrderAmongNamesTheOtherSideLacks) {
  model::Dim3 g1{64, 1, 1}, g2{128, 1, 1}, b256{256, 1, 1}, b128{128, 1, 1};
  std::vector<KernelSnapshot> before = {launched(0, "k", g1, b256), launched(1, "k", g2, b128),
                                        launched(2, "old1", g2, b128), launched(3, "old2", g2, b128),
                                        launched(4, "gone", g1, b128)};
  std::vector<KernelSnapshot> after = {launched(0, "k", g1, b256), launched(1, "new1", g2, b128),
                                       launched(2, "new2", g2, b128), launched(3, "fresh", g2, b256)};
  auto pairs = pair_kernels(before, after, {}, kRenames);
  EXPECT_EQ(pairs,
            (std::vector<KernelPair>{
                {0, 0, PairedBy::Name}, {2, 1, PairedBy::LaunchConfigOrder}, {3, 2, PairedBy::LaunchConfigOrder}}));
  auto d = diff(before, after, {.matching = kRenames});
  ASSERT_EQ(d.unmatched_before.size(), 2u);
  EXPECT_EQ(d.unmatched_before[0].index, 1);  // k's second launch
  EXPECT_EQ(d.unmatched_before[1].display, "gone");
  ASSERT_EQ(d.unmatched_after.size(), 1u);
  EXPECT_EQ(d.unmatched_after[0].display, "fresh");
  EXPECT_EQ(d.suggested_pairs, (std::vector<std::pair<int, int>>{{1, 3}}));

  auto text = diff_text(d);
  EXPECT_NE(text.find("pairing: 1 by name, 2 by launch configuration and order\n"), std::string::npos) << text;
  EXPECT_NE(text.find("old1 -> new1\n  paired by:             launch configuration (same grid and block) and order of "
                      "appearance: the kernel names differ (old1 -> new1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("missing (only in before): #1 k"), std::string::npos) << text;
  EXPECT_NE(text.find("missing (only in before): #4 gone"), std::string::npos) << text;
  EXPECT_NE(text.find("new (only in after): #3 fresh"), std::string::npos) << text;
  EXPECT_NE(text.find("hint: 2 kernel(s) only in before and 1 only in after have no partner; if a kernel here is "
                      "another one renamed, "
                      "pair them by index (BEFORE:AFTER), e.g. --pair 1:3\n"),
            std::string::npos)
      << text;
  auto j = diff_json(d);
  EXPECT_EQ(j["pairs"][0]["paired_by"], "name");
  EXPECT_EQ(j["pairs"][1]["paired_by"], "launch_config_order");
  EXPECT_EQ(j["suggested_pairs"], nlohmann::json::parse("[[1, 3]]"));
  auto md = diff_markdown(d);
  EXPECT_NE(md.find("- **paired by**: launch configuration (same grid and block) and order of appearance"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("e.g. --pair 1:3"), std::string::npos) << md;
}

TEST(LoopDiffRenamed, MangledNamesDecideWhatTheOtherSideLacks) {
  // An overload (same display name, other mangled name) is a different function: it may pair as renamed,
  // as the same function family.
  auto f = snap(0, "k", 1, 10), d = snap(0, "k", 1, 10), other = snap(1, "x", 1, 10);
  f.mangled = "_Z1kPf";
  d.mangled = "_Z1kPd";
  EXPECT_EQ(pair_kernels({f, other}, {d, other}, {}, kRenames),
            (std::vector<KernelPair>{{1, 1, PairedBy::Name}, {0, 0, PairedBy::Family}}));
  // A side without mangled names falls back to display names: k is on both sides, so nothing is a rename.
  auto plain = snap(0, "k", 1, 10), extra = snap(0, "k", 1, 10);
  EXPECT_EQ(pair_kernels({f, extra}, {plain, other}, {}, kRenames), (std::vector<KernelPair>{{0, 0, PairedBy::Name}}));
}

TEST(LoopDiffRenamed, SuggestionsStopAtTheirLimit) {
  std::vector<KernelSnapshot> before, after;
  for (int i = 0; i < 12; ++i) {
    before.push_back(snap(i, "b" + std::to_string(i), 1, 10));
    after.push_back(snap(i, "a" + std::to_string(i), 2, 10));  // another grid: no pair by launch configuration
  }
  auto d = diff(before, after, {.matching = kRenames});
  EXPECT_TRUE(d.pairs.empty());
  ASSERT_EQ(d.suggested_pairs.size(), kSuggestedPairs);
  EXPECT_EQ(d.suggested_pairs.back(), (std::pair<int, int>{9, 9}));
  EXPECT_NE(diff_text(d).find("--pair 9:9 ...\n"), std::string::npos);
}

TEST(LoopDiffRenamed, NotesNameTheFunctionsWithoutTypesOrParameters) {
  EXPECT_EQ(
      pairing_note(PairedBy::OnlyKernel, "void Sobel<double>(uchar4 *, int)", "void Sobel<float>(uchar4 *, int)", 0, 0),
      "position, the only kernel of each report: the kernel names differ (Sobel<double> -> Sobel<float>)");
  // Overloads share the short name: the whole names tell them apart.
  EXPECT_EQ(pairing_note(PairedBy::Forced, "k(float *)", "k(double *)", 2, 5),
            "--pair 2:5: the kernel names differ (k(float *) -> k(double *))");
  EXPECT_EQ(pairing_note(PairedBy::Forced, "k", "k", 2, 5), "--pair 2:5");
  EXPECT_EQ(pairing_note(PairedBy::Name, "k", "k", 0, 0), "");
  for (auto b : {PairedBy::Name, PairedBy::Forced, PairedBy::OnlyKernel, PairedBy::LaunchConfigOrder})
    EXPECT_EQ(paired_by_from_name(paired_by_name(b)), b);
  EXPECT_FALSE(paired_by_from_name("guess"));
}

TEST(LoopDiffVerdict, MinDeltaKeepsSmallAbsoluteChangesUnchanged) {
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 1700), snap(0, "k", 1, 1900), 0.05).verdict, Verdict::Slower);
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 1700), snap(0, "k", 1, 1900), 0.05, 2000).verdict, Verdict::Unchanged);
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 1700), snap(0, "k", 1, 3700), 0.05, 2000).verdict, Verdict::Slower);
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 3700), snap(0, "k", 1, 1700), 0.05, 2000).verdict, Verdict::Faster);
}

TEST(LoopDiffFlags, DurationsNeedAUnit) {
  EXPECT_EQ(parse_duration_ns("2us"), 2000);
  EXPECT_EQ(parse_duration_ns(" 1.5 ms "), 1.5e6);
  EXPECT_EQ(parse_duration_ns("500ns"), 500);
  EXPECT_EQ(parse_duration_ns("0.01s"), 1e7);
  EXPECT_EQ(parse_duration_ns("2\u00b5s"), 2000);
  EXPECT_EQ(parse_duration_ns("0"), 0);
  for (std::string_view bad : {"2", "", "us", "-1us", "2 parsecs", "nan ms", "1e400s"})
    EXPECT_FALSE(parse_duration_ns(bad)) << bad;
}

TEST(LoopDiffFlags, PairsAreTwoIndices) {
  EXPECT_EQ(parse_pair("0:5"), (std::pair<int, int>{0, 5}));
  EXPECT_EQ(parse_pair("12:3"), (std::pair<int, int>{12, 3}));
  for (std::string_view bad : {"0", "0:", ":5", "-1:2", "1:2:3", "a:b", "1 :2", "99999999999:1"})
    EXPECT_FALSE(parse_pair(bad)) << bad;
}

TEST(LoopDiffVerdict, ThresholdSeparatesNoiseFromChange) {
  auto faster = compare_pair(snap(0, "k", 1, 1000), snap(0, "k", 1, 800), 0.02);
  EXPECT_EQ(faster.verdict, Verdict::Faster);
  EXPECT_DOUBLE_EQ(*faster.speedup, 1.25);
  auto slower = compare_pair(snap(0, "k", 1, 1000), snap(0, "k", 1, 1100), 0.02);
  EXPECT_EQ(slower.verdict, Verdict::Slower);
  EXPECT_NEAR(*slower.change, 0.10, 1e-12);
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 1000), snap(0, "k", 1, 1015), 0.02).verdict, Verdict::Unchanged);
  EXPECT_EQ(compare_pair(snap(0, "k", 1, 1000), snap(0, "k", 1, 1015), 0.01).verdict, Verdict::Slower);
  auto unknown = snap(0, "k", 1, 0);
  unknown.duration_ns.reset();
  EXPECT_EQ(compare_pair(unknown, snap(0, "k", 1, 10), 0.02).verdict, Verdict::Unknown);
}

TEST(LoopDiffFindings, ResolvedIntroducedAndPredictedGain) {
  auto before = snap(0, "k", 1, 1230, {"memory.uncoalesced_global", "launch.tail_effect"});
  before.findings[0].estimated_speedup = 1.5;
  auto after = snap(0, "k", 1, 1000, {"launch.tail_effect", "latency.stall.long_scoreboard"});
  before.bottleneck = "memory";
  after.bottleneck = "latency";
  auto p = compare_pair(before, after, 0.02);
  EXPECT_EQ(p.resolved, std::vector<std::string>{"memory.uncoalesced_global"});
  EXPECT_EQ(p.introduced, std::vector<std::string>{"latency.stall.long_scoreboard"});
  EXPECT_EQ(p.persisting, std::vector<std::string>{"launch.tail_effect"});
  EXPECT_EQ(p.bottleneck_shift(), "memory-bound -> latency-bound");
  ASSERT_EQ(p.predicted.size(), 1u);
  EXPECT_DOUBLE_EQ(p.predicted[0].predicted, 1.5);
  EXPECT_NEAR(p.predicted[0].measured, 1.23, 1e-12);
}

TEST(LoopDiffMetrics, DeltasSortedByLargestChange) {
  auto before = snap(0, "k", 1, 1000), after = snap(0, "k", 1, 1000);
  before.metrics = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 300},
                    {"not.a.key.metric", 1}};
  after.metrics = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 44},
                   {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 100},
                   {"not.a.key.metric", 9}};
  auto p = compare_pair(before, after, 0.02);
  ASSERT_EQ(p.metrics.size(), 2u);
  EXPECT_EQ(p.metrics[0].key.metric, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
  EXPECT_NEAR(*p.metrics[0].change, -2.0 / 3, 1e-12);
  EXPECT_NEAR(*p.metrics[1].change, 0.1, 1e-12);
}

TEST(LoopDiffJson, SchemaAndRoundTrip) {
  auto before = snap(3, "k", 1, 1000, {"memory.dram_bandwidth"});
  before.findings[0].estimated_speedup = 1.2;
  before.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 12.5;
  before.findings[0].lines = {{"/src/k.cu", 30}, {"/src/k.cu", 34}};
  before.source = {"/src/k.cu", 25};
  before.mangled = "_Z1kv";
  auto d = diff({before}, {snap(0, "k", 1, 500)}, {});
  auto j = diff_json(d);
  EXPECT_EQ(j["schema"], "keet.diff/1");
  ASSERT_EQ(j["pairs"].size(), 1u);
  EXPECT_EQ(j["pairs"][0]["verdict"], "faster");
  EXPECT_DOUBLE_EQ(j["pairs"][0]["speedup"].get<double>(), 2.0);
  EXPECT_EQ(j["pairs"][0]["resolved"][0], "memory.dram_bandwidth");
  EXPECT_TRUE(j["unmatched_before"].is_array());
  auto back = snapshot_from_json(j["pairs"][0]["before"]);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->identity(), before.identity());
  EXPECT_EQ(back->index, 3);
  EXPECT_EQ(back->metrics, before.metrics);
  ASSERT_EQ(back->findings.size(), 1u);
  EXPECT_EQ(back->findings[0].estimated_speedup, 1.2);
  ASSERT_EQ(back->findings[0].lines.size(), 2u);
  EXPECT_EQ(back->findings[0].lines[1].line, 34);
  EXPECT_EQ(back->source.file, "/src/k.cu");
  EXPECT_EQ(back->source.line, 25);
  EXPECT_EQ(back->mangled, "_Z1kv");
  EXPECT_FALSE(snapshot_from_json(nlohmann::json{{"name", 3}}));
}

// Written pair by pair, the document is byte for byte one dump of diff_json().
TEST(LoopDiffJson, StreamedDocumentEqualsOneDump) {
  auto before = snap(3, "k", 1, 1000, {"memory.dram_bandwidth"});
  before.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 12.5;
  for (auto d : {diff({before, snap(4, "gone", 1, 10)}, {snap(0, "k", 1, 500), snap(1, "new\x01<", 1, 7)}, {}),
                 diff({}, {}, {})}) {
    std::ostringstream out;
    write_diff_json(out, d);
    EXPECT_EQ(out.str(), keet::json_text(diff_json(d), 2) + "\n");
  }
}

TEST(LoopDiffText, NamesVerdictShiftAndUnmatched) {
  auto before = snap(0, "k", 1, 2000, {"memory.uncoalesced_global"});
  before.bottleneck = "memory";
  auto after = snap(0, "k", 1, 1000);
  after.bottleneck = "latency";
  auto d = diff({before, snap(1, "only_before", 1, 5)}, {after}, {});
  auto text = diff_text(d);
  EXPECT_NE(text.find("faster"), std::string::npos);
  EXPECT_NE(text.find("2.00x"), std::string::npos);
  EXPECT_NE(text.find("memory-bound -> latency-bound"), std::string::npos);
  EXPECT_NE(text.find("resolved:"), std::string::npos);
  EXPECT_NE(text.find("missing (only in before): #1 only_before"), std::string::npos);
  auto md = diff_markdown(d);
  EXPECT_NE(md.find("| `k` | 2.00 us | 1.00 us | -50.0% | 2.00x | **faster** |"), std::string::npos);
}

TEST(LoopDiffParse, Fractions) {
  EXPECT_DOUBLE_EQ(*parse_fraction("2%"), 0.02);
  EXPECT_DOUBLE_EQ(*parse_fraction(" 5 % "), 0.05);
  EXPECT_DOUBLE_EQ(*parse_fraction("0.1"), 0.1);
  EXPECT_DOUBLE_EQ(*parse_fraction("10"), 0.10);
  EXPECT_FALSE(parse_fraction("abc"));
  EXPECT_FALSE(parse_fraction("-3%"));
}

}  // namespace
}  // namespace keet::render
