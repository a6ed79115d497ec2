// Text and Markdown renderings of a DiffResult (JSON is in diff.cc).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/units.h"
#include "render/diff.h"
#include "render/diff_format.h"
#include "render/markdown.h"
#include "render/table.h"
#include "util/strings.h"

namespace keet::render {
using namespace compare;

std::string format_duration(std::optional<double> ns) { return ns ? model::readable_duration(*ns) : "-"; }

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
  if (p.before.display == p.after.display) return p.after.display;
  return p.before.display + " -> " + p.after.display;
}

std::string metric_change(const MetricDelta& m) {
  return m.rate() ? fmt::format("{:+.1f} points", m.points()) : format_change(m.change);
}

std::string metric_line(const MetricDelta& m) {
  return fmt::format("{}: {} -> {} ({})", m.key.label, format_value(m.before, m.key.unit),
                     format_value(m.after, m.key.unit), metric_change(m));
}

std::string predicted_line(const PredictedGain& g) {
  return fmt::format("{}: predicted {:.2f}x, measured {:.2f}x", g.finding, g.predicted, g.measured);
}

namespace {

// "void Sobel<float>(uchar4 *, int)" -> "Sobel<float>": the function without
// its return type and parameters, so a note names both kernels in a short line.
std::string function_label(std::string_view name) {
  int depth = 0;
  size_t start = 0, end = name.size();
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<')
      ++depth;
    else if (c == '>' && depth > 0)
      --depth;
    else if (depth == 0 && c == ' ')
      start = i + 1;
    else if (depth == 0 && c == '(' && i > start) {
      end = i;
      break;
    }
  }
  return std::string(start < end ? name.substr(start, end - start) : name);
}

// "(a -> b)": short names, or the whole names when the short ones are alike (overloads).
std::string renamed_text(const std::string& before, const std::string& after) {
  auto a = function_label(before), b = function_label(after);
  if (a == b) return fmt::format("({} -> {})", before, after);
  return fmt::format("({} -> {})", a, b);
}

}  // namespace

std::string pairing_note(PairedBy by, const std::string& before_name, const std::string& after_name, int before_index,
                         int after_index) {
  std::string differ =
      before_name == after_name ? "" : ": the kernel names differ " + renamed_text(before_name, after_name);
  switch (by) {
    case PairedBy::Name:
      return "";
    case PairedBy::Forced:
      return fmt::format("--pair {}:{}{}", before_index, after_index, differ);
    case PairedBy::OnlyKernel:
      return "position, the only kernel of each report" + differ;
    case PairedBy::LaunchConfigOrder:
      return "launch configuration (same grid and block) and order of appearance" + differ;
    case PairedBy::Family:
      return "function family (the same function with other template arguments or library version)" + differ;
  }
  return "";
}

std::string pairing_note(const PairDiff& p) {
  return pairing_note(p.paired_by, p.before.display, p.after.display, p.before.index, p.after.index);
}

