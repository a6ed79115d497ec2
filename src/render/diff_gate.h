// The CI regression gate's verdict and its reports: text and JSON
// (diff_gate.cc), JUnit XML, Markdown and GitHub workflow commands
// (gate_ci.cc), SARIF 2.1.0 (gate_sarif.cc).
#pragma once
#include <string>
#include <vector>

#include "render/diff.h"

namespace keet::render {

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
// "finding introduced: ...; metric moved: global load sectors +200%; memory-bound -> latency-bound"
std::string likely_cause(const PairDiff& p);
std::string regression_message(const PairDiff& p);

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
// The row's one-line explanation (the regression message, the pass line, or why it has no pair).
std::string gate_row_message(const GateRow& r);
// "max slowdown 5.0%, min delta 2.00 us"
std::string gate_limits(const GateResult& g);

std::string gate_text(const GateResult& g);
std::string gate_json(const GateResult& g);  // keet.gate/1
std::string gate_junit(const GateResult& g);
std::string gate_sarif(const GateResult& g);
std::string gate_markdown(const GateResult& g);  // GitHub step summary
std::string gate_github(const GateResult& g);    // GitHub workflow commands (::error ...)

// GitHub workflow command escaping: a property value (%, CR, LF, ':' and ','
// encoded) and a message (%, CR, LF encoded).
std::string github_property(std::string_view s);
std::string github_message(std::string_view s);

// A kernel's source file as a path relative to `root` when it lies under it
// ("src/k.cu"), else as given; "" when the kernel has no source location.
std::string source_path_under(const SourceLocation& s, const std::string& root);

}  // namespace keet::render
