#include "compare/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/arch.h"

namespace keet::compare {
namespace {

bool usable(const CalibrationPoint& p) {
  return std::isfinite(p.predicted) && std::isfinite(p.measured) && p.predicted > 0 && p.measured > 0;
}

CalibrationRow row_of(const std::string& rule, const std::string& arch,
                      const std::vector<const CalibrationPoint*>& ps) {
  std::vector<double> ratios, predicted, measured;
  for (const auto* p : ps) {
    ratios.push_back(p->measured / p->predicted);
    predicted.push_back(p->predicted);
    measured.push_back(p->measured);
  }
  auto [lo, hi] = std::ranges::minmax(ratios);
  return {rule, arch, ps.size(), median(ratios), lo, hi, median(predicted), median(measured)};
}

}  // namespace

double median(std::vector<double> v) {
  std::ranges::sort(v);
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<CalibrationRow> summarise_calibration(const std::vector<CalibrationPoint>& points) {
  std::map<std::pair<std::string, std::string>, std::vector<const CalibrationPoint*>> groups;
  for (const auto& p : points)
    if (usable(p)) groups[{p.rule, p.arch}].push_back(&p);
  std::vector<CalibrationRow> out;
  for (const auto& [key, ps] : groups) out.push_back(row_of(key.first, key.second, ps));
  return out;
}

std::optional<CalibrationRow> calibration_for(const std::vector<CalibrationPoint>& points, const std::string& rule,
                                              const std::string& arch) {
  std::vector<const CalibrationPoint*> same_arch, any_arch;
  for (const auto& p : points) {
    if (!usable(p) || p.rule != rule) continue;
    any_arch.push_back(&p);
    if (p.arch == arch) same_arch.push_back(&p);
  }
  if (!same_arch.empty()) return row_of(rule, arch, same_arch);
  if (!any_arch.empty()) return row_of(rule, "any", any_arch);
  return std::nullopt;
}

std::string arch_of_device(const std::string& device) {
  if (const auto* gpu = analysis::find_gpu(device)) return gpu->cc;
  return device.empty() ? "unknown" : device;
}

std::vector<CalibrationPoint> calibration_points(const DiffResult& d, const std::string& source, int64_t recorded_at) {
  std::vector<CalibrationPoint> out;
  for (const auto& p : d.pairs)
    for (const auto& g : p.predicted)
      out.push_back(
          {source, g.finding, arch_of_device(p.before.device), p.before.display, g.predicted, g.measured, recorded_at});
  return out;
}

}  // namespace keet::compare
