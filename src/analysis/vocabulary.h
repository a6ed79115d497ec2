// Metric vocabulary (the aliases, renames and stall forms of data/metrics/quantities.json): nvprof-era names developers
// still use (achieved_occupancy, gld_efficiency, stall_memory_dependency, ...)
// mapped to Nsight Compute metrics, and names that changed between ncu
// versions (gpu__time_duration -> gpu__time_duration.sum, sm__sol_pct ->
// sm__throughput..., the stall-reason metric families).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

// value = scale * sum(num) / sum(den); den empty means 1.
struct MetricFormula {
  double scale = 1;
  std::vector<std::string> num, den;
  bool exact_terms = false;  // terms must be present as named (no renames): keeps one unit
  std::string text() const;  // "100 * (a + b) / (c + d)"
};

struct MetricAlias {
  std::string alias;                    // "achieved_occupancy"
  std::vector<std::string> metrics;     // single-metric equivalents, tried in order
  std::vector<MetricFormula> formulas;  // tried in order when no equivalent is present
  std::string note;
};

const std::vector<MetricAlias>& metric_aliases();
const MetricAlias* find_alias(std::string_view name);  // case-insensitive
const std::vector<std::string>& vocabulary_sources();

// Every ncu metric a name may stand for: for an alias its equivalents and
// formula terms; for a metric its rename group (canonical name first); for an
// unknown name just the name (decorations like "breakdown:" removed).
std::vector<std::string> resolve(std::string_view name);

// The single-metric names that carry the same quantity, in lookup order.
std::vector<std::string> equivalents(std::string_view name);

// nvprof-era aliases a metric is known by (for --grep); empty when none.
std::vector<std::string> aliases_of(std::string_view metric);

// The metric of `kernel` for a canonical name or an alias: the name itself,
// then its equivalents and renames in order. nullptr when none is present.
const model::Metric* find_metric(const model::Kernel& kernel, std::string_view canonical_or_alias);

// A number for a name: a present equivalent, or else an alias formula whose
// terms are all present (each term looked up with renames).
struct ResolvedValue {
  double value = 0;
  std::vector<std::string> metrics;  // the report metrics it came from
  std::string formula;               // empty for a single metric
};
std::optional<ResolvedValue> find_value(const model::Kernel& kernel, std::string_view canonical_or_alias);

}  // namespace keet::analysis
