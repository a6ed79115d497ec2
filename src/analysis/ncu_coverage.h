// How KEET's findings cover Nsight Compute's own guided-analysis warnings
// (data/rules/ncu_rules.json maps every ncu rule to KEET finding ids).
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"
#include "util/error.h"

namespace keet::analysis {

enum class Coverage { Covered, Explained, Uncovered };
std::string_view coverage_name(Coverage c);

struct RuleCoverage {
  std::string rule;        // ncu rule id
  std::string message;     // ncu's message (first warning of the rule)
  Coverage status = Coverage::Uncovered;
  std::string matched_by;  // KEET finding id, "bottleneck", or the documented reason
};

// Every warning-level ncu rule result of `kernel` against `diag`, which should
// hold all findings (AnalyzeOptions::top = 0).
Result<std::vector<RuleCoverage>> ncu_coverage(const model::Kernel& kernel, const KernelDiagnosis& diag);

}  // namespace keet::analysis
