// Scoring the engine against expert labels (eval/labels.json): bottleneck
// class accuracy, limiter accuracy and top-3 finding accuracy, overall and per
// repository. Used by `keet eval` and CI.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/engine.h"
#include "util/error.h"

namespace keet::analysis {

struct Label {
  std::string report;               // relative to the fixtures root, or "oracle:<path>" / "oracle-2024.1:<path>"
  int kernel = 0;                   // the representative launch
  std::string cls;                  // memory | compute | latency | launch | unknown
  std::string limiter;              // binding unit id ("dram", "pipe_fma", "issue", ...); empty when not labelled
  std::vector<std::string> expect;  // may be empty: then the label is not scored for top 3
  std::vector<int> also;            // launches the representative stands for (same kernel, geometry, metrics)
  std::vector<std::string> sets;    // named subsets the label belongs to ("v1": the first labelled set)
  std::string notes;
};

struct LabelResult {
  Label label;
  std::string error;  // non-empty when the report could not be analysed
  std::string predicted_class;
  std::string predicted_limiter;  // empty when the engine names none
  std::vector<std::string> top3;  // KEET's first three finding ids
  bool class_ok = false;
  bool limiter_ok = false;  // only meaningful when label.limiter is set
  bool top3_hit = false;    // one of `expect` is in top3
  double recall3 = 0;       // fraction of `expect` in top3
};

// Counts and accuracies over one group of results (a repository, or all).
struct EvalStats {
  int labels = 0;    // labels in the group
  int scored = 0;    // labels whose report could be analysed
  int launches = 0;  // kernel launches the scored labels stand for (1 + also)
  int class_ok = 0;
  int top3_scored = 0, top3_hits = 0;  // labels with a non-empty expect
  double recall_sum = 0;
  int limiter_scored = 0, limiter_ok = 0, limiter_answered = 0;  // labels with a limiter
  double class_accuracy() const { return scored ? double(class_ok) / scored : 0; }
  double top3_accuracy() const { return top3_scored ? double(top3_hits) / top3_scored : 0; }
  double mean_recall3() const { return top3_scored ? recall_sum / top3_scored : 0; }
  double limiter_accuracy() const { return limiter_scored ? double(limiter_ok) / limiter_scored : 0; }
};

struct EvalSummary {
  std::vector<LabelResult> results;
  EvalStats overall;
  std::map<std::string, EvalStats> by_repository;  // repository() of each label
  // confusion[label class][engine class] = count, over scored labels.
  std::map<std::string, std::map<std::string, int>> confusion;
  // Shorthands for overall (kept for callers of the first version).
  int scored = 0;
  double class_accuracy = 0;
  double top3_accuracy = 0;
  double mean_recall3 = 0;
};

// A result is a miss when its class, its limiter (when labelled) or its top 3
// (when an expectation is labelled) disagrees with the label.
bool is_miss(const LabelResult& r);

// The repository a label belongs to: the first folder of its path
// ("owner__name"), or "oracle" / "oracle-2024.1" for NVIDIA's samples.
std::string repository(const std::string& report);

Result<std::vector<Label>> parse_labels(const std::string& json_text);

// The labels that belong to the named set (all of them when `set` is empty).
std::vector<Label> select_set(const std::vector<Label>& labels, const std::string& set);

// Aggregates per-label results (no I/O).
EvalSummary summarize(std::vector<LabelResult> results);

// fixtures_root: folder the relative report paths start from; oracle_examples /
// oracle_examples_2024: NVIDIA's sample folders of ncu 2022.3 and 2024.1 (may be
// empty: such labels are then skipped).
// `diagnose` runs the engine on a label's kernel: keet eval passes the
// pipeline's (app::diagnose), so labels are scored as every command diagnoses.
// `open` reads a report: keet eval passes the app's intake (app::read_report),
// so this layer does no I/O and reads reports as every command does.
using Diagnose = std::function<KernelDiagnosis(const model::Report&, const model::Kernel&, const AnalyzeOptions&)>;
using OpenReport = std::function<Result<model::Report>(const std::string& path)>;
EvalSummary evaluate_labels(const std::vector<Label>& labels, const std::string& fixtures_root,
                            const std::string& oracle_examples, const std::string& oracle_examples_2024,
                            const OpenReport& open, const Diagnose& diagnose);

}  // namespace keet::analysis
