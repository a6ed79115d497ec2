// Source attribution for findings: which source lines carry the cost a finding
// is about (per-PC metric lists mapped to CUDA source lines through the cubin,
// see analysis/source_costs.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::analysis {

struct SourceTable;
class SassInstructions;

// One kernel being analysed; the source table is built on first use only.
// With `sass`, rows without a source line get their SASS instruction.
struct Context {
  Context(const model::Report& r, const model::Kernel& k, SassInstructions* sass = nullptr);
  ~Context();
  const model::Report& report;
  const model::Kernel& kernel;
  SassInstructions* const sass;
  const SourceTable& table() const;
  // The table over only these PC metrics (full names), built once per list.
  const SourceTable& table_for(const std::vector<std::string>& metrics) const;
  // Why a table's SASS rows have no instruction (the first reason met), or "".
  const std::string& sass_missing() const { return sass_missing_; }

 private:
  std::unique_ptr<SourceTable> annotated(SourceTable t) const;
  mutable std::string sass_missing_;
  mutable std::unique_ptr<SourceTable> table_;
  mutable std::vector<std::pair<std::vector<std::string>, std::unique_ptr<SourceTable>>> partial_;
};

// The n lines with the largest share of the first metric in `metrics` that the
// kernel has per-PC values for. Empty when the report has no source counters.
std::vector<SourceRef> hot_lines(const Context& ctx, const std::vector<std::string>& metrics, int n);

}  // namespace keet::analysis
