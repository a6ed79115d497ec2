// How KEET's findings cover Nsight Compute's own guided-analysis warnings
// (data/rules/ncu_rules.json maps every ncu rule to KEET finding ids).
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"
#include "util/error.h"

namespace keet::analysis {

// Covered: a KEET finding of the same meaning; Explained: a documented reason
// KEET gives no finding of that kind; Disagrees: KEET's own analysis says the
// warning cannot matter for this kernel (the reason says why); Uncovered: a gap.
enum class Coverage { Covered, Explained, Disagrees, Uncovered };
std::string_view coverage_name(Coverage c);

struct RuleCoverage {
  std::string rule;     // ncu rule id
  std::string message;  // ncu's message (first warning of the rule)
  Coverage status = Coverage::Uncovered;
  std::string matched_by;  // KEET finding id, "bottleneck", or the documented reason
};

// What one ncu message means (data/rules/ncu_rules.json, refined by message text).
struct NcuMeaning {
  std::vector<std::string> findings;  // KEET finding ids of the same meaning ("latency.*" patterns allowed)
  bool warn = true;                   // false: not a warning of the rule's kind ("all pipes under-utilized")
  std::string disagree;               // why KEET may report nothing although ncu warned
  std::string what;
};
const NcuMeaning* ncu_meaning(std::string_view rule, std::string_view text);
// Types 2 (warning) and 4 (optimization) warn; 3 is an error (a metric ncu
// needed was missing), a data-quality note.
bool is_ncu_warning(int message_type);

// Every warning-level ncu rule result of `kernel` against `diag`, which should
// hold all findings (AnalyzeOptions::top = 0).
Result<std::vector<RuleCoverage>> ncu_coverage(const model::Kernel& kernel, const KernelDiagnosis& diag);

}  // namespace keet::analysis
