#include "model/units.h"

#include <charconv>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "units_table.h"
#include "util/strings.h"

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
// std::to_chars rounds a fixed-precision double exactly (as printf and fmt's
// "{:.2f}" do) and writes into a stack buffer: no format string parsed per cell.
void append_fixed(std::string& out, double d, int precision) {
  char buf[400];  // the largest double has 309 integral digits
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed, precision);
  out.append(buf, r.ptr);
}

void append_uint_text(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_double_text(std::string& out, double d) {
  if (std::isnan(d)) out += "nan";
  else if (std::isinf(d)) out += d > 0 ? "inf" : "-inf";
  else if (d == 0) out += '0';
  else if (d == std::floor(d)) append_fixed(out, d, 0);
  else append_fixed(out, d, 2);
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

namespace {

// ncu's raw page leaves the cell of a value-less metric that has a list empty.
bool blank_cell(const Metric& m) { return m.value.empty() && (m.listed || !m.instances.empty()); }

void append_value_text(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::None: out += "no data"; return;
    case Value::Kind::String: out += v.text; return;
    case Value::Kind::Uint64:
    case Value::Kind::Uint32: append_uint_text(out, v.integer); return;
    case Value::Kind::Double:
    case Value::Kind::Float: append_double_text(out, v.number); return;
  }
}

}  // namespace

std::string csv_value_text(std::string_view, const Value& v, bool has_value) {
  if (!has_value) return "no data";
  std::string out;
  append_value_text(out, v);
  return out;
}

std::string csv_cell_text(const Metric& m) {
  return blank_cell(m) ? "" : csv_value_text(m.name, m.value, !m.value.empty());
}

void append_csv_cell(std::string& out, const Metric& m) {
  if (blank_cell(m)) return;
  if (m.value.kind == Value::Kind::String) append_quote_doubled(out, m.value.text);
  else append_value_text(out, m.value);
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
