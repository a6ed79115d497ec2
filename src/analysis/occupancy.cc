#include "analysis/occupancy.h"

#include "analysis/derived.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace keet::analysis {
namespace {

int ceil_div(int a, int b) { return b > 0 ? (a + b - 1) / b : 0; }
int round_up(int a, int unit) { return unit > 0 ? ceil_div(a, unit) * unit : a; }

int warp_limit(const ArchSpec& arch, const OccupancyInput& in, int warps_per_block, Occupancy& o) {
  if (in.block_size <= 0 || warps_per_block == 0) return 0;
  if (arch.max_threads_per_block > 0 && in.block_size > arch.max_threads_per_block) {
    o.notes.push_back(
        fmt::format("block of {} threads exceeds the maximum of {}", in.block_size, arch.max_threads_per_block));
    return 0;
  }
  return arch.max_warps_per_sm / warps_per_block;
}

// Registers are allocated per warp in units of register_allocation_unit, and
// each warp scheduler (SM sub-partition) owns an equal slice of the register
// file: a warp must fit in one slice.
int register_limit(const ArchSpec& arch, const OccupancyInput& in, int warps_per_block, Occupancy& o) {
  if (in.registers_per_thread <= 0) return arch.max_blocks_per_sm;
  o.registers_per_warp = round_up(in.registers_per_thread * arch.warp_size, arch.register_allocation_unit);
  if (in.registers_per_thread > arch.max_registers_per_thread ||
      (arch.max_registers_per_block > 0 && o.registers_per_warp * warps_per_block > arch.max_registers_per_block)) {
    o.notes.push_back(fmt::format("{} registers per thread do not fit one block", in.registers_per_thread));
    return 0;
  }
  int partitions = std::max(arch.warp_schedulers_per_sm, 1);
  int warps_per_partition = arch.registers_per_sm / partitions / o.registers_per_warp;
  return warps_per_partition * partitions / warps_per_block;
}

int shared_mem_limit(const ArchSpec& arch, const OccupancyInput& in, Occupancy& o) {
  int reserved = in.reserved_shared_mem.value_or(arch.reserved_shared_memory_per_block);
  o.shared_mem_allocated = round_up(in.shared_mem_per_block + reserved, arch.shared_memory_allocation_unit);
  o.shared_mem_config = in.shared_mem_config.value_or(arch.shared_memory_per_sm);
  if (o.shared_mem_allocated == 0) return arch.max_blocks_per_sm;  // nothing to allocate: no limit
  if (o.shared_mem_allocated > o.shared_mem_config)
    o.notes.push_back(fmt::format("{} bytes of shared memory per block exceed the {} bytes configured per SM",
                                  o.shared_mem_allocated, o.shared_mem_config));
  return o.shared_mem_config / o.shared_mem_allocated;
}

void name_limiters(Occupancy& o) {
  const std::pair<const char*, int> limits[] = {{"warps", o.limit_warps},
                                                {"registers", o.limit_registers},
                                                {"shared_mem", o.limit_shared_mem},
                                                {"blocks", o.limit_blocks}};
  for (const auto& [name, value] : limits)
    if (value == o.active_blocks) o.limiters.emplace_back(name);
}

}  // namespace

Occupancy compute_occupancy(const ArchSpec& arch, const OccupancyInput& in) {
  Occupancy o;
  o.warps_per_block = ceil_div(in.block_size, arch.warp_size);
  o.limit_blocks = arch.max_blocks_per_sm;
  o.limit_warps = warp_limit(arch, in, o.warps_per_block, o);
  o.limit_registers = register_limit(arch, in, o.warps_per_block, o);
  o.limit_shared_mem = shared_mem_limit(arch, in, o);
  o.active_blocks = std::min({o.limit_blocks, o.limit_warps, o.limit_registers, o.limit_shared_mem});
  o.active_warps = o.active_blocks * o.warps_per_block;
  if (arch.max_warps_per_sm > 0) o.occupancy_pct = 100.0 * o.active_warps / arch.max_warps_per_sm;
  name_limiters(o);
  return o;
}

