#include "render/analysis_text.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include "model/units.h"
#include "render/table.h"

#include "render/markdown.h"
#include "util/strings.h"

namespace keet::render {
namespace {

std::string paint(const TextStyle& s, const char* code, const std::string& text) {
  if (!s.color) return text;
  return fmt::format("\033[{}m{}\033[0m", code, text);
}

const char* severity_color(analysis::Severity sev) {
  switch (sev) {
    case analysis::Severity::High:
      return "1;31";
    case analysis::Severity::Medium:
      return "1;33";
    default:
      return "36";
  }
}

std::string speedup_text(const analysis::Finding& f) {
  if (!f.estimated_speedup) return "gain: not estimated";
  return fmt::format("est. speedup {:.2f}x", *f.estimated_speedup);
}

std::string header_line(const analysis::KernelDiagnosis& k, const TextStyle& s, const analysis::LaunchSummary* fold) {
  std::string device = k.device.empty() ? "unknown device" : k.device;
  if (!k.compute_capability.empty()) device += " (CC " + k.compute_capability + ")";
  std::string dur = k.duration_ns ? human_duration(*k.duration_ns) : "duration not collected";
  if (analysis::folds_launches(fold)) dur = fold_spread(*fold);
  // Long template names are abbreviated (JSON and --verbose keep them whole).
  std::string title = fmt::format("[{}] {}", k.index, s.metric_names ? k.display : abbreviate_name(k.display));
  if (analysis::folds_launches(fold)) title += fmt::format("  x{} launches", fold->indices.size());
  bool geometry = !(k.grid == model::Dim3{} && k.block == model::Dim3{});
  std::string launch = geometry ? fmt::format("grid ({},{},{}) x block ({},{},{})", k.grid.x, k.grid.y, k.grid.z,
                                              k.block.x, k.block.y, k.block.z)
                                : "launch geometry not recorded";
  std::string detail = fmt::format("{}, {}, {}", device, launch, dur);
  std::string launches;
  if (analysis::folds_launches(fold))
    launches = fmt::format(
        "Launches {} fold into this diagnosis of #{} (same grid and block, durations within noise); "
        "--launches all diagnoses each",
        index_ranges(fold->indices), fold->index);
  if (s.markdown)
    return fmt::format("## {}\n\n{}\n", md_code(title), md_text(detail)) +
           (launches.empty() ? "" : "\n" + md_text(launches) + "\n");
  std::string out = paint(s, "1", title) + "\n" + wrap_text(detail, s.width, "  ", "    ") + "\n";
  if (!launches.empty()) out += wrap_text(launches, s.width, "  ", "    ") + "\n";
  return out;
}

std::string bottleneck_line(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  std::string cls(analysis::class_name(k.bottleneck.cls));
  for (auto& c : cls) c = static_cast<char>(std::toupper(c));
  std::string line =
      fmt::format("Bottleneck: {} (confidence {:.2f}) - {}", cls, k.bottleneck.confidence, k.bottleneck.summary);
  if (s.markdown)
    return fmt::format("**Bottleneck: {} (confidence {:.2f})** - {}\n\n", cls, k.bottleneck.confidence,
                       md_text(k.bottleneck.summary));
  return paint(s, "1", wrap_text(line, s.width, "  ", "    ")) + "\n";
}

// The busiest units the report measures, the binding one first.
std::string limiter_line(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  if (k.limiter.units.empty()) return "";
  std::vector<std::string> parts;
  bool active = false;
  for (size_t i = 0; i < k.limiter.units.size() && i < 4; ++i) {
    const auto& u = k.limiter.units[i];
    parts.push_back(fmt::format("{} {:.1f}%", u.label, u.pct));
    if (u.pct_on_active_sms) parts.back() += fmt::format(" ({:.1f}% on the SMs that ran)", *u.pct_on_active_sms);
    active |= u.pct_on_active_sms.has_value();
  }
  std::string line = fmt::format("Busiest units (% of each unit's peak{}): {}", active ? ", idle SMs counted" : "",
                                 fmt::join(parts, ", "));
  if (s.markdown) return md_text(line) + "\n\n";
  return "  " + line + "\n";
}

// What the report lacks for a class, and how to collect it.
// Markdown: each statement its own block, so a CommonMark renderer never folds
// the advice into the list of problems.
std::string quality_markdown(const analysis::DataQuality& q) {
  std::string out = "This report cannot support a diagnosis of this kernel.\n\n";
  for (const auto& p : q.problems) out += "- " + md_text(p) + "\n";
  if (!q.problems.empty())
    return out + "\nProfile the kernel again: nothing measured in this capture can be trusted.\n\n";
  if (!q.collect.empty())
    out += fmt::format("Collect the missing sections with: {} (or {})\n\n",
                       md_code("ncu " + fmt::format("{}", fmt::join(q.collect, " "))), md_code("--set full"));
  return out;
}

std::string quality_lines(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  const auto& q = k.data_quality;
  if (q.sufficient) return "";
  if (s.markdown) return quality_markdown(q);
  std::string indent = "  ";
  std::string out = indent + "This report cannot support a diagnosis of this kernel.\n";
  for (const auto& p : q.problems) out += indent + "- " + p + "\n";
  if (!q.problems.empty())
    return out + indent + "Profile the kernel again: nothing measured in this capture can be trusted.\n";
  if (!q.collect.empty())
    out +=
        indent + fmt::format("Collect the missing sections with: ncu {} (or --set full)\n", fmt::join(q.collect, " "));
  return out;
}

// What a reader sees beside a value: the quantity's words, else the metric.
const std::string& evidence_label(const analysis::Evidence& e) { return e.label.empty() ? e.metric : e.label; }

// A short table of labelled values with their units; metric names only with
// --verbose (JSON always has them).
std::string evidence_lines(const analysis::Finding& f, const std::string& indent, const TextStyle& s) {
  if (f.evidence.empty()) return "";
  Table t({"", "", "", ""});
  t.right_align({1});
  for (const auto& e : f.evidence) {
    // "76.13 warps per issued instruction": the number right-aligned, its unit beside it.
    std::string value = evidence_value(e), unit;
    if (auto space = value.find(' '); space != std::string::npos) unit = value.substr(space + 1), value.resize(space);
    t.add({evidence_label(e), value, unit, s.metric_names ? e.metric : ""});
  }
  std::string out = indent + "Evidence:\n";
  std::string body = t.str(200);
  // Table::str writes the (empty) header line first: leave it out.
  body.erase(0, body.find('\n') + 1);
  for (auto line : split(body, '\n'))
    if (!trim(line).empty()) out += indent + "  " + std::string(line.substr(0, line.find_last_not_of(' ') + 1)) + "\n";
  return out;
}

std::string source_lines(const analysis::Finding& f, const std::string& indent) {
  std::string out;
  for (const auto& src : f.source) {
    if (src.is_sass()) {  // no line table: the SASS instruction's offset, and the instruction when known
      out += fmt::format("{}Where: {} ({:.0f}%)", indent, src.text, src.share * 100);
      if (!src.sass.empty()) out += "  " + md_code(src.sass);
      out += "\n";
      continue;
    }
    out += fmt::format("{}Where: {}:{} ({:.0f}%)", indent, src.file, src.line, src.share * 100);
    if (!src.text.empty()) out += "  " + md_code(keet::trim(src.text));
    out += "\n";
  }
  return out;
}

// A finding in Markdown: a heading, then explanation, evidence, places, fix and
// ncu's agreeing rules each as their own paragraph or list (blank lines between,
// nothing indented), outside text escaped and names in code spans.
std::string finding_markdown(size_t i, const analysis::Finding& f, const TextStyle&) {
  std::string out = fmt::format("### {}. \\[{}\\] {} — {} ({})\n\n", i, analysis::severity_name(f.severity),
                                md_text(f.title), speedup_text(f), md_code(f.id));
  if (!f.explanation.empty()) out += md_text(f.explanation) + "\n\n";
  if (!f.evidence.empty()) out += "Evidence:\n\n";
  // "*" bullets: a list of its own, never merged with the "- Where:" list after it.
  for (const auto& e : f.evidence) out += "* " + md_text(evidence_label(e)) + ": " + md_text(evidence_value(e)) + "\n";
  if (!f.evidence.empty()) out += "\n";
  for (const auto& src : f.source) {
    std::string where = src.is_sass() ? md_code(src.text) : md_code(fmt::format("{}:{}", src.file, src.line));
    out += fmt::format("- Where: {} ({:.0f}%)", where, src.share * 100);
    std::string code = src.is_sass() ? src.sass : std::string(keet::trim(src.text));
    if (!code.empty()) out += " " + md_code(code);
    out += "\n";
  }
  if (!f.source.empty()) out += "\n";
  if (!f.advice.empty()) out += "Fix:\n\n";
  for (const auto& a : f.advice) out += "- " + md_text(a) + "\n";
  if (!f.advice.empty()) out += "\n";
  std::vector<std::string> rules;
  for (const auto& r : f.ncu_rules) rules.push_back(md_code(r));
  if (!rules.empty()) out += fmt::format("Also flagged by ncu: {}\n\n", fmt::join(rules, ", "));
  return out;
}

std::string finding_block(size_t i, const analysis::Finding& f, const TextStyle& s) {
  if (s.markdown) return finding_markdown(i, f, s);
  std::string sev(analysis::severity_name(f.severity));
  std::string indent = "      ";
  // Wrapped as plain text, then painted, so colour codes never count as columns.
  std::string tag = "[" + sev + "]", prefix = fmt::format("  {}. {} ", i, tag), gain = speedup_text(f);
  std::string head = wrap_text(f.title + "  " + gain, s.width, prefix, indent);
  if (s.color) {  // the gain may have been broken across lines: then it stays plain
    if (auto at = head.rfind(gain); at != std::string::npos) head.replace(at, gain.size(), paint(s, "32", gain));
    head.replace(head.find(tag), tag.size(), paint(s, severity_color(f.severity), tag));
  }
  std::string out = head + "\n";
  out += indent + paint(s, "2", f.id) + "\n";
  if (!f.explanation.empty()) out += wrap_text(f.explanation, s.width, indent, indent) + "\n";
  out += evidence_lines(f, indent, s);
  out += source_lines(f, indent);
  if (!f.advice.empty()) out += indent + "Fix:\n";
  for (const auto& a : f.advice) out += wrap_text(a, s.width, indent + "  - ", indent + "    ") + "\n";
  if (!f.ncu_rules.empty()) out += indent + fmt::format("Also flagged by ncu: {}\n", fmt::join(f.ncu_rules, ", "));
  return out;
}

}  // namespace

std::string human_duration(double ns) { return model::readable_duration(ns); }

std::string evidence_value(const analysis::Evidence& e) { return model::readable(e.value, e.unit); }

std::string ranking_text(const std::vector<analysis::KernelGroup>& groups, const TextStyle& s, size_t max_rows) {
  Table t({"rank", "kernel", "launches", "total time", "share"});
  t.right_align({0, 2, 3, 4});
  for (size_t i = 0; i < groups.size() && i < max_rows; ++i) {
    const auto& g = groups[i];
    bool timed = g.timed > 0;
    t.add({std::to_string(i + 1), abbreviate_name(g.display, 70), std::to_string(g.indices.size()),
           timed ? human_duration(g.total_ns) : "not measured", timed ? fmt::format("{:.1f}%", g.share * 100) : "-"});
  }
  std::string title =
      "Kernels by share of the profiled kernels' GPU time (their ncu durations summed; start with the first):";
  std::string more = groups.size() > max_rows ? fmt::format("  ... {} more\n", groups.size() - max_rows) : "";
  if (s.markdown) return "## " + title + "\n\n```\n" + t.str(70) + "```\n" + more + "\n";
  return paint(s, "1", title) + "\n" + t.str(70) + more + "\n";
}

std::string report_view_text(const analysis::ReportView& v, const TextStyle& s) {
  if (v.empty()) return "";
  std::string title = "The report as a whole:";
  std::string out = s.markdown ? "## " + title + "\n\n" : paint(s, "1", title) + "\n";
  for (const auto& c : v.comparisons)
    out += s.markdown ? "- " + md_text(c.text) + "\n" : wrap_text(c.text, s.width, "  - ", "    ") + "\n";
  if (s.markdown && !v.comparisons.empty()) out += "\n";
  for (const auto& series : v.shapes) {
    std::string head =
        fmt::format("One kernel at {} launch shapes, {}:", series.rows.size(), abbreviate_name(series.display, 70));
    Table t({"launch", "grid", "block", "launches", "median time", "vs fastest"});
    t.right_align({3, 4, 5});
    for (const auto& r : series.rows)
      t.add({fmt::format("#{}", r.index), fmt::format("({},{},{})", r.grid.x, r.grid.y, r.grid.z),
             fmt::format("({},{},{})", r.block.x, r.block.y, r.block.z), std::to_string(r.launches),
             human_duration(r.median_ns), fmt::format("{:.2f}x", r.vs_fastest)});
    if (s.markdown) {
      out += md_text(head) + "\n\n```\n" + t.str(70) + "```\n\n" + md_text(series.verdict) + ".\n\n";
      continue;
    }
    out += wrap_text(head, s.width, "  ", "    ") + "\n";
    std::string table = t.str(70);  // split() views it: it must outlive the loop
    for (auto line : split(table, '\n'))
      if (!trim(line).empty()) out += "    " + std::string(line) + "\n";
    out += wrap_text(series.verdict + ".", s.width, "    ", "    ") + "\n";
  }
  return out + (s.markdown ? "" : "\n");
}

// A library kernel's advice, once for the kernel: how it is called.
std::string library_lines(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  if (k.library.empty()) return "";
  std::string what = k.primitive.empty() ? k.library : k.library + " " + k.primitive;
  std::string head = what + " kernel (recognised from its name): change how it is called, not its code";
  if (s.markdown) {
    std::string out = "**" + md_text(head) + "**\n\n";
    for (const auto& a : k.library_advice) out += "- " + md_text(a) + "\n";
    return out + "\n";
  }
  std::string out = wrap_text(head + (k.library_advice.empty() ? "." : ":"), s.width, "  ", "    ") + "\n";
  for (const auto& a : k.library_advice) out += wrap_text(a, s.width, "    - ", "      ") + "\n";
  return out + "\n";
}

// Findings whose own estimate gains nothing stay off the default page: one
// line names them (--verbose, JSON and HTML's folded list keep them whole).
bool shown(const analysis::Finding& f, const TextStyle& s) { return f.listed || s.metric_names; }

std::string also_noted(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  std::vector<std::string> ids;
  for (const auto& f : k.findings)
    if (!shown(f, s)) ids.push_back(s.markdown ? md_code(f.id) : f.id);
  if (ids.empty()) return "";
  return fmt::format("Also noted, gaining nothing worth a change (-v shows them): {}", fmt::join(ids, ", "));
}

// Markdown: blocks separated by blank lines; each note its own quote.
std::string kernel_markdown(const analysis::KernelDiagnosis& k, const TextStyle& s,
                            const analysis::LaunchSummary* fold) {
  std::string out = header_line(k, s, fold) + "\n" + bottleneck_line(k, s) + limiter_line(k, s);
  out += quality_lines(k, s);
  out += library_lines(k, s);
  if (k.findings.empty() && k.data_quality.sufficient) out += "No finding passed its threshold.\n\n";
  size_t n = 0;
  for (const auto& f : k.findings)
    if (shown(f, s)) out += finding_markdown(++n, f, s);
  if (auto line = also_noted(k, s); !line.empty()) out += line + "\n\n";
  for (const auto& n : k.notes) out += "> Note: " + md_text(n) + "\n\n";
  return out;
}

std::string kernel_text(const analysis::KernelDiagnosis& k, const TextStyle& s, const analysis::LaunchSummary* fold) {
  if (s.markdown) return kernel_markdown(k, s, fold);
  std::string out = header_line(k, s, fold) + bottleneck_line(k, s) + limiter_line(k, s) + "\n";
  out += quality_lines(k, s);
  out += library_lines(k, s);
  if (k.findings.empty() && k.data_quality.sufficient) out += "  No finding passed its threshold.\n";
  size_t n = 0;
  for (const auto& f : k.findings)
    if (shown(f, s)) out += finding_block(++n, f, s) + "\n";
  if (auto line = also_noted(k, s); !line.empty()) out += wrap_text(line, s.width, "  ", "    ") + "\n";
  for (const auto& n : k.notes) out += wrap_text("Note: " + n, s.width, "  ", "    ") + "\n";
  return out + "\n";
}

std::string index_ranges(std::vector<int> indices, size_t max) {
  std::ranges::sort(indices);
  std::vector<std::string> parts;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (parts.size() == max) {
      parts.push_back("...");
      break;
    }
    parts.push_back(j == i ? fmt::format("#{}", indices[i]) : fmt::format("#{}-#{}", indices[i], indices[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string fold_spread(const analysis::LaunchSummary& f) {
  if (f.timed == 0) return fmt::format("{} launches, none timed", f.indices.size());
  std::string text =
      fmt::format("{} launches: median {} ({} to {}), total {}", f.indices.size(), human_duration(f.median_ns),
                  human_duration(f.min_ns), human_duration(f.max_ns), human_duration(f.total_ns));
  if (static_cast<size_t>(f.timed) < f.indices.size()) text += fmt::format(" over {} timed", f.timed);
  return text;
}

std::string analysis_text(const analysis::Diagnosis& d, const std::vector<analysis::KernelGroup>& ranking,
                          const TextStyle& s) {
  std::string out;
  if (s.markdown) out += fmt::format("# KEET analysis of {}\n\n", md_code(d.report_path));
  if (ranking.size() > 1) out += ranking_text(ranking, s);
  for (const auto& k : d.kernels) out += kernel_text(k, s);
  return out;
}

}  // namespace keet::render
