// keet eval's scoring: label parsing (optional limiter, expect and folded
// launches, the "unknown" class) and the per-repository aggregation.
#include <gtest/gtest.h>

#include "analysis/evaluation.h"

namespace keet::analysis {
namespace {

LabelResult result(std::string report, std::string label_cls, std::string predicted, std::vector<std::string> expect,
                   std::vector<std::string> top3, std::string limiter = "", std::string predicted_limiter = "",
                   std::vector<int> also = {}) {
  LabelResult r;
  r.label.report = std::move(report);
  r.label.cls = std::move(label_cls);
  r.label.expect = std::move(expect);
  r.label.limiter = std::move(limiter);
  r.label.also = std::move(also);
  r.predicted_class = std::move(predicted);
  r.predicted_limiter = std::move(predicted_limiter);
  r.top3 = std::move(top3);
  r.class_ok = r.predicted_class == r.label.cls;
  r.limiter_ok = !r.label.limiter.empty() && r.label.limiter == r.predicted_limiter;
  for (const auto& e : r.label.expect)
    for (const auto& t : r.top3) r.top3_hit = r.top3_hit || e == t;
  r.recall3 = r.top3_hit ? 1.0 : 0.0;
  return r;
}

TEST(EvalLabels, ParsesOptionalFields) {
  auto labels = parse_labels(R"({"labels": [
    {"report": "a/x.ncu-rep", "kernel": 3, "class": "memory", "limiter": "dram", "expect": ["memory.dram_bandwidth"], "also": [4, 5]},
    {"report": "oracle-2024.1:s/y.ncu-rep", "kernel": 0, "class": "unknown"}]})");
  ASSERT_TRUE(labels) << labels.error().message;
  ASSERT_EQ(labels->size(), 2u);
  EXPECT_EQ((*labels)[0].limiter, "dram");
  EXPECT_EQ((*labels)[0].also, (std::vector<int>{4, 5}));
  EXPECT_EQ((*labels)[1].cls, "unknown");
  EXPECT_TRUE((*labels)[1].expect.empty());
  EXPECT_TRUE((*labels)[1].limiter.empty());
}

TEST(EvalLabels, SelectsANamedSet) {
  auto labels = parse_labels(R"({"labels": [
    {"report": "a/x", "kernel": 0, "class": "memory", "sets": ["v1"]},
    {"report": "a/x", "kernel": 1, "class": "latency"}]})");
  ASSERT_TRUE(labels) << labels.error().message;
  auto v1 = select_set(*labels, "v1");
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].kernel, 0);
  EXPECT_EQ(select_set(*labels, "").size(), 2u);
  EXPECT_TRUE(select_set(*labels, "v9").empty());
}

TEST(EvalLabels, RejectsAClassOutsideTheFive) {
  auto labels = parse_labels(R"({"labels": [{"report": "a/x.ncu-rep", "kernel": 0, "class": "bandwidth"}]})");
  ASSERT_FALSE(labels);
  EXPECT_NE(labels.error().message.find("bandwidth"), std::string::npos);
}

TEST(EvalLabels, RepositoryIsTheFirstFolderOrTheOracleVersion) {
  EXPECT_EQ(repository("owner__name/sub/r.ncu-rep"), "owner__name");
  EXPECT_EQ(repository("oracle:uncoalescedGlobalAccesses/a.ncu-rep"), "oracle");
  EXPECT_EQ(repository("oracle-2024.1:sharedBankConflicts/t.ncu-rep"), "oracle-2024.1");
}

TEST(EvalSummary, CountsPerRepositoryAndOverall) {
  std::vector<LabelResult> rs;
  rs.push_back(
      result("a/r1", "memory", "memory", {"memory.dram_bandwidth"}, {"memory.dram_bandwidth"}, "dram", "dram", {1, 2}));
  rs.push_back(result("a/r1", "launch", "latency", {"launch.small_grid"}, {"latency.stall.wait"}));
  rs.push_back(result("b/r2", "unknown", "unknown", {}, {}));
  rs.push_back(result("b/r2", "compute", "compute", {}, {}, "pipe_fma", ""));
  auto skipped = result("b/r3", "memory", "", {"memory.dram_bandwidth"}, {});
  skipped.error = "cannot read";
  rs.push_back(skipped);
  auto s = summarize(rs);

  EXPECT_EQ(s.overall.labels, 5);
  EXPECT_EQ(s.overall.scored, 4);
  EXPECT_EQ(s.overall.launches, 6);  // the first label stands for 3 launches
  EXPECT_DOUBLE_EQ(s.overall.class_accuracy(), 3.0 / 4);
  // Labels without an expectation are not scored for top 3.
  EXPECT_EQ(s.overall.top3_scored, 2);
  EXPECT_DOUBLE_EQ(s.overall.top3_accuracy(), 0.5);
  EXPECT_EQ(s.overall.limiter_scored, 2);
  EXPECT_EQ(s.overall.limiter_answered, 1);
  EXPECT_DOUBLE_EQ(s.overall.limiter_accuracy(), 0.5);

  ASSERT_EQ(s.by_repository.size(), 2u);
  EXPECT_EQ(s.by_repository["a"].scored, 2);
  EXPECT_DOUBLE_EQ(s.by_repository["a"].class_accuracy(), 0.5);
  EXPECT_EQ(s.by_repository["b"].labels, 3);
  EXPECT_EQ(s.by_repository["b"].scored, 2);
  EXPECT_DOUBLE_EQ(s.by_repository["b"].class_accuracy(), 1.0);

  EXPECT_EQ(s.confusion["launch"]["latency"], 1);
  EXPECT_EQ(s.confusion["unknown"]["unknown"], 1);
  EXPECT_EQ(s.scored, s.overall.scored);
  EXPECT_DOUBLE_EQ(s.class_accuracy, s.overall.class_accuracy());
}

TEST(EvalSummary, MissesAreClassLimiterOrTop3Disagreements) {
  EXPECT_FALSE(is_miss(result("a/r", "memory", "memory", {"x"}, {"x"}, "dram", "dram")));
  EXPECT_TRUE(is_miss(result("a/r", "memory", "compute", {"x"}, {"x"})));
  EXPECT_TRUE(is_miss(result("a/r", "memory", "memory", {"x"}, {"x"}, "dram", "l2")));
  EXPECT_TRUE(is_miss(result("a/r", "memory", "memory", {"x"}, {"y"})));
  EXPECT_FALSE(is_miss(result("a/r", "latency", "latency", {}, {"y"})));
  auto skipped = result("a/r", "memory", "", {"x"}, {});
  skipped.error = "cannot read";
  EXPECT_FALSE(is_miss(skipped));  // a skipped label is reported as skipped, not as a miss
}

}  // namespace
}  // namespace keet::analysis
