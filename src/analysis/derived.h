// The derived model: named quantities computed from a kernel's metrics, each
// with its formula and the report values it came from. Rules (data/rules/*.json)
// refer to these names; every number KEET states is either a metric value or
// one of these, so the LLM verifier can check numbers against both.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::analysis {

// A quantity's position in the fixed catalogue of everything Facts computes
// (plain metrics, stall reasons, derived values), in the order it computes
// them. Ids let the engine keep a kernel's quantities in a flat array.
using QuantityId = uint32_t;
size_t quantity_count();
const std::string& quantity_name(QuantityId id);
std::optional<QuantityId> quantity_id(std::string_view name);

// All quantities for one kernel ("compute_sol", "excess_sector_pct", ...),
// each with its formula and the report values it came from.
class Facts {
 public:
  Facts(const model::Report& report, const model::Kernel& kernel);
  std::optional<double> get(QuantityId id) const { return values_[id]; }
  std::optional<double> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  // Values indexed by QuantityId; nullopt where the report lacks an input.
  const std::vector<std::optional<double>>& values() const { return values_; }
  const model::Kernel& kernel() const { return k_; }
  // Quantities that could not be computed (missing metrics), in catalogue order.
  const std::vector<QuantityId>& missing() const { return missing_; }
  // A present quantity as one evidence item: its metric, or "derived:<name>"
  // with the formula.
  Evidence evidence(QuantityId id) const;
  // Evidence items for a quantity: the metric itself, or the derived value
  // followed by the distinct metrics it came from.
  std::vector<Evidence> evidence_for(QuantityId id) const;
  std::vector<Evidence> evidence_for(std::string_view name) const;
  // Appends evidence_for(id) to `out`, leaving out metrics `out` already lists.
  void add_evidence(QuantityId id, std::vector<Evidence>& out) const;
  // Every computed quantity by name: a plain metric as itself, a derived value
  // as "derived:<name>" with its formula (KernelDiagnosis::derived).
  std::vector<Evidence> all_evidence() const;

 private:
  void compute_metric(QuantityId id);
  void compute_stall_share(QuantityId id, double total);
  void compute_derived(QuantityId id);
  void add_inputs(QuantityId id, std::vector<Evidence>& out) const;

  const model::Kernel& k_;
  std::vector<std::optional<double>> values_;
  std::vector<uint8_t> spelling_;  // which metric spelling a plain quantity came from
  std::vector<QuantityId> missing_;
};

// Stall reasons as ncu names them (suffix of smsp__average_warps_issue_stalled_*).
const std::vector<std::string>& stall_reasons();

}  // namespace keet::analysis