std::string pairing_summary(const DiffResult& d) {
  static constexpr std::string_view labels[] = {"by name", "by --pair", "by position (the only kernel of each report)",
                                                "by launch configuration and order", "by function family"};
  size_t counts[5] = {};
  for (const auto& p : d.pairs) ++counts[static_cast<int>(p.paired_by)];
  if (counts[0] == d.pairs.size()) return "";
  std::string out;
  for (int b = 0; b < 5; ++b)
    if (counts[b] > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", counts[b], labels[b]);
  return "pairing: " + out;
}

std::string pair_flags_text(const std::vector<std::pair<int, int>>& pairs) {
  std::string out;
  for (auto [i, j] : pairs) out += fmt::format("{}--pair {}:{}", out.empty() ? "" : " ", i, j);
  return out;
}

std::string unmatched_hint(const DiffResult& d) {
  if (d.suggested_pairs.empty()) return "";
  bool more = std::min(d.unmatched_before.size(), d.unmatched_after.size()) > d.suggested_pairs.size();
  return fmt::format(
      "hint: {} kernel(s) only in before and {} only in after have no partner; if a kernel here is another one "
      "renamed, pair them by index (BEFORE:AFTER), e.g. {}{}",
      d.unmatched_before.size(), d.unmatched_after.size(), pair_flags_text(d.suggested_pairs), more ? " ..." : "");
}

namespace {

const MetricDelta* metric_of(const PairDiff& p, std::string_view quantity) {
  for (const auto& m : p.metrics)
    if (m.key.quantity == quantity) return &m;
  return nullptr;
}

// The launches do different amounts of work when the threads launched and the
// instructions executed change together: the time is then compared per unit
// of work (instructions), said in one line.
std::string work_line(const PairDiff& p) {
  double before = static_cast<double>(p.before.grid.product() * p.before.block.product());
  double after = static_cast<double>(p.after.grid.product() * p.after.block.product());
  const MetricDelta* inst = metric_of(p, "inst_executed");
  if (before <= 0 || after <= 0 || !inst || inst->before <= 0 || inst->after <= 0 || !p.speedup) return "";
  double threads = after / before, work = inst->after / inst->before;
  if (std::max(threads, 1 / threads) < 1.5 || std::max(work, 1 / work) < 1.5) return "";
  if (std::fabs(std::log(work / threads)) > std::log(1.5)) return "";  // the threads and the work do not scale together
  double per_work = *p.speedup * work;
  return fmt::format(
      "the launches do different work ({:.2f}x the threads, {:.2f}x the instructions): per instruction the after "
      "kernel is {:.2f}x {}",
      threads, work, per_work >= 1 ? per_work : 1 / per_work, per_work >= 1 ? "faster" : "slower");
}

// What rose on a slower pair: the key metrics that moved the wrong way,
// largest share of their unit first (MetricDelta::weight).
std::string grew_line(const PairDiff& p) {
  std::vector<std::string> grew;
  for (const auto& m : p.metrics) {
    if (m.key.quantity == "duration_ns" || grew.size() == 3) continue;
    bool worse = m.rate()
                     ? (m.key.lower_is_better ? m.points() >= 5 : m.points() <= -5)
                     : m.change && m.weight >= 0.02 && (m.key.lower_is_better ? *m.change >= 0.05 : *m.change <= -0.05);
    if (worse) grew.push_back(metric_line(m));
  }
  if (grew.empty()) return "no key metric moved the wrong way (noise? clocks? input size?)";
  return fmt::format("{}", fmt::join(grew, "; "));
}

}  // namespace

// The facts of one pair as (label, value) lines, shared by text and Markdown.
std::vector<std::pair<std::string, std::string>> pair_facts(const PairDiff& p) {
  std::vector<std::pair<std::string, std::string>> f;
  if (auto how = pairing_note(p); !how.empty()) f.emplace_back("paired by", how);
  f.emplace_back("verdict", std::string(verdict_name(p.verdict)));
  f.emplace_back("duration",
                 fmt::format("{} -> {} ({}, speedup {})", format_duration(p.before.duration_ns),
                             format_duration(p.after.duration_ns), format_change(p.change), format_speedup(p.speedup)));
  if (p.before.launch_text() != p.after.launch_text())
    f.emplace_back("launch", p.before.launch_text() + " -> " + p.after.launch_text());
  else
    f.emplace_back("launch", p.after.launch_text());
  if (auto shift = p.bottleneck_shift(); !shift.empty())
    f.emplace_back("bottleneck", shift);
  else if (!p.after.bottleneck.empty())
    f.emplace_back("bottleneck", p.after.bottleneck + "-bound (unchanged)");
  if (auto work = work_line(p); !work.empty()) f.emplace_back("work", work);
  if (p.verdict == Verdict::Slower) f.emplace_back("what grew", grew_line(p));
  std::string resolved = join_ids(p.resolved);
  if (!p.resolved.empty() && p.verdict == Verdict::Slower)
    resolved += ": gone, yet the kernel got slower, so removing it saved no time here; what grew cost more";
  f.emplace_back("resolved", resolved);
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
    out +=
        fmt::format("{}{} (only in {}): #{} {} ({})\n", markdown ? "- " : "", before ? "missing" : "new",
                    before ? "before" : "after", s.index, markdown ? md_code(s.display) : s.display, s.launch_text());
}

std::string summary_line(const DiffResult& d) {
  int counts[4] = {};
  for (const auto& p : d.pairs) ++counts[static_cast<int>(p.verdict)];
  std::string noise = fmt::format("noise threshold {:.1f}%", d.threshold * 100);
  if (d.min_delta_ns > 0) noise += ", min delta " + format_duration(d.min_delta_ns);
  return fmt::format("{} pair(s): {} faster, {} slower, {} unchanged; {} missing, {} new ({})", d.pairs.size(),
                     counts[0], counts[1], counts[2], d.unmatched_before.size(), d.unmatched_after.size(), noise);
}

// The summary, then how the pairs were made when not all by name.
std::string heading_lines(const DiffResult& d, bool markdown) {
  std::string out = summary_line(d) + "\n";
  if (auto how = pairing_summary(d); !how.empty())
    out += fmt::format("{}{}\n", markdown ? "\n" : "", markdown ? md_text(how) : how);
  return out;
}

std::string hint_line(const DiffResult& d, bool markdown) {
  auto hint = unmatched_hint(d);
  if (hint.empty()) return "";
  return fmt::format("{}{}\n", markdown ? "\n" : "", markdown ? md_text(hint) : hint);
}

}  // namespace

