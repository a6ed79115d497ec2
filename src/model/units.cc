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

using namespace units_data;                        // generated from data/metrics/units.json at build time
using BaseScale = std::pair<std::string, double>;  // base unit, factor

// The generator sorts keyed tables, so lookups are binary searches.
template <typename Entry, size_t N>
const Entry* find_key(const Entry (&table)[N], std::string_view key) {
  auto it = std::lower_bound(std::begin(table), std::end(table), key,
                             [](const Entry& e, std::string_view k) { return e.key < k; });
  return it != std::end(table) && it->key == key ? it : nullptr;
}

// The first entry of [first, last) whose key is not below `key`, searched
// from `first` outward (1, 2, 4... entries, then a binary search): for a
// sorted run of keys, each costs a few comparisons instead of a whole search.
template <typename Entry>
const Entry* gallop(const Entry* first, const Entry* last, std::string_view key) {
  size_t step = 1;
  const Entry* lo = first;
  while (lo + step < last && lo[step].key < key) lo += step, step *= 2;
  const Entry* hi = lo + step < last ? lo + step + 1 : last;
  return std::lower_bound(lo, hi, key, [](const Entry& e, std::string_view k) { return e.key < k; });
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
  if (std::isnan(d))
    out += "nan";
  else if (std::isinf(d))
    out += d > 0 ? "inf" : "-inf";
  else if (d == 0)
    out += '0';
  else if (d == std::floor(d))
    append_fixed(out, d, 0);
  else
    append_fixed(out, d, 2);
}

// "Mbyte" -> byte x 1e6; "Kinst" -> inst x 1e3; base words map to themselves.
BaseScale scale_numerator(std::string_view u) {
  if (const auto* n = find_key(kNumerator, u)) return BaseScale{std::string(n->base), n->factor};
  if (u.size() > 1) {
    const auto* p = find_key(kCountPrefixes, u.substr(0, 1));
    if (p && std::islower(static_cast<unsigned char>(u[1]))) return BaseScale{std::string(u.substr(1)), p->factor};
  }
  return BaseScale{std::string(u), 1.0};  // a base unit, or one KEET does not scale
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
  return chip_has_units_cc(*major * 10 + *minor);
}

bool chip_has_units_cc(double cc) { return cc >= kMinCc && cc <= kMaxCc; }

std::string unit_of(std::string_view metric, bool chip_has_units) {
  if (chip_has_units) return unit_of(metric);
  const auto* u = find_key(kChipIndependent, metric);
  return u ? std::string(u->value) : "";
}

std::string unit_of(std::string_view metric, const Kernel& k) { return unit_of(metric, chip_has_units(k)); }

std::vector<std::string> units_of(const std::vector<std::string>& metrics, bool chip_has_units) {
  std::vector<std::string> units;
  units.reserve(metrics.size());
  if (!chip_has_units) {
    for (const auto& name : metrics) units.push_back(unit_of(name, false));
    return units;
  }
  const auto* at = std::begin(kUnits);
  std::string_view previous;
  for (const auto& name : metrics) {
    if (name < previous) at = std::begin(kUnits);  // out of order: search from the start again
    previous = name;
    at = gallop(at, std::end(kUnits), name);
    // As unit_of(name): the chip table, the chip-independent one, the rules.
    if (at != std::end(kUnits) && at->key == name)
      units.emplace_back(at->value);
    else if (const auto* u = find_key(kChipIndependent, name))
      units.emplace_back(u->value);
    else
      units.push_back(unit_by_rules(name));
  }
  return units;
}

