// The expert engine's entry points: a full diagnosis with no LLM.
#pragma once
#include <optional>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/ranking.h"
#include "model/report.h"

namespace keet::analysis {

class SassInstructions;

struct AnalyzeOptions {
  int top = 5;  // findings kept per kernel (0 = all)
  // Fill KernelDiagnosis::derived (every derived number, for the LLM's
  // prompt and its answer's verification); no renderer prints it.
  bool derived = true;
  // The kernel's share (0..1) of the report's GPU time, all launches of its
  // name together, when the caller ranked the report: severity follows it.
  std::optional<double> time_share;
  // Hot spots without a source line show their SASS instruction from here
  // (analysis/sass.h); null: they show the offset only, with no note.
  SassInstructions* sass = nullptr;
  // Every launch configuration of the report (ranking.h LaunchGroups::summaries,
  // from the caller's first pass), when it made one: the same kernel at another
  // grid is evidence for or against a launch-shape gain.
  const std::vector<LaunchSummary>* configurations = nullptr;
};

KernelDiagnosis analyze_kernel(const model::Report& report, const model::Kernel& kernel,
                               const AnalyzeOptions& opt = {});
Diagnosis analyze(const model::Report& report, const std::vector<const model::Kernel*>& kernels,
                  const AnalyzeOptions& opt = {});

}  // namespace keet::analysis