namespace {

// Every kernel's time before and after, paired or not.
std::string total_line(const DiffResult& d) {
  double before = 0, after = 0;
  bool timed = false;
  for (const auto& p : d.pairs) {
    before += p.before.duration_ns.value_or(0), after += p.after.duration_ns.value_or(0);
    timed |= p.before.duration_ns.has_value() || p.after.duration_ns.has_value();
  }
  for (const auto& s : d.unmatched_before) before += s.duration_ns.value_or(0), timed |= s.duration_ns.has_value();
  for (const auto& s : d.unmatched_after) after += s.duration_ns.value_or(0), timed |= s.duration_ns.has_value();
  if (!timed || before <= 0) return "";
  return fmt::format("kernel time {} -> {} ({})", format_duration(before), format_duration(after),
                     format_change(after / before - 1));
}

// One line per pair, the largest change of time first, before the details.
std::string compact_table(const DiffResult& d) {
  if (d.pairs.size() < 2) return "";
  std::vector<const PairDiff*> order;
  for (const auto& p : d.pairs) order.push_back(&p);
  auto moved = [](const PairDiff* p) {
    return std::fabs(p->after.duration_ns.value_or(0) - p->before.duration_ns.value_or(0));
  };
  std::ranges::stable_sort(order, [&](const PairDiff* a, const PairDiff* b) { return moved(a) > moved(b); });
  Table t({"kernel", "before", "after", "change", "verdict"});
  t.right_align({1, 2, 3});
  for (const PairDiff* p : order)
    t.add({abbreviate_name(pair_title(*p), 60), format_duration(p->before.duration_ns),
           format_duration(p->after.duration_ns), format_change(p->change), std::string(verdict_name(p->verdict))});
  return t.str(60) + "\n";
}

}  // namespace

std::string diff_text(const DiffResult& d) {
  std::string out = heading_lines(d, false);
  if (auto total = total_line(d); !total.empty()) out += total + "\n";
  out += "\n" + compact_table(d);
  for (const auto& p : d.pairs) text_pair(out, p);
  unmatched_lines(out, d.unmatched_before, true, false);
  unmatched_lines(out, d.unmatched_after, false, false);
  return out + hint_line(d, false);
}

std::string diff_markdown(const DiffResult& d) {
  std::string out = "# keet diff\n\n" + heading_lines(d, true) + "\n";
  if (auto total = total_line(d); !total.empty()) out += md_text(total) + "\n\n";
  out += "| kernel | before | after | change | speedup | verdict |\n|---|---:|---:|---:|---:|---|\n";
  for (const auto& p : d.pairs)
    out += fmt::format("| {} | {} | {} | {} | {} | **{}** |\n", md_code(pair_title(p), true),
                       format_duration(p.before.duration_ns), format_duration(p.after.duration_ns),
                       format_change(p.change), format_speedup(p.speedup), verdict_name(p.verdict));
  for (const auto& p : d.pairs) {
    out += fmt::format("\n## {}\n\n", md_code(pair_title(p)));
    // Labels and values come from the reports and data tables: escaped like any outside text.
    for (const auto& [label, value] : pair_facts(p))
      out += fmt::format("- **{}**: {}\n", md_text(label), md_text(value));
    for (size_t i = 0; i < p.metrics.size() && i < kMetricsShown; ++i)
      out += fmt::format("- {}\n", md_text(metric_line(p.metrics[i])));
  }
  if (!d.unmatched_before.empty() || !d.unmatched_after.empty()) out += "\n## Missing and new kernels\n\n";
  unmatched_lines(out, d.unmatched_before, true, true);
  unmatched_lines(out, d.unmatched_after, false, true);
  return out + hint_line(d, true);
}

}  // namespace keet::render
