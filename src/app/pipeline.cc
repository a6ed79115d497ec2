#include "app/pipeline.h"
#include "util/error.h"

namespace keet::app {

analysis::KernelDiagnosis diagnose(const model::Report& report, const model::Kernel& kernel,
                                   const analysis::AnalyzeOptions& opt) {
  return analysis::analyze_kernel(report, kernel, opt);
}

Result<StreamStats> analyse_kernels(Context& ctx, const ReportArgs& a, const AnalysisPass& pass, model::Report& head,
                                    const KernelSink& sink) {
  std::optional<model::Report> complete;
  const model::Report* context = pass.context;
  if (!context) {
    KEET_TRY(read, read_head(ctx, a));
    complete = std::move(*read);
    context = &*complete;
  }
  analysis::AnalyzeOptions opt = pass.options;
  KernelStream stream{.begin = pass.begin,
                      .visit =
                          [&](model::Kernel&& k, const model::Report& h) {
                            if (pass.wanted && !pass.wanted(k)) return true;
                            if (pass.per_kernel) pass.per_kernel(k, opt);
                            auto d = diagnose(h, k, opt);
                            return sink(std::move(k), h, std::move(d));
                          },
                      .context = context};
  return stream_report(ctx, a, pass.read, head, stream);
}

Result<AnalysedReport> analyse_report(Context& ctx, const ReportArgs& a, const analysis::AnalyzeOptions& opt) {
  KEET_TRY(loaded, load_report(ctx, a));
  AnalysedReport r{std::move(*loaded), {}};
  const auto& report = r.loaded.report;
  r.diagnosis.report_path = report.path;
  r.diagnosis.report_format = std::string(model::format_name(report.format));
  r.diagnosis.ncu_version = report.ncu_version();
  for (const auto* k : r.loaded.selected) r.diagnosis.kernels.push_back(diagnose(report, *k, opt));
  return r;
}

}  // namespace keet::app
