// The CI regression gate's verdict: which pairs of a before/after comparison
// are regressions, and one row per kernel in the order every report lists
// them. Its renderings (text, JSON, JUnit, SARIF, Markdown, GitHub) are
// render/diff_gate.h.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "compare/diff.h"

namespace keet::compare {

struct GateResult {
  std::string report;    // the checked report's path
  std::string baseline;  // "baseline run #12 tag main commit abc"
  double max_slowdown = 0.05;
  double min_delta_ns = 0;          // a slowdown smaller than this (absolute) is never a regression
  std::string source_root;          // --source-root: SARIF and GitHub paths are relative to it
  std::string timestamp;            // JUnit: "2026-12-01T07:30:45" (UTC)
  std::string hostname;             // JUnit
  DiffResult diff;                  // baseline -> report
  std::vector<size_t> regressions;  // indices into diff.pairs
  bool failed() const { return !regressions.empty(); }
};

// Pairs slower by more than `max_slowdown` and by at least `min_delta_ns` are regressions.
GateResult gate(DiffResult d, double max_slowdown, double min_delta_ns = 0);

// One line of the gate's verdict per kernel, in the order every format lists
// them: regressions, then paired kernels that passed, then kernels missing
// since the baseline, then kernels new in the report.
enum class GateStatus { Regression, Ok, Missing, New };
std::string_view gate_status_name(GateStatus s);  // "regression" | "ok" | "missing" | "new"
struct GateRow {
  GateStatus status = GateStatus::Ok;
  const KernelSnapshot* before = nullptr;  // null for a new kernel
  const KernelSnapshot* after = nullptr;   // null for a missing kernel
  const PairDiff* pair = nullptr;          // null unless paired
  const KernelSnapshot& kernel() const { return after ? *after : *before; }
};
// Rows point into `g`, which must outlive them.
std::vector<GateRow> gate_rows(const GateResult& g);

}  // namespace keet::compare
