#include "analysis/arch.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>

#include <fmt/format.h>

#include "util/data_value.h"

namespace keet::analysis {
namespace {

using Data = DataValue;

// The tables are our own compiled-in data; a missing one reads as empty
// (tests catch that) rather than throwing.
Data cc_table() { return compiled_data("arch/compute_capabilities.json").value_or(Data()); }
Data gpu_table() { return compiled_data("arch/gpus.json").value_or(Data()); }

// The integer limits of an architecture (data/arch/compute_capabilities.json), each with its value when absent.
struct ArchIntField {
  const char* key;
  int ArchSpec::*field;
  int fallback;
};
constexpr ArchIntField kArchIntFields[] = {
    {"warp_size", &ArchSpec::warp_size, 32},
    {"max_warps_per_sm", &ArchSpec::max_warps_per_sm, 0},
    {"max_threads_per_sm", &ArchSpec::max_threads_per_sm, 0},
    {"max_blocks_per_sm", &ArchSpec::max_blocks_per_sm, 0},
    {"max_threads_per_block", &ArchSpec::max_threads_per_block, 0},
    {"registers_per_sm", &ArchSpec::registers_per_sm, 0},
    {"max_registers_per_block", &ArchSpec::max_registers_per_block, 0},
    {"max_registers_per_thread", &ArchSpec::max_registers_per_thread, 0},
    {"register_allocation_unit", &ArchSpec::register_allocation_unit, 256},
    {"warp_schedulers_per_sm", &ArchSpec::warp_schedulers_per_sm, 4},
    {"shared_memory_per_sm", &ArchSpec::shared_memory_per_sm, 0},
    {"max_shared_memory_per_block", &ArchSpec::max_shared_memory_per_block, 0},
    {"max_shared_memory_per_block_optin", &ArchSpec::max_shared_memory_per_block_optin, 0},
    {"shared_memory_allocation_unit", &ArchSpec::shared_memory_allocation_unit, 128},
    {"reserved_shared_memory_per_block", &ArchSpec::reserved_shared_memory_per_block, 0},
    {"fp32_lanes_per_sm", &ArchSpec::fp32_lanes_per_sm, 0},
};

ArchSpec arch_from_json(Data j) {
  ArchSpec a;
  a.cc = parse_cc(member_or<std::string>(j, "cc", "")).value_or(ComputeCapability{});
  a.architecture = member_or<std::string>(j, "architecture", "");
  a.chip = member_or<std::string>(j, "chip", "");
  a.confidence = member_or<std::string>(j, "confidence", "");
  for (const auto& f : kArchIntFields) a.*f.field = member_or(j, f.key, f.fallback);
  a.register_allocation_granularity = member_or<std::string>(j, "register_allocation_granularity", "warp");
  a.shared_memory_carveouts_kb = member_or(j, "shared_memory_carveouts_kb", std::vector<int>{});
  a.fp32_to_fp64_ratio = member_or(j, "fp32_to_fp64_ratio", 0.0);
  const Data tc = member_or(j, "tensor_cores", Data());
  a.tensor_core_generation = member_or(tc, "generation", 0);
  a.tensor_cores_per_sm = member_or(tc, "per_sm", 0);
  a.tensor_types = member_or(tc, "types", std::vector<std::string>{});
  const Data features = member_or(j, "features", Data());
  for (auto [k, v] : features.items())
    if (v.is_bool()) a.features[std::string(k)] = v.boolean();
  return a;
}

GpuProduct gpu_from_json(Data j) {
  GpuProduct g;
  g.name = member_or<std::string>(j, "name", "");
  g.match = member_or(j, "match", std::vector<std::string>{});
  g.cc = member_or<std::string>(j, "cc", "");
  g.sm_count = member_or(j, "sm_count", 0);
  g.boost_clock_mhz = member_or(j, "boost_clock_mhz", 0.0);
  g.dram_bandwidth_gbs = member_or(j, "dram_bandwidth_gbs", 0.0);
  g.memory = member_or<std::string>(j, "memory", "");
  g.fp32_tflops = member_or(j, "fp32_tflops", 0.0);
  g.fp64_tflops = member_or(j, "fp64_tflops", 0.0);
  if (auto it = j.find("fp16_tensor_tflops"); it && it->is_number()) g.fp16_tensor_tflops = it->number();
  g.derived = member_or(j, "derived", false);
  return g;
}

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// `needle` occurs in `hay` with no letter or digit right before or after it.
bool contains_token(const std::string& hay, const std::string& needle) {
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) {
    size_t end = pos + needle.size();
    bool left = pos == 0 || !is_word_char(hay[pos - 1]);
    bool right = end == hay.size() || !is_word_char(hay[end]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::string ComputeCapability::text() const { return fmt::format("{}.{}", major, minor); }

std::optional<ComputeCapability> parse_cc(std::string_view s) {
  if (s.starts_with("sm_") || s.starts_with("SM_")) s.remove_prefix(3);
  while (!s.empty() && std::isalpha(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);  // sm_90a
  if (auto dot = s.find('.'); dot != std::string_view::npos) {
    auto major = to_int(s.substr(0, dot)), minor = to_int(s.substr(dot + 1));
    if (!major || !minor || *major <= 0 || *minor < 0) return std::nullopt;
    return ComputeCapability{*major, *minor};
  }
  auto n = to_int(s);
  if (!n || *n < 10) return std::nullopt;
  return ComputeCapability{*n / 10, *n % 10};
}

bool ArchSpec::has(std::string_view feature) const {
  if (feature == "tensor_cores") return tensor_core_generation > 0;  // the table's tensor_cores row says it
  auto it = features.find(feature);
  return it != features.end() && it->second;
}

const std::vector<ArchSpec>& compute_capabilities() {
  static const std::vector<ArchSpec> rows = [] {
    std::vector<ArchSpec> out;
    for (auto j : member_or(cc_table(), "compute_capabilities", Data())) out.push_back(arch_from_json(j));
    std::ranges::sort(out, {}, &ArchSpec::cc);
    return out;
  }();
  return rows;
}

const std::vector<GpuProduct>& gpu_products() {
  static const std::vector<GpuProduct> rows = [] {
    std::vector<GpuProduct> out;
    for (auto j : member_or(gpu_table(), "gpus", Data())) out.push_back(gpu_from_json(j));
    return out;
  }();
  return rows;
}

const std::vector<std::string>& arch_sources() {
  static const std::vector<std::string> rows = [] {
    auto out = member_or(cc_table(), "sources", std::vector<std::string>{});
    for (auto& s : member_or(gpu_table(), "sources", std::vector<std::string>{})) out.push_back(std::move(s));
    return out;
  }();
  return rows;
}

const ArchSpec* find_arch(std::string_view cc) {
  auto parsed = parse_cc(cc);
  if (!parsed) return nullptr;
  for (const auto& a : compute_capabilities())
    if (a.cc == *parsed) return &a;
  return nullptr;
}

ArchLookup lookup_arch(std::string_view cc) {
  auto parsed = parse_cc(cc);
  if (!parsed) return {nullptr, fmt::format("compute capability '{}' is not of the form 8.6", cc)};
  const ArchSpec* best = nullptr;
  for (const auto& a : compute_capabilities())
    if (a.cc <= *parsed) best = &a;  // rows are sorted ascending
  if (!best)
    return {nullptr, fmt::format("compute capability {} is older than every known architecture", parsed->text())};
  if (best->cc == *parsed) return {best, ""};
  return {best, fmt::format("compute capability {} is not in the architecture table; using the limits of {} ({}), "
                            "the nearest older one",
                            parsed->text(), best->cc.text(), best->architecture)};
}

const GpuProduct* find_gpu(std::string_view display_name) {
  const std::string hay = lower(display_name);
  const GpuProduct* best = nullptr;
  size_t best_len = 0;
  for (const auto& g : gpu_products())
    for (const auto& m : g.match)
      if (m.size() > best_len && contains_token(hay, lower(m))) best = &g, best_len = m.size();
  return best;
}

}  // namespace keet::analysis

// ---- effective device spec --------------------------------------------------

namespace keet::analysis {
namespace {

constexpr std::string_view kAttrPrefix = "device__attribute_";

// The attributes a device spec reads, found where they are instead of copied
// into one map for every kernel (that copy was a tenth of analyze on a report
// of many kernels). Precedence as the merged map had it: the kernel's own
// device__attribute_* metrics, then the devices in reverse order of merging
// (each device the kernel ran on, after the session's first device).
struct Attributes {
  const model::Kernel* kernel = nullptr;
  std::vector<const std::map<std::string, model::Value>*> devices;  // in merge order

  const model::Value* exact(const std::string& key) const {
    if (kernel && key.starts_with(kAttrPrefix))
      if (const auto* m = kernel->find(key)) return &m->value;
    for (auto d = devices.rbegin(); d != devices.rend(); ++d)
      if (auto it = (*d)->find(key); it != (*d)->end()) return &it->second;
    return nullptr;
  }
  // `name` as given, else with the device__attribute_ prefix.
  const model::Value* find(std::string_view name) const {
    std::string key(name);
    if (const auto* v = exact(key)) return v;
    return exact(std::string(kAttrPrefix) + key);
  }
};

std::optional<double> attr_number(const Attributes& a, std::string_view name) {
  const auto* v = a.find(name);
  return v ? v->as_number() : std::nullopt;
}

std::string attr_text(const Attributes& a, std::string_view name) {
  const auto* v = a.find(name);
  return v ? v->text : std::string();
}

// Report attribute -> the ArchSpec field it overrides. A row per attribute
// instead of a chain of ifs; the first present name of a row wins.
struct ArchOverride {
  std::vector<std::string_view> attributes;
  std::string field;
  std::function<void(ArchSpec&, double)> set;
};

const std::vector<ArchOverride>& arch_overrides() {
  auto int_field = [](int ArchSpec::*f) { return [f](ArchSpec& a, double v) { a.*f = static_cast<int>(v); }; };
  static const std::vector<ArchOverride> rows = {
      {{"max_warps_per_multiprocessor"}, "max_warps_per_sm", int_field(&ArchSpec::max_warps_per_sm)},
      {{"max_threads_per_multiprocessor"}, "max_threads_per_sm", int_field(&ArchSpec::max_threads_per_sm)},
      {{"max_blocks_per_multiprocessor", "limits_max_cta_per_sm"},
       "max_blocks_per_sm",
       int_field(&ArchSpec::max_blocks_per_sm)},
      {{"max_threads_per_block"}, "max_threads_per_block", int_field(&ArchSpec::max_threads_per_block)},
      {{"max_registers_per_multiprocessor"}, "registers_per_sm", int_field(&ArchSpec::registers_per_sm)},
      {{"max_registers_per_block"}, "max_registers_per_block", int_field(&ArchSpec::max_registers_per_block)},
      {{"max_registers_per_thread"}, "max_registers_per_thread", int_field(&ArchSpec::max_registers_per_thread)},
      {{"num_schedulers_per_multiprocessor"}, "warp_schedulers_per_sm", int_field(&ArchSpec::warp_schedulers_per_sm)},
      {{"max_shared_memory_per_multiprocessor"}, "shared_memory_per_sm", int_field(&ArchSpec::shared_memory_per_sm)},
      {{"max_shared_memory_per_block"},
       "max_shared_memory_per_block",
       int_field(&ArchSpec::max_shared_memory_per_block)},
      {{"max_shared_memory_per_block_optin"},
       "max_shared_memory_per_block_optin",
       int_field(&ArchSpec::max_shared_memory_per_block_optin)},
      {{"reserved_shared_memory_per_block"},
       "reserved_shared_memory_per_block",
       int_field(&ArchSpec::reserved_shared_memory_per_block)},
      {{"warp_size"}, "warp_size", int_field(&ArchSpec::warp_size)},
      {{"single_to_double_precision_perf_ratio"},
       "fp32_to_fp64_ratio",
       [](ArchSpec& a, double v) { a.fp32_to_fp64_ratio = v; }},
  };
  return rows;
}

void apply_overrides(DeviceSpec& d, const Attributes& attrs) {
  for (const auto& row : arch_overrides()) {
    std::optional<double> v;
    for (auto name : row.attributes)
      if (!v) v = attr_number(attrs, name);
    if (v && *v > 0) {
      row.set(d.arch, *v);
      d.origin.emplace_back(row.field, "report");
    } else if (d.known()) {
      d.origin.emplace_back(row.field, "table");
    }
  }
}

std::optional<ComputeCapability> cc_of(const Attributes& attrs, const GpuProduct* product) {
  auto major = attr_number(attrs, "compute_capability_major");
  auto minor = attr_number(attrs, "compute_capability_minor");
  if (major && minor) return ComputeCapability{static_cast<int>(*major), static_cast<int>(*minor)};
  if (product) return parse_cc(product->cc);
  return std::nullopt;
}

// A value from the report when present, else from the product table, else 0;
// records where it came from.
double pick(DeviceSpec& d, const char* field, std::optional<double> report, double table) {
  if (report && *report > 0) {
    d.origin.emplace_back(field, "report");
    return *report;
  }
  if (table > 0) {
    d.origin.emplace_back(field, "table");
    return table;
  }
  d.notes.push_back(fmt::format("{} is unknown (neither the report nor the product table has it)", field));
  return 0;
}

std::optional<double> scaled(std::optional<double> v, double factor) {
  if (!v) return std::nullopt;
  return *v * factor;
}

void fill_throughput(DeviceSpec& d, const Attributes& attrs) {
  const GpuProduct* p = d.product;
  d.sm_count = static_cast<int>(pick(d, "sm_count", attr_number(attrs, "multiprocessor_count"), p ? p->sm_count : 0));
  d.clock_mhz = pick(d, "clock_mhz", scaled(attr_number(attrs, "clock_rate"), 1e-3), p ? p->boost_clock_mhz : 0);
  d.memory_clock_mhz = pick(d, "memory_clock_mhz", scaled(attr_number(attrs, "memory_clock_rate"), 1e-3), 0);
  d.bus_width_bits = static_cast<int>(pick(d, "bus_width_bits", attr_number(attrs, "global_memory_bus_width"), 0));
  // Double data rate: bytes/s = 2 * memory clock * bus width / 8 (holds for
  // GDDR5/6/6X/7 and HBM as the driver reports their clocks).
  std::optional<double> bw;
  if (d.memory_clock_mhz > 0 && d.bus_width_bits > 0) bw = 2 * d.memory_clock_mhz * d.bus_width_bits / 8 / 1000;
  d.dram_bandwidth_gbs = pick(d, "dram_bandwidth_gbs", bw, p ? p->dram_bandwidth_gbs : 0);
  std::optional<double> fp32;  // FMA = 2 flops per lane per clock
  if (d.sm_count > 0 && d.clock_mhz > 0 && d.arch.fp32_lanes_per_sm > 0)
    fp32 = 2.0 * d.sm_count * d.arch.fp32_lanes_per_sm * d.clock_mhz / 1000;
  d.fp32_peak_gflops = pick(d, "fp32_peak_gflops", fp32, p ? p->fp32_tflops * 1000 : 0);
  std::optional<double> fp64;
  if (fp32 && d.arch.fp32_to_fp64_ratio > 0) fp64 = *fp32 / d.arch.fp32_to_fp64_ratio;
  d.fp64_peak_gflops = pick(d, "fp64_peak_gflops", fp64, p ? p->fp64_tflops * 1000 : 0);
  if (p && p->fp16_tensor_tflops) d.fp16_tensor_peak_gflops = *p->fp16_tensor_tflops * 1000;
}

void fill_arch(DeviceSpec& d, std::optional<ComputeCapability> cc) {
  if (!cc) {
    d.notes.push_back("compute capability unknown: the report has no device__attribute_compute_capability_major/minor");
    return;
  }
  auto found = lookup_arch(cc->text());
  if (!found.note.empty()) d.notes.push_back(found.note);
  if (found.spec) d.arch = *found.spec;
  d.arch.cc = *cc;  // the device's own CC, even when the limits come from an older row
}

DeviceSpec spec_from(const Attributes& attrs) {
  DeviceSpec d;
  d.name = attr_text(attrs, "display_name");
  d.product = d.name.empty() ? nullptr : find_gpu(d.name);
  fill_arch(d, cc_of(attrs, d.product));
  apply_overrides(d, attrs);
  fill_throughput(d, attrs);
  return d;
}

}  // namespace

DeviceSpec device_spec_from(const std::map<std::string, model::Value>& attributes) {
  Attributes attrs;
  attrs.devices.push_back(&attributes);
  return spec_from(attrs);
}

DeviceSpec device_spec(const model::Report& report, const model::Kernel& kernel) {
  Attributes attrs;
  attrs.kernel = &kernel;
  auto device_id = kernel.number("launch__device_id").value_or(0);
  for (const auto& dev : report.session.devices)
    if (dev.id == device_id || attrs.devices.empty()) attrs.devices.push_back(&dev.attributes);
  return spec_from(attrs);
}

DeviceSpec device_spec_for_cc(std::string_view cc, std::string_view product) {
  std::map<std::string, model::Value> attrs;
  if (!product.empty()) attrs["display_name"] = model::Value::of_string(std::string(product));
  if (auto parsed = parse_cc(cc)) {
    attrs["compute_capability_major"] = model::Value::of_uint(parsed->major);
    attrs["compute_capability_minor"] = model::Value::of_uint(parsed->minor);
  }
  auto d = device_spec_from(attrs);
  if (!parse_cc(cc)) d.notes.insert(d.notes.begin(), fmt::format("'{}' is not a compute capability such as 8.6", cc));
  return d;
}

}  // namespace keet::analysis
