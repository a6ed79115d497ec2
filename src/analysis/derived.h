// The derived model: named quantities computed from a kernel's metrics, each
// with its formula and the report values it came from. Rules (data/rules/*.json)
// refer to these names; every number KEET states is either a metric value or
// one of these, so the LLM verifier can check numbers against both.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::analysis {

struct Quantity {
  double value = 0;
  std::string unit;
  std::string formula;          // empty for plain metrics
  std::vector<Evidence> inputs; // the report values used
};

// All quantities for one kernel, by name ("compute_sol", "excess_sector_pct", ...).
class Facts {
 public:
  Facts(const model::Report& report, const model::Kernel& kernel);
  std::optional<double> get(const std::string& name) const;
  const Quantity* find(const std::string& name) const;
  const std::map<std::string, Quantity>& all() const { return q_; }
  const model::Kernel& kernel() const { return k_; }
  // First metric present among candidates (older/newer ncu spellings).
  std::optional<Evidence> metric(const std::vector<std::string>& candidates) const;
  // Names of quantities that could not be computed (missing metrics).
  const std::vector<std::string>& missing() const { return missing_; }
  // Evidence items for a quantity: the metric itself, or the derived value.
  std::vector<Evidence> evidence_for(const std::string& name) const;

 private:
  void compute();
  const model::Report& r_;
  const model::Kernel& k_;
  std::map<std::string, Quantity> q_;
  std::vector<std::string> missing_;
};

// Stall reasons as ncu names them (suffix of smsp__average_warps_issue_stalled_*).
const std::vector<std::string>& stall_reasons();

}  // namespace keet::analysis
