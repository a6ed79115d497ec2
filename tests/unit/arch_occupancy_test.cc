// Occupancy on hand-computed cases (no ../shared needed), kernel inputs from
// a report built in memory, and the ncu-version rule for the carve-out.
#include <gtest/gtest.h>

#include "analysis/occupancy.h"

namespace keet {
namespace {

using analysis::OccupancyInput;

const analysis::ArchSpec& arch(const char* cc) {
  const auto* a = analysis::find_arch(cc);
  EXPECT_NE(a, nullptr) << cc;
  return *a;
}

// 8.6, 256 threads, 64 registers, 16 KiB shared:
//   warps/block 8 -> warp limit 48/8 = 6
//   64*32 = 2048 registers/warp; 65536/4 = 16384 per scheduler -> 8 warps each,
//   32 warps per SM -> 4 blocks
//   16384 + 1024 reserved = 17408 bytes -> 102400/17408 = 5 blocks
//   min(16, 6, 4, 5) = 4 blocks = 32 warps = 66.67 %
TEST(ArchOccupancy, AmpereRegisterLimited) {
  auto o = analysis::compute_occupancy(arch("8.6"), {256, 64, 16384});
  EXPECT_EQ(o.warps_per_block, 8);
  EXPECT_EQ(o.registers_per_warp, 2048);
  EXPECT_EQ(o.shared_mem_allocated, 17408);
  EXPECT_EQ(o.limit_warps, 6);
  EXPECT_EQ(o.limit_registers, 4);
  EXPECT_EQ(o.limit_shared_mem, 5);
  EXPECT_EQ(o.limit_blocks, 16);
  EXPECT_EQ(o.active_blocks, 4);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_NEAR(o.occupancy_pct, 66.667, 1e-3);
  EXPECT_EQ(o.limiters, std::vector<std::string>{"registers"});
}

// 56 registers -> 1792 per warp (already a multiple of 256); 16384/1792 = 9
// warps per scheduler = 36 per SM: the per-scheduler split matters (65536/1792
// would give 36 too, but 40 registers shows it: 1280 -> 12 per scheduler = 48).
TEST(ArchOccupancy, RegisterRoundingAndPerSchedulerSplit) {
  auto a = analysis::compute_occupancy(arch("8.6"), {32, 56, 8192});
  EXPECT_EQ(a.limit_registers, 36);
  EXPECT_EQ(a.limit_shared_mem, 11);  // 102400 / (8192 + 1024)
  EXPECT_NEAR(a.occupancy_pct, 11.0 / 48 * 100, 1e-9);
  // 33 registers round up to 1280 per warp (33*32 = 1056 -> 1280).
  auto b = analysis::compute_occupancy(arch("8.6"), {32, 33, 0});
  EXPECT_EQ(b.registers_per_warp, 1280);
  EXPECT_EQ(b.limit_registers, 48);
  // Pascal GP100 has two schedulers: 48 registers -> 1536 per warp,
  // 32768/1536 = 21 per scheduler = 42 warps (four schedulers would give 40).
  auto c = analysis::compute_occupancy(arch("6.0"), {32, 48, 0});
  EXPECT_EQ(c.limit_registers, 42);
}

// Shared memory: Turing has no reserved block memory and 256-byte granules;
// Ampere adds 1 KiB per block and rounds to 128 bytes.
TEST(ArchOccupancy, SharedMemoryGranularityAndReserve) {
  auto t = analysis::compute_occupancy(arch("7.5"), {128, 32, 5116});
  EXPECT_EQ(t.shared_mem_allocated, 5120);
  EXPECT_EQ(t.limit_shared_mem, 12);  // 65536 / 5120
  OccupancyInput carve{128, 32, 5116};
  carve.shared_mem_config = 32768;
  EXPECT_EQ(analysis::compute_occupancy(arch("7.5"), carve).limit_shared_mem, 6);

  auto a = analysis::compute_occupancy(arch("8.0"), {256, 32, 1184});
  EXPECT_EQ(a.shared_mem_allocated, 2304);  // 1184 + 1024 = 2208 -> 2304
  EXPECT_EQ(a.limit_shared_mem, 72);        // 167936 / 2304
  // No shared memory at all on Turing: not a limit.
  EXPECT_EQ(analysis::compute_occupancy(arch("7.5"), {128, 32, 0}).limit_shared_mem, 16);
  // On Ampere the reserved 1 KiB alone limits: 8 KiB carve-out / 1 KiB.
  OccupancyInput small{128, 32, 0};
  small.shared_mem_config = 8192;
  EXPECT_EQ(analysis::compute_occupancy(arch("8.6"), small).limit_shared_mem, 8);
}

TEST(ArchOccupancy, ImpossibleLaunchesGiveZero) {
  auto big = analysis::compute_occupancy(arch("8.6"), {1025, 32, 0});
  EXPECT_EQ(big.limit_warps, 0);
  EXPECT_EQ(big.occupancy_pct, 0);
  EXPECT_FALSE(big.notes.empty());
  auto regs = analysis::compute_occupancy(arch("8.6"), {1024, 72, 0});  // 72*32 -> 2304 * 32 warps > 65536
  EXPECT_EQ(regs.limit_registers, 0);
  auto smem = analysis::compute_occupancy(arch("7.5"), {128, 32, 70000});
  EXPECT_EQ(smem.limit_shared_mem, 0);
  EXPECT_EQ(smem.active_warps, 0);
}

TEST(ArchOccupancy, FullOccupancyNamesEveryBindingLimit) {
  // 7.5: 1024 threads = 32 warps = the whole SM.
  auto o = analysis::compute_occupancy(arch("7.5"), {1024, 16, 8192});
  EXPECT_EQ(o.limit_warps, 1);
  EXPECT_EQ(o.limit_registers, 4);
  EXPECT_EQ(o.limit_shared_mem, 8);
  EXPECT_DOUBLE_EQ(o.occupancy_pct, 100);
  EXPECT_EQ(o.limiters, std::vector<std::string>{"warps"});
}

TEST(ArchOccupancy, SweepsVaryOneInput) {
  const auto& a = arch("8.6");
  OccupancyInput in{256, 64, 16384};
  auto regs = analysis::occupancy_by_registers(a, in, {32, 64, 128});
  ASSERT_EQ(regs.size(), 3u);
  EXPECT_EQ(regs[0].warps, 40);  // warps 6 vs regs 8 vs smem 5 -> 5 blocks
  EXPECT_EQ(regs[1].warps, 32);
  EXPECT_EQ(regs[2].warps, 16);
  auto blocks = analysis::occupancy_by_block_size(a, in, {32, 1024});
  EXPECT_EQ(blocks[0].warps, 5);   // shared memory: 5 one-warp blocks
  EXPECT_EQ(blocks[1].warps, 32);  // one block of 32 warps (64 regs -> 2048*32 = 65536)
  auto smem = analysis::occupancy_by_shared_mem(a, in, {0, 50000});
  EXPECT_EQ(smem[0].warps, 32);
  EXPECT_EQ(smem[1].warps, 16);  // 102400 / 51072 = 2 blocks
}

model::Kernel launch(double block, double regs, double smem_static, double smem_dyn, double driver, double config) {
  model::Kernel k;
  auto add = [&](const char* n, double v) { k.metrics.push_back({n, model::Value::of_double(v), {}, ""}); };
  add("launch__block_size", block);
  add("launch__registers_per_thread", regs);
  add("launch__shared_mem_per_block_static", smem_static);
  add("launch__shared_mem_per_block_dynamic", smem_dyn);
  add("launch__shared_mem_per_block_driver", driver);
  add("launch__shared_mem_config_size", config);
  add("device__attribute_compute_capability_major", 8);
  add("device__attribute_compute_capability_minor", 0);
  add("device__attribute_max_shared_memory_per_multiprocessor", 167936);
  return k;
}

model::Report report_of_version(const char* version) {
  model::Report r;
  if (*version) r.session.versions.push_back({"Nsight Compute Target", version});
  return r;
}

// ncu before 2022.1 divided the SM's maximum shared memory; from 2022.1 on the
// launch's carve-out (observed on the fixtures: A100 24 KiB blocks give 6
// under 2021.2 and 4 under 2022.4 with a 100 KiB carve-out).
TEST(ArchOccupancy, CarveOutDependsOnNcuVersion) {
  auto k = launch(256, 128, 24576, 0, 1024, 102400);
  auto old_ko = analysis::kernel_occupancy(report_of_version("2021.2.2.0"), k);
  ASSERT_TRUE(old_ko);
  EXPECT_EQ(old_ko->result.limit_shared_mem, 6);
  EXPECT_EQ(old_ko->result.limit_registers, 2);
  auto new_ko = analysis::kernel_occupancy(report_of_version("2022.4.0.0"), k);
  ASSERT_TRUE(new_ko);
  EXPECT_EQ(new_ko->result.limit_shared_mem, 4);
  auto unversioned = analysis::kernel_occupancy(report_of_version(""), k);
  EXPECT_EQ(unversioned->result.limit_shared_mem, 6);
}

TEST(ArchOccupancy, KernelWithoutLaunchMetricsHasNoOccupancy) {
  model::Kernel k;
  EXPECT_FALSE(analysis::kernel_occupancy(model::Report{}, k));
}

}  // namespace
}  // namespace keet
