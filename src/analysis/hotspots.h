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

// One kernel being analysed; the source table is built on first use only.
struct Context {
  Context(const model::Report& r, const model::Kernel& k);
  ~Context();
  const model::Report& report;
  const model::Kernel& kernel;
  const SourceTable& table() const;
  // The table over only these PC metrics (full names), built once per list.
  const SourceTable& table_for(const std::vector<std::string>& metrics) const;

 private:
  mutable std::unique_ptr<SourceTable> table_;
  mutable std::vector<std::pair<std::vector<std::string>, std::unique_ptr<SourceTable>>> partial_;
};

// The n lines with the largest share of the first metric in `metrics` that the
// kernel has per-PC values for. Empty when the report has no source counters.
std::vector<SourceRef> hot_lines(const Context& ctx, const std::vector<std::string>& metrics, int n);

}  // namespace keet::analysis
