// One path from report to answer (ARCHITECTURE.md, "The pipeline"): every
// command that diagnoses kernels, the serve worker (a `keet analyze` run) and
// the MCP tools (keet commands run in process) reach the engine here and only
// here. The intake is stream_report's (the report, -k, NVTX filters, -s/-c,
// warnings, partial reports); the engine runs once per selected kernel; each
// result goes to the caller's sink: a renderer (analyze), snapshots (diff,
// record, gate, tune), rows (doctor, coverage).
#pragma once
#include <functional>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/engine.h"
#include "app/common.h"

namespace keet::app {

struct AnalysisPass {
  analysis::AnalyzeOptions options{0};
  readers::ReadOptions read = kernel_pass_options();
  // A complete head from read_head; read here when null.
  const model::Report* context = nullptr;
  std::function<void(const model::Report& head)> begin;  // as KernelStream::begin; may be empty
  // Whether to diagnose this kernel (empty: every selected kernel).
  std::function<bool(const model::Kernel&)> wanted;
  // Options for this kernel, from the pass's (e.g. its share of GPU time); may be empty.
  std::function<void(const model::Kernel&, analysis::AnalyzeOptions&)> per_kernel;
};

// Receives each kernel with its diagnosis; returning false stops the pass.
using KernelSink =
    std::function<bool(model::Kernel&& kernel, const model::Report& head, analysis::KernelDiagnosis&& diagnosis)>;

// Streams the report's selected kernels through the engine into `sink`; only
// what the sink keeps stays in memory. `head` receives the report's head as read.
Result<StreamStats> analyse_kernels(Context& ctx, const ReportArgs& a, const AnalysisPass& pass, model::Report& head,
                                    const KernelSink& sink);

// The whole report kept with its diagnosis, for the uses that need every
// kernel at hand at once (ask, chat, profile --nsys, tune's LLM step).
// Warnings and partial reports as load_report.
struct AnalysedReport {
  Loaded loaded;
  analysis::Diagnosis diagnosis;
};
Result<AnalysedReport> analyse_report(Context& ctx, const ReportArgs& a, const analysis::AnalyzeOptions& opt = {});

// One kernel of a report already in memory.
analysis::KernelDiagnosis diagnose(const model::Report& report, const model::Kernel& kernel,
                                   const analysis::AnalyzeOptions& opt);

}  // namespace keet::app
