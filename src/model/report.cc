#include "model/report.h"

#include <cctype>

namespace keet::model {

Value Value::of_double(double v) { return {Kind::Double, v, 0, {}}; }
Value Value::of_float(float v) { return {Kind::Float, static_cast<double>(v), 0, {}}; }
Value Value::of_uint(uint64_t v, bool is32) {
  return {is32 ? Kind::Uint32 : Kind::Uint64, static_cast<double>(v), v, {}};
}
Value Value::of_string(std::string v) { return {Kind::String, 0, 0, std::move(v)}; }

std::optional<double> Value::as_number() const {
  if (!is_number()) return std::nullopt;
  return number;
}

namespace {

uint32_t hash_tag(size_t hash) { return static_cast<uint32_t>(hash >> 32); }

}  // namespace

void Kernel::build_index() const {
  size_t capacity = 16;
  while (capacity < 2 * metrics.size()) capacity *= 2;
  index_.slots.assign(capacity, {});
  size_t mask = capacity - 1;
  for (size_t i = 0; i < metrics.size(); ++i) {
    size_t hash = std::hash<std::string_view>{}(metrics[i].name);
    if (find_hashed(metrics[i].name, hash)) continue;  // the first one wins
    size_t at = hash & mask;
    while (index_.slots[at].position != 0) at = (at + 1) & mask;
    index_.slots[at] = {static_cast<uint32_t>(i + 1), hash_tag(hash)};
  }
  index_.indexed = metrics.size();
}

const Metric* Kernel::find_hashed(std::string_view name, size_t hash) const {
  size_t mask = index_.slots.size() - 1;
  for (size_t at = hash & mask;; at = (at + 1) & mask) {
    const auto& slot = index_.slots[at];
    if (slot.position == 0) return nullptr;
    const Metric& m = metrics[slot.position - 1];
    if (slot.hash == hash_tag(hash) && m.name == name) return &m;
  }
}

const Metric* Kernel::find(const MetricName& name) const {
  if (index_.indexed != metrics.size() || index_.slots.empty()) build_index();
  return find_hashed(name.name, name.hash);
}

const Metric* Kernel::find(std::string_view name) const {
  if (index_.indexed != metrics.size() || index_.slots.empty()) build_index();
  return find_hashed(name, std::hash<std::string_view>{}(name));
}

std::optional<double> Kernel::number(std::string_view name) const {
  const Metric* m = find(name);
  return m ? m->value.as_number() : std::nullopt;
}

std::optional<double> Kernel::number(const MetricName& name) const {
  const Metric* m = find(name);
  return m ? m->value.as_number() : std::nullopt;
}

std::optional<std::string> Kernel::text(std::string_view name) const {
  const Metric* m = find(name);
  if (m == nullptr || m->value.kind != Value::Kind::String) return std::nullopt;
  return m->value.text;
}

const std::string& Kernel::display_name() const {
  if (!demangled.empty()) return demangled;
  if (!function.empty()) return function;
  return mangled;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::NcuRep: return "ncu-rep";
    case Format::NcuCsvRaw: return "ncu-csv";
    case Format::NcuCsvDetails: return "ncu-csv";
    case Format::NvprofCsv: return "nvprof-csv";
  }
  return "unknown";
}

// The first "2021.2.2.0"-like token: writers put it after a product name
// ("Nsight Compute Target 2022.1.1.0") or before a build note
// ("2021.2.2.0 (build 30282580) (public-release)").
static std::string version_token(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || (i > 0 && text[i - 1] != ' ')) continue;
    size_t end = text.find(' ', i);
    std::string token = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (token.find('.') != std::string::npos) return token;
  }
  return {};
}

std::string Report::ncu_version() const {
  for (const auto& [provider, version] : session.versions)
    if (provider.find("Nsight Compute") != std::string::npos) return version_token(version);
  return {};
}

const Module* Report::module_for(const Kernel& k) const {
  if (!k.source_ref) return nullptr;
  auto it = modules.find(*k.source_ref);
  return it == modules.end() ? nullptr : &it->second;
}

}  // namespace keet::model
