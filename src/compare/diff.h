// Before/after comparison of kernels (the compare layer, between analysis and
// render): what `keet diff`, `keet record`, `keet gate` and `keet tune` share.
// A kernel is first reduced to a KernelSnapshot (identity, duration, key
// metrics, finding ids), which is also what the history store keeps, so a
// stored baseline and a fresh report compare the same way.
#pragma once
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "model/report.h"
#include "util/error.h"

namespace keet::compare {

// A source line: where a kernel's code starts (the line of its first
// instruction in the cubin's line table, for reports of a -lineinfo build) or
// where a finding's cost is.
struct SourceLocation {
  std::string file;  // as the line table names it (often absolute on the profiling host)
  int line = 0;
  bool empty() const { return file.empty() || line <= 0; }
};

struct FindingSummary {
  std::string id;
  std::string title;
  std::string severity;
  std::optional<double> estimated_speedup;
  std::vector<SourceLocation> lines;  // where its cost is, largest share first (Finding::source)
};

// A kernel reduced to what a before/after comparison needs. Names are valid
// UTF-8 (as the history store keeps them); `mangled` is "" in baselines
// recorded before it was kept, and the pairing then uses display names.
struct KernelSnapshot : model::KernelIdentity {
  std::string bottleneck;                 // "memory" | "compute" | "latency" | "launch" | ""
  std::map<std::string, double> metrics;  // key metrics only (data/diff/key_metrics.json)
  std::vector<FindingSummary> findings;
  SourceLocation source;  // empty when the report cannot say

