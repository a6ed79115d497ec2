// Verdicts for a whole run: what the timeline's checks and kernel summary
// say is wrong with it, each with the operations that show it, the time it
// costs and what to do (data/rules/timeline.json). The checks cover Nsight
// Systems' own six CUDA rules (nsys analyze), so a run KEET calls clean is
// one those rules pass too, or the check says why it stays quiet.
//
// Run facts the rule data may name (times in ms, shares in %):
//   span_ms, kernel_ms, gpu_busy_ms, gpu_busy_pct (of the processes' GPU ranges), chunks;
//   sync_copy_{count,ms,mb,span_pct,pageable_count}, pageable_async_{count,ms,mb,span_pct},
//   sync_memset_{count,ms,span_pct}, sync_call_{count,ms,span_pct,refill_us,refill_ms};
//   gap_{count,ms,max_ms,limit_ms,range_pct,sync_pct,issued_pct};
//   low_use_{count,ms,pct,limit_pct,range_pct,idle_ms};
//   launch_stream_{kernels,mean_us,idle_pct,idle_ms}, launch_latency_us;
//   drift_{pct,early_us,late_us,cost_ms,limit_pct}; hot_kernel_{pct,ms,launches,span_pct};
//   copy_{ms,exposed_count,exposed_ms,exposed_span_pct,hideable_ms,hideable_span_pct};
//   gap_{steady,phase}_ms, low_use_{phase,steady_idle}_ms, launch_stream_phase_ms (one-time
//   phases, NVTX ranges timeline.json's `phases` name, set apart); queue_{launches,mean_us};
//   api_<group>_{count,ms,max_ms,span_pct,churn_count,churn_ms,churn_span_pct} per `api_groups` entry;
//   devices, device_{busiest,idlest,compute_max_ms,compute_min_ms,compute_gap_pct,balance_ms};
//   nccl_{launches,ms,exposed_ms,exposed_pct,device,device_exposed_ms,device_exposed_pct,exposed_span_pct}.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/timeline.h"

namespace keet::analysis {

// One of Nsight Systems' rules and what the run holds for it.
struct RunCheck {
  std::string list;       // the OpList of model::RunChecks it reads ("sync_copies")
  std::string nsys_rule;  // "cuda_memcpy_sync"
  std::string what;
  const model::OpList* ops = nullptr;
  std::string verdict;  // the verdict it raised, "" when quiet
  std::string quiet;    // why it is quiet (empty when nothing matched or a verdict fired)
};

struct RunVerdict {
  std::string id, title, explanation;
  std::optional<double> cost_ns;  // time it costs the run, at most
  std::vector<std::string> advice, references;
  std::string evidence;   // an OpList name, or hot_kernel / launch_stream / drift_kernel
  std::string nsys_rule;  // the check it comes from, if any
  const model::OpList* ops = nullptr;
  std::string subject;                   // the kernel, stream, calls or collectives it is about
  std::string subject_label = "Kernel";  // what the subject is: "Kernel", "Stream", "Calls", "Collectives"
  std::vector<std::string> notes;        // what the verdict left out (one-time phases)
  std::vector<std::string> commands;     // command lines that take the next step
};

struct RunDiagnosis {
  const model::TimelineSummary* timeline = nullptr;
  std::vector<RunVerdict> verdicts;  // largest cost first
  std::vector<RunCheck> checks;      // in the data's order
};

// What the user sets for the verdicts (keet timeline's flags).
struct RunOptions {
  double drift_threshold = 0.2;  // growth from first to last quarter of launches that counts as drift
  // The name a verdict's kernel goes by (keet timeline --name-base): Function
  // gives the export's short name, anything else the demangled one.
  model::NameBase names = model::NameBase::Demangled;
};

// The limits the timeline builder applies (rule data "limits").
model::RunLimits run_limits();
RunDiagnosis diagnose_run(const model::TimelineSummary& t, const RunOptions& opt = {});

}  // namespace keet::analysis
