// keet analyze's run, shared with keet profile (which analyses the report it
// has just written with the same flags).
#pragma once
#include <string>

#include "app/common.h"
#include "app/llm_flags.h"

namespace keet::app {

struct AnalyzeArgs {
  ReportArgs report;
  int top = 5;
  std::string format;
  std::string output;
  std::string summary = "none";  // --print-summary
  LlmArgs llm;
};

ExitCode run_analyze(Context& ctx, const AnalyzeArgs& a);

}  // namespace keet::app
