// How the engine's estimated speedups compare with measured ones: the stored
// CalibrationPoints summarised per rule and architecture (`keet calibrate`),
// and the calibrated estimate `analyze --calibrated` shows beside the formula's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/diff.h"

namespace keet::compare {

// One resolved finding of a measured before/after pair (keet tune, keet diff
// --db, keet record): what the engine predicted its fix would gain and what
// the pair measured. `keet calibrate` summarises them per rule and architecture.
struct CalibrationPoint {
  std::string source;  // "tune" | "diff" | "record"
  std::string rule;    // finding id
  std::string arch;    // compute capability ("8.6") when the tables know the device, else its name
  std::string kernel;
  double predicted = 1;  // the finding's estimated speedup in BEFORE
  double measured = 1;   // the pair's measured speedup (before / after duration)
  int64_t recorded_at = 0;
};

// Per pair of `d`, each finding BEFORE estimated and AFTER no longer has,
// with the pair's measured speedup.
std::vector<CalibrationPoint> calibration_points(const DiffResult& d, const std::string& source, int64_t recorded_at);
// The compute capability when the GPU tables know the device name, else the
// name ("unknown" when empty).
std::string arch_of_device(const std::string& device);

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

}  // namespace keet::compare
