#include "render/analysis_text.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/units.h"
#include "render/table.h"
#include "util/strings.h"
#include "render/markdown.h"

namespace keet::render {
namespace {

std::string paint(const TextStyle& s, const char* code, const std::string& text) {
  if (!s.color) return text;
  return fmt::format("\033[{}m{}\033[0m", code, text);
}

const char* severity_color(analysis::Severity sev) {
  switch (sev) {
    case analysis::Severity::High: return "1;31";
    case analysis::Severity::Medium: return "1;33";
    default: return "36";
  }
}

std::string speedup_text(const analysis::Finding& f) {
  if (!f.estimated_speedup) return "gain: not estimated";
  return fmt::format("est. speedup {:.2f}x", *f.estimated_speedup);
}

std::string header_line(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  std::string device = k.device.name.empty() ? "unknown device" : k.device.name;
  if (!k.device.compute_capability.empty()) device += " (CC " + k.device.compute_capability + ")";
  std::string dur = k.duration_ns ? human_duration(*k.duration_ns) : "duration not collected";
  std::string title = fmt::format("[{}] {}", k.index, k.demangled);
  bool geometry = !(k.grid == model::Dim3{} && k.block == model::Dim3{});
  std::string launch = geometry ? fmt::format("grid ({},{},{}) x block ({},{},{})", k.grid.x, k.grid.y, k.grid.z,
                                              k.block.x, k.block.y, k.block.z)
                                : "launch geometry not recorded";
  std::string detail = fmt::format("{}, {}, {}", device, launch, dur);
  if (s.markdown) return fmt::format("## {}\n\n{}\n", md_code(title), md_text(detail));
  return paint(s, "1", title) + "\n  " + detail + "\n";
}

std::string bottleneck_line(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  std::string cls(analysis::class_name(k.bottleneck.cls));
  for (auto& c : cls) c = static_cast<char>(std::toupper(c));
  std::string line = fmt::format("Bottleneck: {} (confidence {:.2f}) - {}", cls, k.bottleneck.confidence,
                                 k.bottleneck.summary);
  if (s.markdown)
    return fmt::format("**Bottleneck: {} (confidence {:.2f})** - {}\n\n", cls, k.bottleneck.confidence,
                       md_text(k.bottleneck.summary));
  return "  " + paint(s, "1", line) + "\n";
}

// The busiest units the report measures, the binding one first.
std::string limiter_line(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  if (k.limiter.units.empty()) return "";
  std::vector<std::string> parts;
  for (size_t i = 0; i < k.limiter.units.size() && i < 4; ++i)
    parts.push_back(fmt::format("{} {:.1f}%", k.limiter.units[i].label, k.limiter.units[i].pct));
  std::string line = fmt::format("Busiest units: {}", fmt::join(parts, ", "));
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
    out += fmt::format("Collect the missing sections with: {} (or {})\n\n", md_code("ncu " + fmt::format("{}", fmt::join(q.collect, " "))),
                       md_code("--set full"));
  return out;
}

std::string quality_lines(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  const auto& q = k.data_quality;
  if (q.sufficient) return "";
  if (s.markdown) return quality_markdown(q);
  std::string indent = "  ";
  std::string out = indent + "This report cannot support a diagnosis of this kernel.\n";
  for (const auto& p : q.problems) out += indent + "- " + p + "\n";
  if (!q.problems.empty()) return out + indent + "Profile the kernel again: nothing measured in this capture can be trusted.\n";
  if (!q.collect.empty())
    out += indent + fmt::format("Collect the missing sections with: ncu {} (or --set full)\n", fmt::join(q.collect, " "));
  return out;
}

std::string evidence_lines(const analysis::Finding& f, const std::string& indent) {
  std::vector<std::string> parts;
  for (const auto& e : f.evidence) parts.push_back(fmt::format("{} = {}", e.metric, evidence_value(e)));
  return indent + "Evidence: " + fmt::format("{}", fmt::join(parts, "; ")) + "\n";
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
std::string finding_markdown(size_t i, const analysis::Finding& f) {
  std::string out = fmt::format("### {}. \\[{}\\] {} — {} ({})\n\n", i, analysis::severity_name(f.severity),
                                md_text(f.title), speedup_text(f), md_code(f.id));
  if (!f.explanation.empty()) out += md_text(f.explanation) + "\n\n";
  std::vector<std::string> evidence;
  for (const auto& e : f.evidence) evidence.push_back(md_code(e.metric) + " = " + md_text(evidence_value(e)));
  if (!evidence.empty()) out += fmt::format("Evidence: {}\n\n", fmt::join(evidence, "; "));
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
  if (s.markdown) return finding_markdown(i, f);
  std::string sev(analysis::severity_name(f.severity));
  std::string indent = "      ";
  std::string out = fmt::format("  {}. {} {}  {}\n", i, paint(s, severity_color(f.severity), "[" + sev + "]"), f.title,
                                paint(s, "32", speedup_text(f)));
  out += indent + paint(s, "2", f.id) + "\n";
  out += indent + f.explanation + "\n";
  out += evidence_lines(f, indent);
  out += source_lines(f, indent);
  if (!f.advice.empty()) out += indent + "Fix:\n";
  for (const auto& a : f.advice) out += indent + "  - " + a + "\n";
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
    t.add({std::to_string(i + 1), g.name, std::to_string(g.indices.size()),
           timed ? human_duration(g.total_ns) : "not measured", timed ? fmt::format("{:.1f}%", g.share * 100) : "-"});
  }
  std::string title = "Kernels by share of total GPU time (start with the first):";
  std::string more = groups.size() > max_rows ? fmt::format("  ... {} more\n", groups.size() - max_rows) : "";
  if (s.markdown) return "## " + title + "\n\n```\n" + t.str(70) + "```\n" + more + "\n";
  return paint(s, "1", title) + "\n" + t.str(70) + more + "\n";
}

// Markdown: blocks separated by blank lines; each note its own quote.
std::string kernel_markdown(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  std::string out = header_line(k, s) + "\n" + bottleneck_line(k, s) + limiter_line(k, s);
  out += quality_lines(k, s);
  if (k.findings.empty() && k.data_quality.sufficient) out += "No finding passed its threshold.\n\n";
  for (size_t i = 0; i < k.findings.size(); ++i) out += finding_markdown(i + 1, k.findings[i]);
  for (const auto& n : k.notes) out += "> Note: " + md_text(n) + "\n\n";
  return out;
}

std::string kernel_text(const analysis::KernelDiagnosis& k, const TextStyle& s) {
  if (s.markdown) return kernel_markdown(k, s);
  std::string out = header_line(k, s) + bottleneck_line(k, s) + limiter_line(k, s) + "\n";
  out += quality_lines(k, s);
  if (k.findings.empty() && k.data_quality.sufficient) out += "  No finding passed its threshold.\n";
  for (size_t i = 0; i < k.findings.size(); ++i) out += finding_block(i + 1, k.findings[i], s) + "\n";
  for (const auto& n : k.notes) out += "  Note: " + n + "\n";
  return out + "\n";
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