  std::string identity() const;  // name + launch configuration
};

struct KeyMetric {
  std::string metric;    // the name snapshots store the value under
  std::string quantity;  // the catalogue quantity: found under any of its spellings
  std::string label, unit;
  bool lower_is_better = false;
};
const std::vector<KeyMetric>& key_metrics();

// With `report` (which holds the kernel's module), the snapshot also gets the
// kernel's source location (analysis::kernel_location).
KernelSnapshot snapshot(const model::Kernel& k, const analysis::KernelDiagnosis* d,
                        const model::Report* report = nullptr);
// One snapshot per kernel of `d` (by index), or per report kernel when `d` has none.
std::vector<KernelSnapshot> snapshots(const model::Report& r, const analysis::Diagnosis& d);

// The snapshots -k selects (index, exact name, regex:), through a stand-in
// model kernel: so a gate with -k compares the same kernels of the baseline.
std::vector<KernelSnapshot> select_snapshots(const std::vector<KernelSnapshot>& v, std::string_view spec);

enum class Verdict { Faster, Slower, Unchanged, Unknown };
std::string_view verdict_name(Verdict v);

struct MetricDelta {
  KeyMetric key;
  double before = 0, after = 0;
  std::optional<double> change;  // relative (after / before - 1); none when before is 0
  // A rate (unit %) changes in percentage points (after - before), never as a
  // relative change of a percentage.
  bool rate() const { return key.unit == "%"; }
  double points() const { return after - before; }
  // How much of the pair's change this metric can explain (the order of
  // PairDiff::metrics): a rate's change in points over 100; any other
  // metric's absolute change over the largest value of its unit in the pair.
  double weight = 0;
};

// BEFORE estimated this finding's fix would give `predicted`; AFTER no longer
// has it and measured `measured`.
struct PredictedGain {
  std::string finding;
  double predicted = 1;
  double measured = 1;
};

// How a pair was made. Only `Name` pairs the same kernel function; every other
// basis is said in each rendering, so a pair of differently named kernels is
// never shown as if it were one kernel.
enum class PairedBy {
  Name,               // same function (same_function), repeated launches in order
  Forced,             // --pair I:J
  OnlyKernel,         // the only kernel of each report
  LaunchConfigOrder,  // same grid and block, in order of appearance, among kernels whose names the other report lacks
  Family,             // the same function with other template arguments or library namespace version, in order
};
// "name" | "forced" | "only_kernel" | "launch_config_order" | "family"
std::string_view paired_by_name(PairedBy b);
// A kernel's function family: its name without return type, parameters,
// template arguments and versioned library namespaces (CUB_200301_..._NS), so
// cub::...::transform_kernel<policy1000...> and <policy1200...> are one family.
std::string function_family(std::string_view display);
std::optional<PairedBy> paired_by_from_name(std::string_view name);

// Which kernels may pair without --pair.
enum class Matching {
  // Same function only: a renamed kernel is missing + new. The gate and record
  // use it: a CI verdict or a calibration point never rests on a guess.
  NameOnly,
  // Then, for kernels whose names the other report lacks (renamed ones): the
  // only kernel of each report, else the same launch configuration in order.
  // keet diff uses it: a person reads the result, and it says how each pair was made.
  NameThenRenamed,
};

struct KernelPair {
  size_t before = 0, after = 0;  // positions into the snapshot vectors
  PairedBy by = PairedBy::Name;
  bool operator==(const KernelPair&) const = default;
};

struct PairDiff {
  KernelSnapshot before, after;
  PairedBy paired_by = PairedBy::Name;
  std::optional<double> speedup;  // before duration / after duration
  std::optional<double> change;   // after / before - 1
  Verdict verdict = Verdict::Unknown;
  std::vector<std::string> resolved, introduced, persisting;
  std::vector<MetricDelta> metrics;  // the most explanatory first (MetricDelta::weight); duration last
  std::vector<PredictedGain> predicted;
  std::string bottleneck_shift() const;  // "memory-bound -> latency-bound" or ""
};

struct DiffOptions {
  double threshold = 0.02;                  // relative duration change below which a pair is unchanged
  std::vector<std::pair<int, int>> forced;  // --pair I:J (report indices)
  double min_delta_ns = 0;                  // absolute duration change below which a pair is unchanged
  Matching matching = Matching::NameOnly;
};

// unmatched_before are the kernels missing from AFTER; unmatched_after the new ones.
struct DiffResult {
  double threshold = 0.02;
  double min_delta_ns = 0;
  std::vector<PairDiff> pairs;
  std::vector<KernelSnapshot> unmatched_before, unmatched_after;
  // --pair I:J (report indices) that would pair the unmatched kernels: each
  // unmatched kernel before with the first unmatched one after of the same
  // block size, else the first one left; at most kSuggestedPairs. A guess for
  // the reader to check, never applied.
  std::vector<std::pair<int, int>> suggested_pairs;
};
constexpr size_t kSuggestedPairs = 10;

// Every --pair names a kernel each report has, and no kernel twice; else a
// one-line error (a pairing that cannot be honoured is never dropped silently).
// The sides are named in the message ("the baseline has no kernel 5" for the gate).
Result<void> check_forced_pairs(const std::vector<KernelSnapshot>& before, const std::vector<KernelSnapshot>& after,
                                const std::vector<std::pair<int, int>>& forced,
                                std::string_view before_name = "first report",
                                std::string_view after_name = "second report");
// Positions into `before`/`after`, in this order: forced pairs; kernels of
// the same function (same_function) in order of occurrence (the n-th launch of
// a kernel before pairs with its n-th launch after); then, with
// Matching::NameThenRenamed only, kernels whose function the other report
// lacks: the only kernel of each report, else kernels of the same function
// family in order of appearance, else the first unpaired kernel of the
// same grid and block in order of appearance. With NameOnly a renamed kernel
// is missing + new unless forced.
std::vector<KernelPair> pair_kernels(const std::vector<KernelSnapshot>& before,
                                     const std::vector<KernelSnapshot>& after,
                                     const std::vector<std::pair<int, int>>& forced,
                                     Matching matching = Matching::NameOnly);
// A change smaller than `threshold` (relative) or `min_delta_ns` (absolute) is "unchanged".
PairDiff compare_pair(KernelSnapshot before, KernelSnapshot after, double threshold, double min_delta_ns = 0);
DiffResult diff(std::vector<KernelSnapshot> before, std::vector<KernelSnapshot> after, const DiffOptions& opt);

// "2%", "0.5 %", "0.02" -> 0.02. Bare numbers above 1 are read as percent.
std::optional<double> parse_fraction(std::string_view text);
// "2us", "1.5 ms", "500ns", "0.01s", "2µs", "0" -> nanoseconds. A non-zero
// number needs a unit: a bare "2" could mean any of them.
std::optional<double> parse_duration_ns(std::string_view text);
// "I:J" (--pair) -> {I, J}, both non-negative.
std::optional<std::pair<int, int>> parse_pair(std::string_view text);

nlohmann::json snapshot_json(const KernelSnapshot& s);
std::optional<KernelSnapshot> snapshot_from_json(const nlohmann::json& j);
nlohmann::json diff_json(const DiffResult& d);
// The same document written pair by pair (the bytes of json_text(diff_json(d), 2) plus a newline).
void write_diff_json(std::ostream& out, const DiffResult& d);

}  // namespace keet::compare
