// TEMPORARY first cut; the export work replaces it with the oracle-checked table.
#include "model/units.h"

#include <fmt/format.h>

namespace keet::model {

std::string unit_of(std::string_view metric) {
  if (metric.find(".pct") != std::string_view::npos) return "%";
  if (metric.find("time_duration") != std::string_view::npos) return "nsecond";
  if (metric.find("bytes") != std::string_view::npos) return "byte";
  return "";
}

std::string csv_value_text(std::string_view, const Value& v, bool has_value) {
  if (!has_value) return "no data";
  switch (v.kind) {
    case Value::Kind::None: return "no data";
    case Value::Kind::String: return v.text;
    case Value::Kind::Uint64:
    case Value::Kind::Uint32: return fmt::format("{}", v.integer);
    default: return fmt::format("{}", v.number);
  }
}

}  // namespace keet::model
