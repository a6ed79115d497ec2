// Human-readable analysis: a terminal view (optional ANSI colour) and Markdown.
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/ranking.h"
#include "analysis/report_view.h"

namespace keet::render {

struct TextStyle {
  bool color = false;
  bool markdown = false;
  size_t width = 0;           // wrap prose at this many columns (0: never); text only
  bool metric_names = false;  // show each evidence value's metric name (analyze --verbose)
};

std::string ranking_text(const std::vector<analysis::KernelGroup>& groups, const TextStyle& style,
                         size_t max_rows = 15);
// The report as a whole (analysis/report_view.h): "" when it has nothing to say.
std::string report_view_text(const analysis::ReportView& view, const TextStyle& style);
// `fold`, when given, is the group of identical launches this diagnosis stands
// for (same kernel, grid and block, durations within noise): the header says
// how many and how their durations spread.
std::string kernel_text(const analysis::KernelDiagnosis& k, const TextStyle& style,
                        const analysis::LaunchSummary* fold = nullptr);
// "#0-#3, #7, #9" (sorted indices, runs collapsed, at most `max` items then "...").
std::string index_ranges(std::vector<int> indices, size_t max = 12);
// "105 launches: median 4.79 ms (4.71 ms to 4.93 ms), total 503.1 ms".
std::string fold_spread(const analysis::LaunchSummary& fold);
std::string analysis_text(const analysis::Diagnosis& d, const std::vector<analysis::KernelGroup>& ranking,
                          const TextStyle& style);

// "1.23 ms" / "45.6 us" / "789 ns".
std::string human_duration(double ns);
// Evidence value with its unit, in a readable scale ("72.61 %", "25.2 MB").
std::string evidence_value(const analysis::Evidence& e);

}  // namespace keet::render
