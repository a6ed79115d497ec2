// Which launches fold into one diagnosis: same kernel, grid, block and device, and
// durations within noise (analysis::FoldRule).
#include <gtest/gtest.h>

#include "analysis/ranking.h"
#include "readers/reader.h"
#include "support/report_writer.h"

namespace keet::analysis {
namespace {

struct Launch {
  std::string name;
  uint64_t grid;
  std::optional<double> ns;  // nullopt: the report holds no duration
};

model::Report report_of(const std::vector<Launch>& launches) {
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  for (const auto& l : launches) {
    std::vector<std::pair<std::string, double>> m;
    if (l.ns) m.emplace_back("gpu__time_duration.sum", *l.ns);
    b.results.push_back(w.kernel(l.name, l.grid, 256, m).SerializeAsString());
  }
  w.flush_strings(b);
  w.add(b);
  auto src = io::memory_source("folds.ncu-rep", w.bytes());
  auto r = readers::load(*src);
  EXPECT_TRUE(r);
  return std::move(*r);
}

std::vector<LaunchSummary> folds_of(const std::vector<Launch>& launches, FoldRule rule = {}) {
  auto r = report_of(launches);
  LaunchGroups g;
  for (const auto& k : r.kernels) g.add(k);
  return g.folds(rule);
}

TEST(LaunchFolds, SameConfigurationWithinNoiseIsOneFold) {
  auto f = folds_of({{"k", 64, 1000}, {"k", 64, 1900}, {"k", 64, 1200}, {"k", 128, 1000}, {"j", 64, 1000}});
  ASSERT_EQ(f.size(), 3u);  // k at 64 (1.0-1.9 us: within the 1 us of noise), k at 128, j
  EXPECT_EQ(f[0].indices, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f[0].index, 2);  // the median duration, 1.2 us
  EXPECT_EQ(f[0].median_ns, 1200);
  EXPECT_EQ(f[0].min_ns, 1000);
  EXPECT_EQ(f[0].max_ns, 1900);
  EXPECT_EQ(f[1].indices, (std::vector<int>{3}));
  EXPECT_EQ(f[2].indices, (std::vector<int>{4}));
}

TEST(LaunchFolds, DurationsBeyondNoiseAreSeparateBands) {
  auto f = folds_of({{"k", 64, 100e3}, {"k", 64, 500e3}, {"k", 64, 110e3}, {"k", 64, 520e3}, {"k", 64, std::nullopt}});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].indices, (std::vector<int>{0, 2, 4}));  // the untimed launch joins the first band
  EXPECT_EQ(f[0].timed, 2);
  EXPECT_EQ(f[1].indices, (std::vector<int>{1, 3}));
}

TEST(LaunchFolds, MoreBandsThanTheRuleAllowsFoldIntoOneWithTheirSpread) {
  std::vector<Launch> launches;
  for (double ns : {10e3, 40e3, 160e3, 640e3}) launches.push_back({"k", 64, ns});
  auto f = folds_of(launches);
  ASSERT_EQ(f.size(), 1u) << "four bands: one diagnosis, its spread stated";
  EXPECT_EQ(f[0].min_ns, 10e3);
  EXPECT_EQ(f[0].max_ns, 640e3);
  EXPECT_EQ(folds_of(launches, {.max_folds = 4}).size(), 4u);
}

// The same kernel and configuration on two GPUs is two entries: their limits
// differ, so one diagnosis cannot stand for both.
TEST(LaunchFolds, LaunchesOnAnotherDeviceAreAnotherConfiguration) {
  auto r = report_of({{"k", 64, 1000}, {"k", 64, 1000}, {"k", 64, 1000}});
  const char* devices[] = {"NVIDIA A100", "NVIDIA H100", "NVIDIA A100"};
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    r.kernels[i].metrics.push_back({"device__attribute_display_name", model::Value::of_string(devices[i])});
    r.kernels[i].reset_index();
  }
  LaunchGroups g;
  for (const auto& k : r.kernels) g.add(k);
  auto s = g.summaries();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].indices, (std::vector<int>{0, 2}));
  EXPECT_EQ(s[0].device, "NVIDIA A100");
  EXPECT_EQ(s[1].indices, (std::vector<int>{1}));
  EXPECT_EQ(s[1].device, "NVIDIA H100");
  EXPECT_EQ(g.folds().size(), 2u);
}

}  // namespace
}  // namespace keet::analysis
