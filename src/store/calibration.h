// How the engine's estimated speedups compare with measured ones: the stored
// CalibrationPoints summarised per rule and architecture (`keet calibrate`),
// and the calibrated estimate `analyze --calibrated` shows beside the formula's.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "store/history.h"

namespace keet::store {

// ratio = measured / predicted speedup of one point.
struct CalibrationRow {
  std::string rule, arch;
  size_t count = 0;
  double median_ratio = 1, min_ratio = 1, max_ratio = 1;
  double median_predicted = 1, median_measured = 1;
};

// One row per (rule, arch), sorted by rule then arch. Points with a
// non-positive or non-finite speedup are left out (they cannot be a ratio).
std::vector<CalibrationRow> summarise_calibration(const std::vector<CalibrationPoint>& points);

// The row for `rule` on `arch`; else the rule's points on every architecture
// together (arch "any"); none when the rule has no point.
std::optional<CalibrationRow> calibration_for(const std::vector<CalibrationPoint>& points, const std::string& rule,
                                              const std::string& arch);

double median(std::vector<double> v);  // of a non-empty vector

}  // namespace keet::store
