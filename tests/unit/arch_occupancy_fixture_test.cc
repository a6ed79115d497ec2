// Occupancy against ncu on every fixture report: launch__occupancy_limit_*,
// sm__maximum_warps_per_active_cycle_pct / _avg_per_active_cycle and the
// "Impact of Varying ..." curves (launch__occupancy_per_*), kernel by kernel.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "analysis/occupancy.h"
#include "readers/reader.h"
#include "support/testing.h"

namespace keet {
namespace {

readers::ReadOptions occupancy_options() {
  readers::ReadOptions o;
  o.rules = o.modules = false;
  o.metric_filter = [](std::string_view n) {
    return n.starts_with("launch__") || n.starts_with("device__attribute_") || n.starts_with("sm__maximum_warps");
  };
  return o;
}

struct Tally {
  int kernels = 0, curve_points = 0;
  std::vector<std::string> mismatches;
  void fail(std::string what) {
    if (mismatches.size() < 40) mismatches.push_back(std::move(what));
  }
};

std::string where(const std::string& path, const model::Kernel& k) {
  return fmt::format("{} #{} {}", path.substr(path.find("fixtures/")), k.index, k.display_name().substr(0, 40));
}

// ncu 2019.x writes NaN for the shared-memory limit when a block uses none
// (no division possible); that is "unlimited", which KEET reports as the SM's
// block cap.
bool limit_equal(double expected, int actual, const analysis::OccupancyInput& in, const analysis::ArchSpec& a) {
  if (std::isnan(expected)) return in.shared_mem_per_block == 0 && actual == a.max_blocks_per_sm;
  return expected == actual;
}

void check_limits(const std::string& at, const model::Kernel& k, const analysis::KernelOccupancy& ko, Tally& t) {
  const auto& o = ko.result;
  const std::pair<const char*, int> limits[] = {{"launch__occupancy_limit_blocks", o.limit_blocks},
                                                {"launch__occupancy_limit_warps", o.limit_warps},
                                                {"launch__occupancy_limit_registers", o.limit_registers},
                                                {"launch__occupancy_limit_shared_mem", o.limit_shared_mem},
                                                {"sm__maximum_warps_avg_per_active_cycle", o.active_warps}};
  for (const auto& [name, mine] : limits) {
    auto theirs = k.number(name);
    if (theirs && !limit_equal(*theirs, mine, ko.input, ko.device.arch))
      t.fail(fmt::format("{}: {} ncu {} keet {}", at, name, *theirs, mine));
  }
  // ncu stores the percentage rounded in some versions; 0.01 covers that.
  auto pct = k.number("sm__maximum_warps_per_active_cycle_pct");
  if (pct && std::abs(*pct - o.occupancy_pct) > 0.01)
    t.fail(fmt::format("{}: occupancy ncu {} keet {}", at, *pct, o.occupancy_pct));
}

using Sweep = std::vector<analysis::OccupancyPoint> (*)(const analysis::ArchSpec&, const analysis::OccupancyInput&,
                                                        const std::vector<int>&);

void check_curve(const std::string& at, const model::Kernel& k, const analysis::KernelOccupancy& ko, const char* name,
                 Sweep sweep, Tally& t) {
  const auto* m = k.find(name);
  if (!m || m->instances.empty()) return;
  std::vector<int> xs;
  for (const auto& i : m->instances) xs.push_back(static_cast<int>(i.key.number));
  auto mine = sweep(ko.device.arch, ko.input, xs);
  for (size_t i = 0; i < xs.size(); ++i, ++t.curve_points)
    if (m->instances[i].value.number != mine[i].warps) {
      t.fail(fmt::format("{}: {}[{}] ncu {} keet {}", at, name, xs[i], m->instances[i].value.number, mine[i].warps));
      return;  // one line per curve is enough to diagnose
    }
}

void check_kernel(const std::string& path, const model::Report& r, const model::Kernel& k, Tally& t) {
  auto ko = analysis::kernel_occupancy(r, k);
  if (!ko) return;  // no launch__block_size: nothing ncu computed either
  ++t.kernels;
  auto at = where(path, k);
  check_limits(at, k, *ko, t);
  check_curve(at, k, *ko, "launch__occupancy_per_block_size", analysis::occupancy_by_block_size, t);
  check_curve(at, k, *ko, "launch__occupancy_per_register_count", analysis::occupancy_by_registers, t);
  // Not asserted: ncu's shared-memory chart zeroes sizes above the 48 KiB
  // default per-block limit for kernels that did not opt in and, in 2025.2,
  // uses other carve-outs per point; KEET's sweep does not model either yet.
}

TEST(ArchOccFixtures, MatchesNcuForEveryKernel) {
  KEET_REQUIRE_SHARED();
  Tally t;
  for (const auto& path : testing::fixture_reports()) {
    auto r = readers::load_file(path, occupancy_options());
    ASSERT_TRUE(r) << r.error().message;
    for (const auto& k : r->kernels) check_kernel(path, *r, k, t);
  }
  EXPECT_GT(t.kernels, 700);
  EXPECT_GT(t.curve_points, 100000);
  for (const auto& m : t.mismatches) ADD_FAILURE() << m;
}

}  // namespace
}  // namespace keet
