// GPU architecture facts: per-compute-capability SM limits and per-product
// peaks, loaded from data/arch/*.json, plus the effective device spec of a
// profiled kernel, where the report's device__attribute_* values always win
// over the tables.
#pragma once
#include <compare>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

struct ComputeCapability {
  int major = 0, minor = 0;
  std::string text() const;  // "8.6"
  auto operator<=>(const ComputeCapability&) const = default;
};
// Accepts "8.6", "86", "sm_86", "sm_90a", "10.0", "100" (three digits = major 10+).
std::optional<ComputeCapability> parse_cc(std::string_view s);

// One row of data/arch/compute_capabilities.json (sizes in bytes).
struct ArchSpec {
  ComputeCapability cc;
  std::string architecture;  // "Ampere"
  std::string chip;
  std::string confidence;  // "datasheet" | "inferred"
  int warp_size = 32;
  int max_warps_per_sm = 0, max_threads_per_sm = 0, max_blocks_per_sm = 0, max_threads_per_block = 0;
  int registers_per_sm = 0, max_registers_per_block = 0, max_registers_per_thread = 0;
  int register_allocation_unit = 256;
  std::string register_allocation_granularity = "warp";
  int warp_schedulers_per_sm = 4;
  int shared_memory_per_sm = 0, max_shared_memory_per_block = 0, max_shared_memory_per_block_optin = 0;
  int shared_memory_allocation_unit = 128;
  std::vector<int> shared_memory_carveouts_kb;
  int reserved_shared_memory_per_block = 0;
  int fp32_lanes_per_sm = 0;
  double fp32_to_fp64_ratio = 0;
  int tensor_core_generation = 0, tensor_cores_per_sm = 0;
  std::vector<std::string> tensor_types;
  std::map<std::string, bool, std::less<>> features;

  bool has(std::string_view feature) const;  // false when unknown
};

// One row of data/arch/gpus.json.
struct GpuProduct {
  std::string name;
  std::vector<std::string> match;  // substrings of a device's display name
  std::string cc;
  int sm_count = 0;
  double boost_clock_mhz = 0, dram_bandwidth_gbs = 0;
  std::string memory;
  double fp32_tflops = 0, fp64_tflops = 0;
  std::optional<double> fp16_tensor_tflops;
  bool derived = false;
};

const std::vector<ArchSpec>& compute_capabilities();
const std::vector<GpuProduct>& gpu_products();
const std::vector<std::string>& arch_sources();  // "sources" of both tables

// Exact lookup ("8.6"); nullptr when the table has no such row.
const ArchSpec* find_arch(std::string_view cc);

// Exact row, or the nearest older known one with a note saying so; nullptr
// (with a note) only when `cc` is unparsable or older than every row.
struct ArchLookup {
  const ArchSpec* spec = nullptr;
  std::string note;  // empty on an exact match
};
ArchLookup lookup_arch(std::string_view cc);

// Product whose match string occurs in `display_name` as a whole token
// (longest match wins: "RTX 2060 SUPER" before "RTX 2060", "A10G" not "A10").
const GpuProduct* find_gpu(std::string_view display_name);

// The device a kernel ran on, as the analysis should see it: table values
// overridden field by field by the report's device attributes.
struct DeviceSpec {
  std::string name;
  ArchSpec arch;                        // limits after overrides
  const GpuProduct* product = nullptr;  // vendor peaks, when the name is known
  int sm_count = 0;
  double clock_mhz = 0;  // SM clock used for peaks
  double memory_clock_mhz = 0;
  int bus_width_bits = 0;
  double dram_bandwidth_gbs = 0;
  double fp32_peak_gflops = 0;
  double fp64_peak_gflops = 0;
  std::optional<double> fp16_tensor_peak_gflops;
  // "field: report" / "field: table" for every value set, in order.
  std::vector<std::pair<std::string, std::string>> origin;
  std::vector<std::string> notes;  // fallbacks and missing values
  bool known() const { return arch.cc.major != 0; }
};

// Attribute lookup order: the kernel's device__attribute_* metrics, then the
// session's device record.
DeviceSpec device_spec(const model::Report& report, const model::Kernel& kernel);
// Same, from a bare attribute map (names without or with the
// "device__attribute_" prefix); used by tests and by device_spec.
DeviceSpec device_spec_from(const std::map<std::string, model::Value>& attributes);
// A device from the tables only ("8.6", optional product name).
DeviceSpec device_spec_for_cc(std::string_view cc, std::string_view product = {});

}  // namespace keet::analysis