namespace {

template <typename Vary>
std::vector<OccupancyPoint> sweep(const ArchSpec& arch, const OccupancyInput& in, const std::vector<int>& xs,
                                  Vary vary) {
  std::vector<OccupancyPoint> out;
  for (int x : xs) {
    OccupancyInput v = in;
    vary(v, x);
    out.push_back({x, compute_occupancy(arch, v).active_warps});
  }
  return out;
}

}  // namespace

std::vector<OccupancyPoint> occupancy_by_block_size(const ArchSpec& arch, const OccupancyInput& in,
                                                    const std::vector<int>& sizes) {
  return sweep(arch, in, sizes, [](OccupancyInput& v, int x) { v.block_size = x; });
}

std::vector<OccupancyPoint> occupancy_by_registers(const ArchSpec& arch, const OccupancyInput& in,
                                                   const std::vector<int>& counts) {
  // ncu's chart runs to 256 registers and treats counts above the maximum as the maximum.
  int most = arch.max_registers_per_thread;
  return sweep(arch, in, counts, [most](OccupancyInput& v, int x) { v.registers_per_thread = std::min(x, most); });
}

std::vector<OccupancyPoint> occupancy_by_shared_mem(const ArchSpec& arch, const OccupancyInput& in,
                                                    const std::vector<int>& sizes) {
  // Approximation: ncu's chart also zeroes sizes above the 48 KiB default
  // per-block limit for kernels that did not opt in, which is not modelled.
  return sweep(arch, in, sizes, [](OccupancyInput& v, int x) { v.shared_mem_per_block = x; });
}

namespace {

// ncu's release as {year, minor} ("2022.1.1.0" -> {2022, 1}); none for the
// 2019/2020.1-era reports, which carry no version string.
std::optional<std::pair<int, int>> ncu_release(const model::Report& report) {
  int year = 0, minor = 0;
  if (std::sscanf(report.ncu_version().c_str(), "%d.%d", &year, &minor) != 2) return std::nullopt;
  return std::pair{year, minor};
}

// Without a version string (2019/2020.1-era writers, and some 2025 reports
// whose target version KEET cannot read) the newer attribute
// max_blocks_per_multiprocessor tells the generations apart.
bool uses_carveout(const model::Report& report, const model::Kernel& kernel) {
  if (auto release = ncu_release(report)) return *release >= std::pair{2022, 1};
  return kernel.find("device__attribute_max_blocks_per_multiprocessor") != nullptr;
}

// A quantity of the catalogue (data/metrics/quantities.json), as a whole number.
std::optional<int> int_quantity(const model::Kernel& k, std::string_view name) {
  auto id = quantity_id(name);
  auto v = id ? metric_quantity(k, *id) : std::nullopt;
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

std::optional<OccupancyInput> occupancy_input(const model::Report& report, const model::Kernel& kernel) {
  auto block = int_quantity(kernel, "block_size");
  if (!block) return std::nullopt;
  OccupancyInput in;
  in.block_size = *block;
  in.registers_per_thread = int_quantity(kernel, "registers").value_or(0);
  in.shared_mem_per_block =
      int_quantity(kernel, "smem_static").value_or(0) + int_quantity(kernel, "smem_dynamic").value_or(0);
  in.reserved_shared_mem = int_quantity(kernel, "smem_driver");
  if (uses_carveout(report, kernel)) in.shared_mem_config = int_quantity(kernel, "smem_config");
  return in;
}

std::optional<KernelOccupancy> kernel_occupancy(const model::Report& report, const model::Kernel& kernel) {
  auto in = occupancy_input(report, kernel);
  if (!in) return std::nullopt;
  KernelOccupancy ko{device_spec(report, kernel), *in, {}};
  ko.result = compute_occupancy(ko.device.arch, ko.input);
  return ko;
}

}  // namespace keet::analysis
