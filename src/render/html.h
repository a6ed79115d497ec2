// Self-contained HTML pages: inline CSS and SVG only, no scripts, fonts,
// images or links to anything outside the file, so a report can be attached to
// a CI run or mailed and opened offline.
#pragma once
#include <string>

#include "analysis/diagnosis.h"
#include "analysis/ranking.h"
#include "analysis/report_view.h"
#include "llm/result.h"
#include "model/report.h"
#include "render/diff.h"

namespace keet::analysis {
class SassInstructions;
}

namespace keet::render {

// Kernel ranking, then per kernel: bottleneck, speed-of-light bars, roofline,
// stall breakdown, findings with evidence, hot source lines.
std::string html_report(const model::Report& report, const analysis::Diagnosis& diagnosis);
// The same page in pieces, for `keet analyze` streaming a large report: the
// head with the ranking (meta gives path, format and ncu version; its kernels
// are not read), one section per kernel as it is analysed (`kernel` may be
// null: no roofline or hot lines then; `head` supplies modules for source
// lines), and the end.
// One line of the page's table of contents: a diagnosed kernel (the launch
// that stands for `launches` identical ones when they fold).
struct TocEntry {
  int index = 0;
  std::string name;
  size_t launches = 1;
};
std::string html_report_begin(const analysis::Diagnosis& meta, const std::vector<analysis::KernelGroup>& ranking,
                              const std::vector<TocEntry>& toc = {});
// Each kernel is a collapsible section (<details open>) with the anchor #k<index>.
// With `sass`, hot spots without a source line show their SASS instruction.
std::string html_kernel(const model::Report& head, const model::Kernel* kernel, const analysis::KernelDiagnosis& d,
                        const analysis::LaunchSummary* fold = nullptr, analysis::SassInstructions* sass = nullptr);
std::string html_report_end();
// The report as a whole (comparisons, one kernel at several launch shapes): "" when empty.
std::string html_report_view(const analysis::ReportView& view);
// The LLM's narrative about one kernel (status, text, suggestions, what the
// verifier flagged), placed after every kernel's engine section.
std::string html_narrative(const analysis::KernelDiagnosis& d, const llm::LlmResult& r);
// Before/after page for `keet diff --format html`.
std::string html_diff(const compare::DiffResult& diff);

}  // namespace keet::render
