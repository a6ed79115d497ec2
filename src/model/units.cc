#include "model/units.h"

#include <cmath>
#include <iterator>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/embedded_data.h"

namespace keet::model {
namespace {

using Scale = std::pair<std::string, double>;  // base unit, factor

// data/metrics/units.json, parsed once.
struct UnitTable {
  int min_cc = 0, max_cc = 0;
  std::unordered_map<std::string, std::string> units, chip_independent;
  std::vector<std::string> percent_markers;
  std::vector<std::pair<std::string, std::string>> counter_words, rate_suffixes;
  std::unordered_map<std::string, Scale> numerator, denominator;
  std::unordered_map<std::string, double> count_prefixes;
};

template <typename Map>
void fill_map(const nlohmann::json& j, Map& out) {
  for (const auto& [k, v] : j.items())
    if (!k.starts_with("_")) out.emplace(k, v.template get<typename Map::mapped_type>());
}

UnitTable parse_table() {
  UnitTable t;
  auto text = embedded_file("metrics/units.json");
  auto j = nlohmann::json::parse(text.value_or("{}"), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return t;  // the build embeds it; a broken file means rules only
  t.min_cc = j["supported_compute_capability"].value("min", 0);
  t.max_cc = j["supported_compute_capability"].value("max", 0);
  fill_map(j["units"], t.units);
  fill_map(j["chip_independent"], t.chip_independent);
  const auto& r = j["rules"];
  t.percent_markers = r["percent_markers"].get<std::vector<std::string>>();
  t.counter_words = r["counter_words"].get<decltype(t.counter_words)>();
  t.rate_suffixes = r["rate_suffixes"].get<decltype(t.rate_suffixes)>();
  const auto& s = j["scaled_units"];
  fill_map(s["numerator"], t.numerator);
  fill_map(s["denominator"], t.denominator);
  fill_map(s["count_prefixes"], t.count_prefixes);
  return t;
}

const UnitTable& table() {
  static const UnitTable t = parse_table();
  return t;
}

std::string counter_unit(std::string_view counter) {
  for (const auto& [word, unit] : table().counter_words)
    if (counter.find(word) != std::string_view::npos) return unit;
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
  const auto& t = table();
  if (auto it = t.numerator.find(std::string(u)); it != t.numerator.end()) return it->second;
  if (u.size() > 1) {
    auto p = t.count_prefixes.find(std::string(u.substr(0, 1)));
    if (p != t.count_prefixes.end() && std::islower(static_cast<unsigned char>(u[1])))
      return Scale{std::string(u.substr(1)), p->second};
  }
  return Scale{std::string(u), 1.0};  // a base unit, or one KEET does not scale
}

}  // namespace

std::string unit_by_rules(std::string_view metric) {
  for (const auto& m : table().percent_markers)
    if (metric.find(m) != std::string_view::npos) return "%";
  std::string base = counter_unit(metric.substr(0, metric.find('.')));
  if (base.empty()) return base;
  for (const auto& [suffix, add] : table().rate_suffixes)
    if (metric.ends_with(suffix)) return base + add;
  return base;
}

std::string unit_of(std::string_view metric) {
  const auto& t = table();
  if (auto it = t.units.find(std::string(metric)); it != t.units.end()) return it->second;
  if (auto it = t.chip_independent.find(std::string(metric)); it != t.chip_independent.end()) return it->second;
  return unit_by_rules(metric);
}

bool chip_has_units(const Kernel& k) {
  auto major = k.number("device__attribute_compute_capability_major");
  auto minor = k.number("device__attribute_compute_capability_minor");
  if (!major || !minor) return true;  // no way to tell: assume a chip ncu knows
  double cc = *major * 10 + *minor;
  return cc >= table().min_cc && cc <= table().max_cc;
}

std::string unit_of(std::string_view metric, const Kernel& k) {
  if (chip_has_units(k)) return unit_of(metric);
  auto it = table().chip_independent.find(std::string(metric));
  return it == table().chip_independent.end() ? "" : it->second;
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
  if (m.value.empty() && !m.instances.empty()) return "";
  return csv_value_text(m.name, m.value, !m.value.empty());
}

void append_csv_cell(std::string& out, const Metric& m) {
  const Value& v = m.value;
  if (v.empty() && !m.instances.empty()) return;
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
  auto den = table().denominator.find(std::string(unit.substr(slash + 1)));
  if (den == table().denominator.end()) {
    out.unit += std::string(unit.substr(slash));  // "inst/cycle": nothing to scale below the line
    return out;
  }
  out.value /= den->second.second;
  out.unit += "/" + den->second.first;
  return out;
}

}  // namespace keet::model
