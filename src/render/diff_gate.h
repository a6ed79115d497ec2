// The CI regression gate's verdict and its reports (text, JUnit XML, SARIF).
#pragma once
#include <string>
#include <vector>

#include "render/diff.h"

namespace keet::render {

struct GateResult {
  std::string report;     // the checked report's path
  std::string baseline;   // "run #12 (tag main, commit abc, 2026-11-29)"
  double max_slowdown = 0.05;
  DiffResult diff;        // baseline -> report
  std::vector<size_t> regressions;  // indices into diff.pairs
  bool failed() const { return !regressions.empty(); }
};

// Pairs slower by more than `max_slowdown` are regressions.
GateResult gate(DiffResult d, double max_slowdown);
// "finding introduced: ...; metric moved: global load sectors +200%; memory-bound -> latency-bound"
std::string likely_cause(const PairDiff& p);
std::string regression_message(const PairDiff& p);

std::string gate_text(const GateResult& g);
std::string gate_junit(const GateResult& g);
std::string gate_sarif(const GateResult& g);

}  // namespace keet::render
