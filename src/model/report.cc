#include "model/report.h"

#include <cctype>

#include <fmt/format.h>

namespace keet::model {

Value Value::of_double(double v) { return {Kind::Double, v, 0, {}}; }
Value Value::of_float(float v) { return {Kind::Float, static_cast<double>(v), 0, {}}; }
Value Value::of_uint(uint64_t v, bool is32) {
  return {is32 ? Kind::Uint32 : Kind::Uint64, static_cast<double>(v), v, {}};
}
Value Value::of_string(std::string v) { return {Kind::String, 0, 0, std::move(v)}; }

Blob::Blob(std::string_view bytes, std::shared_ptr<const void> owner) {
  if (bytes.empty()) return;
  if (owner == nullptr) {
    auto copy = std::make_shared<const std::string>(bytes);
    view_ = *copy;
    owner_ = std::move(copy);
    copy_ = true;
    return;
  }
  owner_ = std::move(owner);
  view_ = bytes;
}

InstanceList InstanceList::lazy(std::shared_ptr<const std::string> owner, std::string_view bytes, uint32_t count,
                                Decoder decode) {
  InstanceList l;
  l.owner_ = std::move(owner);
  l.raw_ = bytes;
  l.pending_ = count;
  l.decode_ = decode;
  return l;
}

void InstanceList::decode() const {
  items_.clear();
  items_.reserve(pending_);
  decode_(raw_, items_);
  pending_ = 0;
}

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
  for (size_t i = 0; i < metrics.size(); ++i) {
    size_t hash = std::hash<std::string_view>{}(metrics[i].name);
    auto& slot = index_.slots[probe(metrics[i].name, hash)];
    if (slot.position == 0) slot = {static_cast<uint32_t>(i + 1), hash_tag(hash)};  // else the first one wins
  }
  index_.indexed = metrics.size();
}

// The slot holding `name`, or the empty slot where it would go (the table is
// at most half full, so there always is one).
size_t Kernel::probe(std::string_view name, size_t hash) const {
  size_t mask = index_.slots.size() - 1;
  size_t at = hash & mask;
  for (;; at = (at + 1) & mask) {
    const auto& slot = index_.slots[at];
    if (slot.position == 0) return at;
    if (slot.hash == hash_tag(hash) && metrics[slot.position - 1].name == name) return at;
  }
}

const Metric* Kernel::find_hashed(std::string_view name, size_t hash) const {
  if (index_.indexed != metrics.size() || index_.slots.empty()) build_index();
  const auto& slot = index_.slots[probe(name, hash)];
  return slot.position == 0 ? nullptr : &metrics[slot.position - 1];
}

const Metric* Kernel::find(const MetricName& name) const { return find_hashed(name.name, name.hash); }

const Metric* Kernel::find(std::string_view name) const {
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
  // The chosen name first, then the readable ones before the mangled one.
  const std::string* order[3] = {&demangled, &function, &mangled};
  if (shown == NameBase::Function) order[0] = &function, order[1] = &demangled;
  if (shown == NameBase::Mangled) order[0] = &mangled, order[1] = &demangled, order[2] = &function;
  for (const std::string* name : order)
    if (!name->empty()) return *name;
  return mangled;
}

std::string KernelIdentity::launch_text() const {
  return fmt::format("grid ({}, {}, {}) block ({}, {}, {})", grid.x, grid.y, grid.z, block.x, block.y, block.z);
}

bool KernelIdentity::same_function(const KernelIdentity& other) const {
  if (!mangled.empty() && !other.mangled.empty()) return mangled == other.mangled;
  return display == other.display;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::NcuRep:
      return "ncu-rep";
    case Format::NcuCsvRaw:
      return "ncu-csv";
    case Format::NcuCsvDetails:
      return "ncu-csv";
    case Format::NvprofCsv:
      return "nvprof-csv";
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
