// Joining an ncu report with an Nsight Systems timeline of the same program:
// how much of the timeline's GPU kernel time (and of its span) each profiled kernel carries, what
// each finding's kernel speedup is worth for the whole application (Amdahl),
// and which hot kernels the ncu capture missed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/run_verdicts.h"
#include "model/timeline.h"

namespace keet::analysis {

// A kernel whose launches grow slower over the run: the mean duration of its
// last quarter of launches over that of its first quarter, minus one.
// Kernels with fewer than kMinDriftLaunches launches are never judged.
inline constexpr uint64_t kMinDriftLaunches = 8;
std::optional<double> drift_growth(const model::KernelSummary& k);
bool drifting(const model::KernelSummary& k, double threshold);

// What the join needs of one profiled kernel (taken while the analysis streams).
// Its identity is the diagnosis's; the timeline is matched by the demangled
// name, else the function name, as the report gives them.
struct ProfiledKernel : model::KernelIdentity {
  std::string function, demangled;
  struct Gain {
    std::string finding;  // id
    std::string title;
    double kernel_speedup = 1;
  };
  std::vector<Gain> gains;  // findings with an estimate
};
ProfiledKernel profiled_kernel(const model::Kernel& k, const KernelDiagnosis& d);

struct JoinedGain {
  std::string finding, title;
  double kernel_speedup = 1;
  double app_speedup = 1;  // of the timeline's GPU kernel time: 1 / ((1 - share) + share / kernel_speedup)
};

struct JoinedKernel {
  int index = 0;
  std::string name;
  bool in_timeline = false;
  double gpu_share = 0;   // of the timeline's GPU kernel time (the sum of every kernel's duration)
  double span_share = 0;  // of the run's span (first to last GPU activity)
  double busy_share = 0;  // of the GPU-busy time (some kernel, copy or memset running)
  uint64_t launches = 0;  // in the timeline
  int64_t total_ns = 0;
  std::vector<JoinedGain> gains;  // largest application gain first
};

struct HotKernel {
  std::string name, short_name;
  double gpu_share = 0;
  uint64_t launches = 0;
  std::vector<std::string> ncu_options;  // e.g. {"-k", "hist", "--launch-skip", "1", "--launch-count", "1"}
};

struct TimelineJoin {
  std::string timeline;      // path
  double coverage = 0;       // share of the GPU kernel time of the timeline kernels profiled
  double span_coverage = 0;  // their share of the run's span (0 when the span is unknown)
  int64_t gpu_time_ns = 0;   // the denominators: the timeline's GPU kernel time
  int64_t span_ns = 0;       // and its span
  int64_t busy_ns = 0;       // and its GPU-busy time (0 when unknown)
  double busy_coverage = 0;  // the profiled kernels' share of the GPU-busy time
  double threshold = 0;
  bool low_coverage = false;
  std::vector<JoinedKernel> kernels;    // by share, largest first
  std::vector<HotKernel> not_profiled;  // hottest first (at most kMaxHot)
  static constexpr size_t kMaxHot = 5;
  RunDiagnosis run;  // the verdicts for the whole run (its lists point into the timeline)
};

TimelineJoin join_timeline(const model::TimelineSummary& t, const std::vector<ProfiledKernel>& profiled,
                           double threshold);
// Amdahl's law over the timeline's GPU kernel time.
double app_speedup(double share, double kernel_speedup);
// The one-line warning of a low coverage, naming the hot kernels and the ncu
// options that would capture them; "" when coverage is enough.
std::string coverage_warning(const TimelineJoin& j);

// The base function name of a demangled name, as ncu's "function" name base
// gives it: "void ns::f<int>(float *)" -> "f".
std::string function_of(std::string_view demangled);

// diff and gate --timeline: each compared kernel's duration change weighed by
// its share of the timeline's GPU time. `app_change` is the change of the
// timeline's GPU kernel time if each kernel's change held for all its launches.
struct WeightedChange {
  std::string name;
  double gpu_share = 0;
  double change = 0;      // after / before - 1, mean over the kernel's pairs
  double app_change = 0;  // gpu_share * change
};
struct ChangeView {
  TimelineJoin join;                    // coverage of the compared (after) kernels
  std::vector<WeightedChange> kernels;  // largest |app_change| first
  double app_change = 0;
};
ChangeView weigh_changes(const model::TimelineSummary& t,
                         const std::vector<std::pair<std::string, std::optional<double>>>& name_change,
                         double threshold);

}  // namespace keet::analysis
