// Metric lookup by name on a kernel (the index the analysis reads every metric through).
#include <gtest/gtest.h>

#include <string>

#include "model/report.h"

namespace keet::model {
namespace {

Kernel kernel_with(const std::vector<std::pair<std::string, double>>& metrics) {
  Kernel k;
  for (const auto& [name, v] : metrics) k.metrics.push_back({name, Value::of_double(v), {}, ""});
  return k;
}

TEST(ModelKernel, FindsByNameAndTheFirstOfARepeatedNameWins) {
  auto k = kernel_with({{"a", 1}, {"b", 2}, {"a", 3}});
  ASSERT_NE(k.find("a"), nullptr);
  EXPECT_EQ(k.number("a"), 1);
  EXPECT_EQ(k.number("b"), 2);
  EXPECT_EQ(k.find("c"), nullptr);
  EXPECT_EQ(k.find(""), nullptr);
}

TEST(ModelKernel, PrecomputedNamesFindTheSameMetric) {
  auto k = kernel_with({{"gpu__time_duration.sum", 7}, {"launch__grid_size", 8}});
  MetricName duration("gpu__time_duration.sum"), absent("launch__block_size");
  EXPECT_EQ(k.find(duration), k.find("gpu__time_duration.sum"));
  EXPECT_EQ(k.number(duration), 7);
  EXPECT_EQ(k.find(absent), nullptr);
}

TEST(ModelKernel, ManyMetricsAreAllFound) {
  Kernel k;
  for (int i = 0; i < 1000; ++i) k.metrics.push_back({"metric_" + std::to_string(i), Value::of_uint(i), {}, ""});
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(k.number("metric_" + std::to_string(i)), i) << i;
  EXPECT_EQ(k.find("metric_1000"), nullptr);
}

TEST(ModelKernel, IndexFollowsAddedMetricsAndCopies) {
  auto k = kernel_with({{"a", 1}});
  EXPECT_EQ(k.find("b"), nullptr);
  k.metrics.push_back({"b", Value::of_double(2), {}, ""});
  EXPECT_EQ(k.number("b"), 2);  // the index is rebuilt for the new metric
  Kernel copy = k;
  copy.metrics[0].value = Value::of_double(5);
  EXPECT_EQ(copy.find("a"), &copy.metrics[0]);  // the copy's own metrics, not the original's
  EXPECT_EQ(copy.number("a"), 5);
  EXPECT_EQ(k.number("a"), 1);
}

TEST(ModelKernel, TextOnlyForStringValues) {
  Kernel k;
  k.metrics.push_back({"device__attribute_display_name", Value::of_string("A100"), {}, ""});
  k.metrics.push_back({"n", Value::of_double(1), {}, ""});
  EXPECT_EQ(k.text("device__attribute_display_name"), "A100");
  EXPECT_FALSE(k.text("n"));
  EXPECT_FALSE(k.number("device__attribute_display_name"));
}

}  // namespace
}  // namespace keet::model
