// Units of ncu metrics. Reports do not store units: ncu takes them from its
// metric database, so KEET keeps its own table (data/metrics/units.json,
// gathered from ncu's own exports) plus naming rules for metrics the table
// does not list. Also converts the auto-scaled units of ncu's text exports
// ("Mbyte", "usecond", "Ghz") back to the base units of the raw page.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "model/report.h"

namespace keet::model {

// Base unit as `ncu --print-units base` prints it ("nsecond", "byte", "%", "").
std::string unit_of(std::string_view metric);
// As ncu prints it for this kernel's chip: ncu 2022.3 knows hardware-metric
// units only for the chips in its database, and prints "" for the others.
std::string unit_of(std::string_view metric, const Kernel& k);
// The same, with chip_has_units(k) already known (it costs two lookups).
std::string unit_of(std::string_view metric, bool chip_has_units);
// unit_of(metric, chip_has_units) of every name, in order. Names in sorted
// order (a CSV's columns) cost a step through the table each instead of a
// search; any order gives the same units.
std::vector<std::string> units_of(const std::vector<std::string>& metrics, bool chip_has_units);
// Does ncu's metric database know this kernel's chip (by compute capability)?
bool chip_has_units(const Kernel& k);
// The same from the compute capability as major * 10 + minor (86 for 8.6).
bool chip_has_units_cc(double cc);
// The unit from the naming rules alone (what unit_of falls back to).
std::string unit_by_rules(std::string_view metric);

// Value text as ncu's raw CSV export prints it with base units: integral
// doubles without decimals, others with two, "nan", strings as they are,
// "no data" for a metric with no value.
std::string csv_value_text(std::string_view metric, const Value& v, bool has_value);
// The same for a whole metric: a value-less metric with instances prints "".
std::string csv_cell_text(const Metric& m);
// The same text appended to `out` inside an already opened CSV quote (a
// quote in a string value is doubled): the export's hot path, no temporaries.
void append_csv_cell(std::string& out, const Metric& m);

// A value in an auto-scaled unit, converted to the base unit.
struct BaseValue {
  double value = 0;
  std::string unit;
};
// Units KEET does not know to scale come back unchanged, factor 1.
BaseValue to_base_unit(double value, std::string_view unit);

// --print-units: base prints values as the report stores them (ncu's
// `--print-units base`); auto scales them with SI prefixes as ncu's
// `--print-units auto` does.
enum class PrintUnits { Base, Auto };
std::optional<PrintUnits> parse_print_units(std::string_view name);

// The unit ncu's auto mode shows a value of `base_unit` in, for the largest
// magnitude among the values shown in it (ncu scales a CSV column by its
// largest value): bytes by their numerator ("Mbyte", "Gbyte/second"),
// durations up to seconds ("msecond"), other rates by their denominator
// ("cycle/nsecond"). A unit ncu does not scale comes back with factor 1.
struct Scale {
  std::string unit;
  double factor = 1;         // divide a base value by it
  bool zero_column = false;  // every finite value of the column is 0 (ncu then prints a NaN as 0)
};
Scale auto_scale(std::string_view base_unit, double magnitude);
// A number in an auto-scaled unit as ncu prints it: six decimals.
std::string auto_value_text(double base_value, const Scale& s);

// The one formatter for numbers KEET shows to people (text, markdown, HTML,
// tables; machine formats keep base units): durations as ns, us, ms or s;
// bytes as B, KB, MB, GB or TB (1000s, as ncu's Kbyte and Mbyte) and byte
// rates per second; any other unit after the number, integral values in
// full with thousands separators.
std::string readable(double value, std::string_view base_unit);
std::string readable_duration(double ns);  // readable(ns, "nsecond")

}  // namespace keet::model
