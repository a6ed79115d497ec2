// Text and Markdown renderings of a DiffResult (JSON is in diff.cc).
#include <cmath>

#include <fmt/format.h>

#include "model/units.h"
#include "render/diff.h"
#include "render/diff_format.h"
#include "render/markdown.h"

namespace keet::render {

std::string format_duration(std::optional<double> ns) {
  return ns ? model::readable_duration(*ns) : "-";
}

std::string format_value(double v, const std::string& unit) {
  if (unit == "%") return fmt::format("{:.1f}%", v);
  return model::readable(v, unit);
}

std::string format_change(std::optional<double> change) {
  if (!change) return "n/a";
  return fmt::format("{:+.1f}%", *change * 100);
}

std::string format_speedup(std::optional<double> s) { return s ? fmt::format("{:.2f}x", *s) : "n/a"; }

std::string join_ids(const std::vector<std::string>& ids) {
  if (ids.empty()) return "-";
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::string pair_title(const PairDiff& p) {
  if (p.before.name == p.after.name) return p.after.name;
  return p.before.name + " -> " + p.after.name;
}

std::string metric_line(const MetricDelta& m) {
  return fmt::format("{}: {} -> {} ({})", m.key.label, format_value(m.before, m.key.unit),
                     format_value(m.after, m.key.unit), format_change(m.change));
}

std::string predicted_line(const PredictedGain& g) {
  return fmt::format("{}: predicted {:.2f}x, measured {:.2f}x", g.finding, g.predicted, g.measured);
}

// The facts of one pair as (label, value) lines, shared by text and Markdown.
std::vector<std::pair<std::string, std::string>> pair_facts(const PairDiff& p) {
  std::vector<std::pair<std::string, std::string>> f;
  f.emplace_back("verdict", std::string(verdict_name(p.verdict)));
  f.emplace_back("duration", fmt::format("{} -> {} ({}, speedup {})", format_duration(p.before.duration_ns),
                                         format_duration(p.after.duration_ns), format_change(p.change),
                                         format_speedup(p.speedup)));
  if (p.before.launch_text() != p.after.launch_text())
    f.emplace_back("launch", p.before.launch_text() + " -> " + p.after.launch_text());
  else
    f.emplace_back("launch", p.after.launch_text());
  if (auto shift = p.bottleneck_shift(); !shift.empty()) f.emplace_back("bottleneck", shift);
  else if (!p.after.bottleneck.empty()) f.emplace_back("bottleneck", p.after.bottleneck + "-bound (unchanged)");
  f.emplace_back("resolved", join_ids(p.resolved));
  f.emplace_back("introduced", join_ids(p.introduced));
  for (const auto& g : p.predicted) f.emplace_back("predicted vs measured", predicted_line(g));
  return f;
}

namespace {

constexpr size_t kMetricsShown = 6;

void text_pair(std::string& out, const PairDiff& p) {
  out += fmt::format("{}\n", pair_title(p));
  for (const auto& [label, value] : pair_facts(p)) out += fmt::format("  {:<22} {}\n", label + ":", value);
  if (!p.metrics.empty()) out += "  key metrics:\n";
  for (size_t i = 0; i < p.metrics.size() && i < kMetricsShown; ++i)
    out += fmt::format("    {}\n", metric_line(p.metrics[i]));
  out += "\n";
}

// A kernel with no partner of the same name: "missing" (only in BEFORE) or "new" (only in AFTER).
void unmatched_lines(std::string& out, const std::vector<KernelSnapshot>& v, bool before, bool markdown) {
  for (const auto& s : v)
    out += fmt::format("{}{} (only in {}): #{} {} ({})\n", markdown ? "- " : "", before ? "missing" : "new",
                       before ? "before" : "after", s.index, markdown ? md_code(s.name) : s.name, s.launch_text());
}

std::string summary_line(const DiffResult& d) {
  int counts[4] = {};
  for (const auto& p : d.pairs) ++counts[static_cast<int>(p.verdict)];
  std::string noise = fmt::format("noise threshold {:.1f}%", d.threshold * 100);
  if (d.min_delta_ns > 0) noise += ", min delta " + format_duration(d.min_delta_ns);
  return fmt::format("{} pair(s): {} faster, {} slower, {} unchanged; {} missing, {} new ({})", d.pairs.size(),
                     counts[0], counts[1], counts[2], d.unmatched_before.size(), d.unmatched_after.size(), noise);
}

}  // namespace

std::string diff_text(const DiffResult& d) {
  std::string out = summary_line(d) + "\n\n";
  for (const auto& p : d.pairs) text_pair(out, p);
  unmatched_lines(out, d.unmatched_before, true, false);
  unmatched_lines(out, d.unmatched_after, false, false);
  return out;
}

std::string diff_markdown(const DiffResult& d) {
  std::string out = "# keet diff\n\n" + summary_line(d) + "\n\n";
  out += "| kernel | before | after | change | speedup | verdict |\n|---|---:|---:|---:|---:|---|\n";
  for (const auto& p : d.pairs)
    out += fmt::format("| {} | {} | {} | {} | {} | **{}** |\n", md_code(pair_title(p), true), format_duration(p.before.duration_ns),
                       format_duration(p.after.duration_ns), format_change(p.change), format_speedup(p.speedup),
                       verdict_name(p.verdict));
  for (const auto& p : d.pairs) {
    out += fmt::format("\n## {}\n\n", md_code(pair_title(p)));
    // Labels and values come from the reports and data tables: escaped like any outside text.
    for (const auto& [label, value] : pair_facts(p)) out += fmt::format("- **{}**: {}\n", md_text(label), md_text(value));
    for (size_t i = 0; i < p.metrics.size() && i < kMetricsShown; ++i)
      out += fmt::format("- {}\n", md_text(metric_line(p.metrics[i])));
  }
  if (!d.unmatched_before.empty() || !d.unmatched_after.empty()) out += "\n## Missing and new kernels\n\n";
  unmatched_lines(out, d.unmatched_before, true, true);
  unmatched_lines(out, d.unmatched_after, false, true);
  return out;
}

}  // namespace keet::render
