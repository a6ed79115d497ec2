// keet analyze's run, shared with keet profile (which analyses the report it
// has just written with the same flags).
#pragma once
#include <string>
#include <vector>

#include "app/common.h"
#include "app/llm_flags.h"
#include "app/timeline_input.h"
#include "compare/calibration.h"

namespace keet::app {

struct AnalyzeArgs {
  ReportArgs report;
  // --report-name: what the output calls the report instead of its path (keet
  // serve runs jobs on a fixed file name and passes the uploaded file's name).
  std::string report_name;
  int top = 5;
  std::string format;
  std::string output;
  std::string summary = "none";   // --print-summary
  std::string launches = "fold";  // --launches fold|all
  bool verbose = false;           // --verbose: metric names beside evidence
  LlmArgs llm;
  TimelineArgs timeline;  // --timeline: weigh the diagnosis by the whole run
  double coverage_threshold = 0.5;
  bool calibrated = false;  // --calibrated: the history's measured/predicted ratio beside each estimate
  std::string db;
  std::vector<compare::CalibrationPoint> calibration;  // loaded when --calibrated
};

ExitCode run_analyze(Context& ctx, const AnalyzeArgs& a);
// analyze's --format choices, the default first (profile offers the same).
std::vector<std::string> analyze_format_names();

}  // namespace keet::app
