#include "model/units.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "units_table.h"

namespace keet::model {
namespace {

using namespace units_data;  // generated from data/metrics/units.json at build time
using Scale = std::pair<std::string, double>;  // base unit, factor

// The generator sorts keyed tables, so lookups are binary searches.
template <typename Entry, size_t N>
const Entry* find_key(const Entry (&table)[N], std::string_view key) {
  auto it = std::lower_bound(std::begin(table), std::end(table), key,
                             [](const Entry& e, std::string_view k) { return e.key < k; });
  return it != std::end(table) && it->key == key ? it : nullptr;
}

std::string counter_unit(std::string_view counter) {
  for (const auto& [word, unit] : kCounterWords)
    if (counter.find(word) != std::string_view::npos) return std::string(unit);
  return "";
}

// ncu prints doubles with integral values as integers, others with 2 decimals.
void append_double_text(std::string& out, double d) {
  if (std::isnan(d)) out += "nan";
  else if (std::isinf(d)) out += d > 0 ? "inf" : "-inf";
  else if (d == 0) out += '0';
  else if (d == std::floor(d)) fmt::format_to(std::back_inserter(out), "{:.0f}", d);
  else fmt::format_to(std::back_inserter(out), "{:.2f}", d);
}

std::string double_text(double d) {
  std::string out;
  append_double_text(out, d);
  return out;
}

// "Mbyte" -> byte x 1e6; "Kinst" -> inst x 1e3; base words map to themselves.
Scale scale_numerator(std::string_view u) {
  if (const auto* n = find_key(kNumerator, u)) return Scale{std::string(n->base), n->factor};
  if (u.size() > 1) {
    const auto* p = find_key(kCountPrefixes, u.substr(0, 1));
    if (p && std::islower(static_cast<unsigned char>(u[1]))) return Scale{std::string(u.substr(1)), p->factor};
  }
  return Scale{std::string(u), 1.0};  // a base unit, or one KEET does not scale
}

}  // namespace

std::string unit_by_rules(std::string_view metric) {
  for (auto m : kPercentMarkers)
    if (metric.find(m) != std::string_view::npos) return "%";
  std::string base = counter_unit(metric.substr(0, metric.find('.')));
  if (base.empty()) return base;
  for (const auto& [suffix, add] : kRateSuffixes)
    if (metric.ends_with(suffix)) return base + std::string(add);
  return base;
}

std::string unit_of(std::string_view metric) {
  if (const auto* u = find_key(kUnits, metric)) return std::string(u->value);
  if (const auto* u = find_key(kChipIndependent, metric)) return std::string(u->value);
  return unit_by_rules(metric);
}

bool chip_has_units(const Kernel& k) {
  auto major = k.number("device__attribute_compute_capability_major");
  auto minor = k.number("device__attribute_compute_capability_minor");
  if (!major || !minor) return true;  // no way to tell: assume a chip ncu knows
  double cc = *major * 10 + *minor;
  return cc >= kMinCc && cc <= kMaxCc;
}

std::string unit_of(std::string_view metric, const Kernel& k) {
  if (chip_has_units(k)) return unit_of(metric);
  const auto* u = find_key(kChipIndependent, metric);
  return u ? std::string(u->value) : "";
}

std::string csv_value_text(std::string_view, const Value& v, bool has_value) {
  if (!has_value) return "no data";
  switch (v.kind) {
    case Value::Kind::None: return "no data";
    case Value::Kind::String: return v.text;
    case Value::Kind::Uint64:
    case Value::Kind::Uint32: return fmt::format("{}", v.integer);
    case Value::Kind::Double:
    case Value::Kind::Float: return double_text(v.number);
  }
  return "";
}

std::string csv_cell_text(const Metric& m) {
  if (m.value.empty() && (m.listed || !m.instances.empty())) return "";
  return csv_value_text(m.name, m.value, !m.value.empty());
}

void append_csv_cell(std::string& out, const Metric& m) {
  const Value& v = m.value;
  if (v.empty() && (m.listed || !m.instances.empty())) return;
  switch (v.kind) {
    case Value::Kind::None: out += "no data"; return;
    case Value::Kind::Uint64:
    case Value::Kind::Uint32: fmt::format_to(std::back_inserter(out), "{}", v.integer); return;
    case Value::Kind::Double:
    case Value::Kind::Float: append_double_text(out, v.number); return;
    case Value::Kind::String:
      for (char c : v.text) {
        if (c == '"') out += '"';
        out += c;
      }
      return;
  }
}

BaseValue to_base_unit(double value, std::string_view unit) {
  auto slash = unit.find('/');
  auto num = scale_numerator(unit.substr(0, slash));
  BaseValue out{value * num.second, num.first};
  if (slash == std::string_view::npos) return out;
  const auto* den = find_key(kDenominator, unit.substr(slash + 1));
  if (!den) {
    out.unit += std::string(unit.substr(slash));  // "inst/cycle": nothing to scale below the line
    return out;
  }
  out.value /= den->factor;
  out.unit += "/" + std::string(den->base);
  return out;
}

}  // namespace keet::model
