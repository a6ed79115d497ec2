// `keet profile --nsys -- ./app`: Nsight Systems first, to see where the run's
// GPU time goes; then ncu on only the kernels that carry most of it; then the
// diagnosis of those kernels weighed by the timeline (analyze --timeline).
#pragma once
#include <string>
#include <vector>

#include "app/app.h"
#include "app/profile.h"
#include "model/timeline.h"

namespace keet::app {

struct NsysProfileRequest {
  std::string nsys;  // --nsys-path; default $NSYS, PATH, ...
  size_t top = 3;    // --top-kernels: hottest kernels handed to ncu
  double coverage_threshold = 0.5;
};

// The nsys command line that records `app` into `<base>.nsys-rep`.
std::vector<std::string> nsys_profile_arguments(const std::string& nsys, const std::string& base,
                                                const std::vector<std::string>& app);
// ncu's kernel filter for the `top` hottest kernels of the timeline: their
// function names as one anchored regex, and a launch count that lets each
// be captured about once (ncu cannot cap launches per kernel).
std::vector<std::string> hot_kernel_filter(const model::TimelineSummary& t, size_t top);

ExitCode run_profile_nsys(Context& ctx, const ProfileRequest& r, const NsysProfileRequest& n, ProcessRunner& runner);

}  // namespace keet::app
