// Building blocks of the HTML pages (render/html.h): escaping, the page shell
// and inline SVG charts.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace keet::render::html {

std::string esc(std::string_view s);
// <!doctype html> page with the shared inline stylesheet.
std::string page(const std::string& title, const std::string& body);
// The same page in two halves, for pages written as they are made.
std::string page_head(const std::string& title);
std::string page_tail();

struct Bar {
  std::string label;
  double value = 0;  // drawn against `max`
  std::string text;  // shown at the bar's end
};
// Horizontal bar chart as inline SVG.
std::string bar_chart(const std::vector<Bar>& bars, double max, const std::string& css_class);

// Roofline inputs derived from the report (ncu's SpeedOfLight roofline formulas).
struct Roofline {
  std::optional<double> peak_bandwidth;        // DRAM bytes/s
  std::optional<double> peak_fp32, peak_fp64;  // FLOP/s
  std::optional<double> dram_rate;             // achieved bytes/s
  std::optional<double> fp32, fp64;            // achieved FLOP/s
  bool drawable() const { return peak_bandwidth && dram_rate && (peak_fp32 || peak_fp64); }
};
Roofline roofline_of(const model::Kernel& k);
std::string roofline_svg(const Roofline& r);

}  // namespace keet::render::html
