// `keet timeline` output (text, keet.timeline/1 JSON, HTML with a timeline
// chart) and the application view a timeline adds to `keet analyze`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/timeline_join.h"
#include "model/timeline.h"
#include "render/analysis_text.h"

namespace keet::render {

struct TimelineStyle {
  size_t top = 20;               // kernels listed (0: all); JSON always lists all
  double drift_threshold = 0.2;  // growth that counts as drift
  bool color = false;
  // Kernel names in text cut to this many characters, keeping what tells them
  // apart (render::clip_cell: a PyTorch name loses its template arguments
  // first); 0 keeps them whole (piped output, JSON).
  size_t name_width = 0;
  // Which name a kernel goes by in text and HTML (keet timeline --name-base):
  // an export holds the demangled and the function name; mangled falls back
  // to the demangled one.
  model::NameBase names = model::NameBase::Demangled;
};

std::string timeline_text(const model::TimelineSummary& t, const TimelineStyle& s);
nlohmann::json timeline_json(const model::TimelineSummary& t, const TimelineStyle& s);
std::string timeline_html(const model::TimelineSummary& t, const TimelineStyle& s);
// The chart and tables without the page around them (for the analysis page).
std::string timeline_html_section(const model::TimelineSummary& t, const TimelineStyle& s);

// The joined view: kernels by share of application GPU time, application
// gains, the coverage warning.
std::string join_text(const analysis::TimelineJoin& j, const TextStyle& s);
nlohmann::json join_json(const analysis::TimelineJoin& j);
std::string join_html(const analysis::TimelineJoin& j);

// diff/gate --timeline: the compared kernels' changes weighed by the run.
std::string change_view_text(const analysis::ChangeView& v, bool markdown);

std::string human_bytes(uint64_t bytes);

}  // namespace keet::render