namespace {

// ncu's raw page leaves the cell of a value-less metric that has a list empty.
bool blank_cell(const Metric& m) { return m.value.empty() && (m.listed || !m.instances.empty()); }

void append_value_text(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      out += "no data";
      return;
    case Value::Kind::String:
      out += v.text;
      return;
    case Value::Kind::Uint64:
    case Value::Kind::Uint32:
      append_uint_text(out, v.integer);
      return;
    case Value::Kind::Double:
    case Value::Kind::Float:
      append_double_text(out, v.number);
      return;
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
  if (m.value.kind == Value::Kind::String)
    append_quote_doubled(out, m.value.text);
  else
    append_value_text(out, m.value);
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

namespace keet::model {
namespace {

struct Prefix {
  std::string_view name;
  double factor;
};
constexpr Prefix kBytePrefixes[] = {{"", 1}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
constexpr Prefix kDurations[] = {{"nsecond", 1}, {"usecond", 1e3}, {"msecond", 1e6}, {"second", 1e9}};
// Per-second rates of counts: ncu moves to a shorter time instead of a prefix.
constexpr Prefix kPerTime[] = {{"second", 1}, {"msecond", 1e3}, {"usecond", 1e6}, {"nsecond", 1e9}};

// The largest step the magnitude reaches (at least the first).
template <size_t N>
const Prefix& step_for(const Prefix (&steps)[N], double magnitude) {
  const Prefix* best = &steps[0];
  for (const auto& s : steps)
    if (magnitude >= s.factor) best = &s;
  return *best;
}

std::string with_thousands(double integral) {
  std::string digits = fmt::format("{:.0f}", std::fabs(integral)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (integral < 0 ? "-" : "") + out;
}

}  // namespace

std::optional<PrintUnits> parse_print_units(std::string_view name) {
  if (name == "base") return PrintUnits::Base;
  if (name == "auto") return PrintUnits::Auto;
  return std::nullopt;
}

Scale auto_scale(std::string_view unit, double magnitude) {
  magnitude = std::fabs(magnitude);
  if (magnitude == 0) return {std::string(unit), 1, true};
  if (std::isnan(magnitude) || std::isinf(magnitude)) return {std::string(unit), 1};
  if (unit == "nsecond") {
    const auto& d = step_for(kDurations, magnitude);
    return {std::string(d.name), d.factor};
  }
  if (auto at = unit.find("byte"); at != std::string_view::npos && (at == 0 || unit[at - 1] == '/')) {
    const auto& p = step_for(kBytePrefixes, magnitude);  // ncu prefixes the byte word, wherever it is
    return {std::string(unit.substr(0, at)) + std::string(p.name) + std::string(unit.substr(at)), p.factor};
  }
  if (unit.ends_with("/second")) {
    const auto& t = step_for(kPerTime, magnitude);
    return {std::string(unit.substr(0, unit.size() - 6)) + std::string(t.name), t.factor};
  }
  return {std::string(unit), 1};
}

std::string auto_value_text(double base_value, const Scale& s) {
  double v = base_value / s.factor;
  // NaN counters as ncu 2022.3 --print-units auto prints them (seen on the
  // fixtures): "0.000000" in a column whose other values are all 0, printf's
  // "%f" of the NaN (sign included: "-nan") in a scaled column, else "nan".
  if (std::isnan(v)) {
    if (s.zero_column) return "0.000000";
    if (s.factor != 1) return std::signbit(v) ? "-nan" : "nan";
    return "nan";
  }
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6f}", v);
}

std::string readable_duration(double ns) {
  double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string readable(double v, std::string_view unit) {
  if (std::isnan(v)) return "nan";
  if (unit == "nsecond" || unit == "ns") return readable_duration(v);  // "ns": the quantity catalogue's spelling
  if (unit == "usecond") return readable_duration(v * 1e3);
  if (unit == "msecond") return readable_duration(v * 1e6);
  if (unit == "second") return readable_duration(v * 1e9);
  if (unit == "%") return fmt::format("{:.2f}%", v);
  if (unit == "byte" || unit == "byte/second") {
    const auto& p = step_for(kBytePrefixes, std::fabs(v));
    std::string number = p.factor == 1 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v / p.factor);
    return number + " " + std::string(p.name) + (unit == "byte" ? "B" : "B/s");
  }
  // Never an exponent: large values in full, others to four significant digits.
  bool integral = std::fabs(v - std::round(v)) < 1e-9 || std::fabs(v) >= 1000;
  std::string number = integral && std::fabs(v) < 1e18 ? with_thousands(std::round(v)) : fmt::format("{:.4g}", v);
  return unit.empty() ? number : number + " " + std::string(unit);
}

}  // namespace keet::model
