// model/units: the unit tables are compiled from data/metrics/units.json at
// build time (tools/codegen/units_table.cc); every entry of the JSON must come
// back through the lookups exactly as written.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/units.h"
#include "util/embedded_data.h"

namespace keet {
namespace {

nlohmann::json units_json() {
  auto text = embedded_file("metrics/units.json");
  return nlohmann::json::parse(text.value_or("{}"));
}

TEST(ModelUnits, EveryListedMetricHasItsUnit) {
  auto j = units_json();
  ASSERT_GT(j["units"].size(), 100u);
  for (const auto& [name, unit] : j["units"].items()) {
    if (name.starts_with("_")) continue;
    EXPECT_EQ(model::unit_of(name), unit.get<std::string>()) << name;
  }
}

TEST(ModelUnits, ChipIndependentUnitsSurviveUnknownChips) {
  auto j = units_json();
  model::Kernel old_chip;  // compute capability 5.2: outside ncu 2022.3's metric database
  old_chip.metrics.push_back({"device__attribute_compute_capability_major", model::Value::of_uint(5), {}, ""});
  old_chip.metrics.push_back({"device__attribute_compute_capability_minor", model::Value::of_uint(2), {}, ""});
  ASSERT_FALSE(model::chip_has_units(old_chip));
  for (const auto& [name, unit] : j["chip_independent"].items()) {
    if (name.starts_with("_")) continue;
    EXPECT_EQ(model::unit_of(name, old_chip), unit.get<std::string>()) << name;
  }
  EXPECT_EQ(model::unit_of("dram__bytes_read.sum", old_chip), "");
  EXPECT_EQ(model::unit_of("dram__bytes_read.sum"), "byte");
}

TEST(ModelUnits, EveryScaledUnitConverts) {
  auto j = units_json();
  for (const auto& [unit, spec] : j["scaled_units"]["numerator"].items()) {
    if (unit.starts_with("_")) continue;
    auto b = model::to_base_unit(2.0, unit);
    EXPECT_EQ(b.unit, spec[0].get<std::string>()) << unit;
    EXPECT_DOUBLE_EQ(b.value, 2.0 * spec[1].get<double>()) << unit;
  }
  auto rate = model::to_base_unit(3.0, "Gbyte/msecond");
  EXPECT_EQ(rate.unit, "byte/second");
  EXPECT_DOUBLE_EQ(rate.value, 3.0e9 / 1e-3);
  auto prefixed = model::to_base_unit(1.5, "Kinst");  // count prefix + base word
  EXPECT_EQ(prefixed.unit, "inst");
  EXPECT_DOUBLE_EQ(prefixed.value, 1500.0);
  auto unknown = model::to_base_unit(7.0, "furlong");
  EXPECT_EQ(unknown.unit, "furlong");
  EXPECT_DOUBLE_EQ(unknown.value, 7.0);
}

TEST(ModelUnits, NamingRulesCoverUnlistedMetrics) {
  EXPECT_EQ(model::unit_by_rules("zz__something_pct_of_peak"), "%");
  EXPECT_EQ(model::unit_by_rules("zz__bytes_moved.sum.per_second"), "byte/second");
  EXPECT_EQ(model::unit_by_rules("zz__cycles_active.avg"), "cycle");
  EXPECT_EQ(model::unit_by_rules("zz__mystery.sum"), "");
}

}  // namespace
}  // namespace keet
