// model/units: the unit tables are compiled from data/metrics/units.json at
// build time (tools/codegen/units_table.cc); every entry of the JSON must come
// back through the lookups exactly as written.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
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

// The batch lookup the raw CSV's units row uses gives unit_of's answer for
// every name, whatever the order and whether the chip has units.
TEST(ModelUnits, UnitsOfAgreesWithUnitOfInAnyOrder) {
  auto j = units_json();
  std::vector<std::string> names;
  for (const auto& [name, unit] : j["units"].items()) names.push_back(name);
  for (const auto& [name, unit] : j["chip_independent"].items()) names.push_back(name);
  for (const char* extra :
       {"", "a", "zzzz", "dram__bytes.sum.per_second", "sm__cycles_active.avg.pct_of_peak_sustained",
        "lts__t_sectors.sum", "launch__grid_size", "~~~"})
    names.push_back(extra);
  std::sort(names.begin(), names.end());
  auto shuffled = names;
  std::reverse(shuffled.begin(), shuffled.end());
  std::swap(shuffled[3], shuffled[shuffled.size() / 2]);
  for (bool chip : {true, false})
    for (const auto* order : {&names, &shuffled}) {
      auto got = model::units_of(*order, chip);
      ASSERT_EQ(got.size(), order->size());
      for (size_t i = 0; i < order->size(); ++i)
        EXPECT_EQ(got[i], model::unit_of((*order)[i], chip)) << (*order)[i] << " chip " << chip;
    }
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

namespace keet {
namespace {

// --print-units auto, as ncu 2022.3/2024.1 write it on the fixtures' raw pages.
TEST(ModelUnitsAuto, ScalesAsNcuAuto) {
  auto s = model::auto_scale("nsecond", 10776576);
  EXPECT_EQ(s.unit, "msecond");
  EXPECT_EQ(model::auto_value_text(10776576, s), "10.776576");
  EXPECT_EQ(model::auto_scale("nsecond", 131136).unit, "usecond");
  EXPECT_EQ(model::auto_scale("byte", 20972589).unit, "Mbyte");
  EXPECT_EQ(model::auto_scale("byte/block", 1024).unit, "Kbyte/block");
  EXPECT_EQ(model::auto_scale("byte/second", 784294547817.71).unit, "Gbyte/second");
  EXPECT_EQ(model::auto_scale("%/byte", 2006).unit, "%/Kbyte");  // ncu scales the byte word wherever it is
  EXPECT_EQ(model::auto_scale("cycle/second", 6245375649.31).unit, "cycle/nsecond");
  EXPECT_EQ(model::auto_scale("sector/second", 24508165854.95).unit, "sector/nsecond");
  EXPECT_EQ(model::auto_scale("byte/block", 0).unit, "byte/block");  // nothing to scale by
  EXPECT_EQ(model::auto_scale("inst", 1e9).unit, "inst");            // counts keep their unit
  EXPECT_EQ(model::auto_value_text(32, model::auto_scale("block", 32)), "32.000000");
}

// One formatter for people: no "10411.204 ms", no "3.146e+06 byte".
// What ncu 2022.3's auto page prints for a NaN counter (AveryClapp ESMM
// fixture, kernel 5): it depends on the column, not only on the value.
TEST(ModelUnitsAuto, NanCellsAsNcuAuto) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(model::auto_value_text(nan, model::auto_scale("%", 0)), "0.000000");  // the column is all zeros
  EXPECT_EQ(model::auto_value_text(nan, model::auto_scale("%", 42.5)), "nan");
  EXPECT_EQ(model::auto_value_text(-nan, model::auto_scale("nsecond", 10776576)), "-nan");  // scaled: printf's %f
  EXPECT_EQ(model::auto_value_text(nan, model::auto_scale("nsecond", 10776576)), "nan");
}

TEST(ModelUnitsReadable, DurationsSizesAndCounts) {
  EXPECT_EQ(model::readable_duration(10411204000), "10.41 s");
  EXPECT_EQ(model::readable_duration(1397024), "1.397 ms");
  EXPECT_EQ(model::readable_duration(12340), "12.34 us");
  EXPECT_EQ(model::readable_duration(850), "850 ns");
  EXPECT_EQ(model::readable(3145728, "byte"), "3.15 MB");
  EXPECT_EQ(model::readable(512, "byte"), "512 B");
  EXPECT_EQ(model::readable(49152, "byte"), "49.15 KB");
  EXPECT_EQ(model::readable(7.84e11, "byte/second"), "784.00 GB/s");
  EXPECT_EQ(model::readable(3145728, "sector"), "3,145,728 sector");
  EXPECT_EQ(model::readable(-1234, ""), "-1,234");
  EXPECT_EQ(model::readable(66.666, "%"), "66.67%");
  EXPECT_EQ(model::readable(0.125, "inst/cycle"), "0.125 inst/cycle");
  EXPECT_EQ(model::readable(2.5, "usecond"), "2.50 us");
}

}  // namespace
}  // namespace keet
