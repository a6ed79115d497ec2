// Theoretical occupancy, computed the way Nsight Compute does it: per-SM
// block limits from warps, registers, shared memory and the hardware block
// cap, then active warps over the SM's maximum. Reproduces ncu's
// launch__occupancy_limit_* and sm__maximum_warps_per_active_cycle_pct.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis/arch.h"
#include "model/report.h"

namespace keet::analysis {

struct OccupancyInput {
  int block_size = 0;  // threads per block
  int registers_per_thread = 0;
  int shared_mem_per_block = 0;  // static + dynamic, bytes
  // Shared memory the driver reserves per block (launch__shared_mem_per_block_driver);
  // defaults to the architecture's reserved_shared_memory_per_block.
  std::optional<int> reserved_shared_mem;
  // Shared memory per SM the limit is computed against: the carve-out of the
  // launch (launch__shared_mem_config_size) or, when unset, the SM's maximum.
  std::optional<int> shared_mem_config;
};

struct Occupancy {
  int warps_per_block = 0;
  int registers_per_warp = 0;    // after rounding to the allocation unit
  int shared_mem_allocated = 0;  // per block, reserved part and rounding included
  int shared_mem_config = 0;     // per SM, what the limit divided
  int limit_blocks = 0;          // hardware cap on resident blocks
  int limit_warps = 0;
  int limit_registers = 0;
  int limit_shared_mem = 0;
  int active_blocks = 0;  // min of the four limits
  int active_warps = 0;
  double occupancy_pct = 0;           // active warps / max warps per SM
  std::vector<std::string> limiters;  // "blocks", "warps", "registers", "shared_mem" that bind
  std::vector<std::string> notes;     // why a limit is 0 (block too large, ...)
};

Occupancy compute_occupancy(const ArchSpec& arch, const OccupancyInput& in);

// ncu's "Impact of Varying ..." charts (launch__occupancy_per_block_size,
// _per_register_count, _per_shared_mem_size): active warps per SM when one
// input varies and the others stay as launched.
struct OccupancyPoint {
  int x = 0;
  int warps = 0;
};
std::vector<OccupancyPoint> occupancy_by_block_size(const ArchSpec& arch, const OccupancyInput& in,
                                                    const std::vector<int>& sizes);
std::vector<OccupancyPoint> occupancy_by_registers(const ArchSpec& arch, const OccupancyInput& in,
                                                   const std::vector<int>& counts);
std::vector<OccupancyPoint> occupancy_by_shared_mem(const ArchSpec& arch, const OccupancyInput& in,
                                                    const std::vector<int>& sizes);

// The launch as the report recorded it. Which shared-memory capacity ncu
// divided by depends on its version: before 2022.1 the SM's maximum
// (device__attribute_max_shared_memory_per_multiprocessor), from 2022.1 on
// the launch's carve-out (launch__shared_mem_config_size). Empty when the
// kernel lacks launch__block_size.
std::optional<OccupancyInput> occupancy_input(const model::Report& report, const model::Kernel& kernel);

// Everything needed to recompute a kernel's occupancy: the device and the launch.
struct KernelOccupancy {
  DeviceSpec device;
  OccupancyInput input;
  Occupancy result;
};
std::optional<KernelOccupancy> kernel_occupancy(const model::Report& report, const model::Kernel& kernel);

}  // namespace keet::analysis
