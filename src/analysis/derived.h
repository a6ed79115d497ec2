// The quantity catalogue (data/metrics/quantities.json) and the quantities of
// one kernel. Every number KEET states is a metric value or one of these
// quantities; rules, renderers, diff and the LLM prompt name quantities, never
// raw metric spellings, so a new ncu spelling or nvprof name is one line of data.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::analysis {

// A quantity's position in the catalogue, in computation order (every input
// precedes its users). Ids let the engine keep a kernel's values in a flat array.
using QuantityId = uint32_t;
size_t quantity_count();
const std::string& quantity_name(QuantityId id);
std::optional<QuantityId> quantity_id(std::string_view name);
const std::string& quantity_unit(QuantityId id);
const std::string& quantity_meaning(QuantityId id);
// The words a reader sees beside the quantity's value ("DRAM throughput").
const std::string& quantity_label(QuantityId id);
// The ncu section that collects it ("SpeedOfLight"); empty when the catalogue does not say.
const std::string& quantity_section(QuantityId id);
// Every metric spelling the catalogue knows for a quantity (ncu and nvprof).
std::vector<std::string> quantity_spellings(QuantityId id);

// A plain quantity straight from a kernel's metrics (spellings only, an
// implausible value skipped), for commands that do not run the analysis
// (list, the kernel ranking, diff snapshots).
std::optional<double> metric_quantity(const model::Kernel& k, QuantityId id);
// The same with the metric spelling it came from and that spelling's unit.
struct SpelledValue {
  std::string metric;
  double value = 0;
  std::string unit;
};
std::optional<SpelledValue> metric_quantity_spelled(const model::Kernel& k, QuantityId id);
std::optional<double> kernel_duration_ns(const model::Kernel& k);
// The kernel's identity as the per-kernel results hold it; its device is the
// one ncu names on the kernel ("" when it does not).
model::KernelIdentity identity_of(const model::Kernel& k);
// True for any metric spelling of duration_ns (reader filters of list/analyze).
bool is_duration_metric(std::string_view metric);

// A hardware unit whose utilisation can bind a kernel (catalogue "units").
struct UnitDef {
  std::string id, label;
  BottleneckClass kind = BottleneckClass::Memory;  // Memory or Compute
  std::vector<QuantityId> quantities;              // utilisation is the largest present
  bool generic = false;                            // only the top-level speed-of-light number
  std::string saturation_finding;                  // the finding that names this unit as the limiter
  std::vector<std::string> carries;                // units that see the same requests from the other side
};
const std::vector<UnitDef>& unit_defs();

// An ncu section and the quantities that show it was collected.
struct SectionDef {
  std::string id, what, option;
  std::vector<QuantityId> quantities;  // present when any of them is
};
const std::vector<SectionDef>& section_defs();

// Warp stall reasons as ncu names them (suffix of the stall metric forms).
const std::vector<std::string>& stall_reasons();

// A value the report holds that cannot be right (NaN, inf, a negative count,
// a percentage far above 100): it is treated as absent and reported.
struct InvalidValue {
  std::string metric;
  double value = 0;
  std::string why;
};

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
  // Quantities dropped because their valid_when floor did not hold.
  const std::vector<QuantityId>& below_floor() const { return below_floor_; }
  const std::vector<InvalidValue>& invalid() const { return invalid_; }
  // Stall data: the unit of this kernel's stall values ("warps per issued
  // instruction", ...), the reasons present, and whether shares are computed
  // (every reason of the form's complete set is present).
  const std::string& stall_unit() const { return stall_unit_; }
  const std::vector<std::string>& stall_reasons_present() const { return stalls_present_; }
  bool stall_shares_complete() const { return stall_shares_; }
  // The stall values are PC-sample counts (a share needs enough samples).
  bool stall_sampled() const { return stall_sampled_; }
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
  void compute(QuantityId id);
  bool from_spelling(QuantityId id);
  bool from_formula(QuantityId id);
  bool from_message(QuantityId id);
  void compute_stalls();
  void apply_floor(QuantityId id);
  void add_inputs(QuantityId id, std::vector<Evidence>& out) const;

  const model::Kernel& k_;
  std::vector<std::optional<double>> values_;
  // >= 0: spelling index; -1 .. -1000: -(formula index + 1); <= kFromMessage: an ncu message
  std::vector<int16_t> source_;
  static constexpr int kFromMessage = -1000;
  std::vector<std::pair<QuantityId, std::string>> message_rule_;  // which ncu rule stated a value
  std::vector<QuantityId> missing_, below_floor_;
  std::vector<InvalidValue> invalid_;
  std::string stall_unit_;
  std::vector<std::string> stalls_present_;
  bool stall_shares_ = false;
  bool stall_sampled_ = false;
};

}  // namespace keet::analysis
