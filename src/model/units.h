// Units of ncu metrics. Reports do not store units: ncu takes them from its
// metric database, so KEET keeps its own table (data/metrics/units.json) plus
// naming rules for metrics the table does not list.
#pragma once
#include <string>
#include <string_view>

#include "model/report.h"

namespace keet::model {

// Base unit as `ncu --print-units base` prints it ("nsecond", "byte", "%", "").
std::string unit_of(std::string_view metric);
// Value text as ncu's raw CSV export prints it with base units.
std::string csv_value_text(std::string_view metric, const Value& v, bool has_value);

}  // namespace keet::model
