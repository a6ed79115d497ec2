// Scoring the engine against expert labels (eval/labels.json): bottleneck
// class accuracy and top-3 finding accuracy. Used by `keet eval` and CI.
#pragma once
#include <string>
#include <vector>

#include "util/error.h"

namespace keet::analysis {

struct Label {
  std::string report;   // relative to the fixtures root, or "oracle:<path>"
  int kernel = 0;
  std::string cls;
  std::vector<std::string> expect;
  std::string notes;
};

struct LabelResult {
  Label label;
  std::string error;                // non-empty when the report could not be analysed
  std::string predicted_class;
  std::vector<std::string> top3;    // KEET's first three finding ids
  bool class_ok = false;
  bool top3_hit = false;            // one of `expect` is in top3
  double recall3 = 0;               // fraction of `expect` in top3
};

struct EvalSummary {
  std::vector<LabelResult> results;
  int scored = 0;  // labels whose report could be analysed
  double class_accuracy = 0;
  double top3_accuracy = 0;
  double mean_recall3 = 0;
};

Result<std::vector<Label>> parse_labels(const std::string& json_text);
// fixtures_root: folder the relative report paths start from; oracle_examples:
// NVIDIA's sample folder (may be empty: such labels are then skipped).
EvalSummary evaluate_labels(const std::vector<Label>& labels, const std::string& fixtures_root,
                            const std::string& oracle_examples);

}  // namespace keet::analysis
