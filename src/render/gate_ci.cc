// The gate's reports for CI systems: JUnit XML (the Jenkins/Ant schema),
// Markdown for a GitHub step summary, and GitHub workflow commands.
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "render/diff_format.h"
#include "render/diff_gate.h"
#include "render/html_parts.h"  // html::esc(): one markup escaper for HTML and JUnit XML
#include "render/markdown.h"

namespace keet::render {
using namespace compare;
namespace {

// ------------------------------------------------------------ JUnit XML

// html::esc gives valid UTF-8 with every character XML 1.0 forbids (C0
// controls but tab, CR, LF) shown in caret notation. XML 1.0 also forbids
// U+FFFE and U+FFFF, and an attribute value's line breaks and tabs are
// normalised to spaces by every parser unless written as references.
std::string xml_text(std::string_view s) {
  std::string out = html::esc(s);
  for (std::string_view bad : {"\xEF\xBF\xBE", "\xEF\xBF\xBF"})
    for (size_t at = out.find(bad); at != std::string::npos; at = out.find(bad, at)) out.replace(at, 3, "\xEF\xBF\xBD");
  return out;
}

std::string xml_attr(std::string_view s) {
  std::string out;
  for (char c : xml_text(s)) {
    if (c == '\n')
      out += "&#10;";
    else if (c == '\r')
      out += "&#13;";
    else if (c == '\t')
      out += "&#9;";
    else
      out += c;
  }
  return out;
}

std::string seconds(std::optional<double> ns) { return fmt::format("{:.9f}", ns.value_or(0) / 1e9); }

// `name` is unique within the suite: repeated launches of one kernel and
// launch shape carry their occurrence ("... launch 2"), stable across captures.
std::string junit_case(const GateRow& r, const std::string& name) {
  static constexpr std::string_view classes[] = {"keet.gate", "keet.gate", "keet.gate.missing", "keet.gate.new"};
  const auto& k = r.kernel();
  std::string out = fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
                                classes[static_cast<int>(r.status)], xml_attr(name), seconds(k.duration_ns));
  std::string message = gate_row_message(r);
  switch (r.status) {
    case GateStatus::Ok:
      return out + "/>\n";
    case GateStatus::Regression:
      return out +
             fmt::format(
                 ">\n      <failure type=\"performance-regression\" message=\"{}\">{}</failure>\n    </testcase>\n",
                 xml_attr(message), xml_text(message));
    case GateStatus::Missing:
    case GateStatus::New:
      // <skipped> takes text only in the Jenkins schema (no message attribute).
      return out + fmt::format(">\n      <skipped>{}</skipped>\n    </testcase>\n", xml_text(message));
  }
  return out + "/>\n";
}

double total_ns(const GateResult& g) {
  double sum = 0;
  for (const auto& r : gate_rows(g)) sum += r.after ? r.after->duration_ns.value_or(0) : 0;
  return sum;
}

std::string junit_property(std::string_view name, std::string_view value) {
  return fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, xml_attr(value));
}

// ------------------------------------------------------------ Markdown

std::string md_duration(const KernelSnapshot* s) { return s ? format_duration(s->duration_ns) : "-"; }

std::string md_row(const GateRow& r) {
  std::string change = r.pair ? format_change(r.pair->change) : "-";
  std::string details;
  switch (r.status) {
    case GateStatus::Regression:
      details = "likely cause: " + likely_cause(*r.pair);
      break;
    case GateStatus::Ok:
      details = std::string(verdict_name(r.pair->verdict));
      break;
    case GateStatus::Missing:
      details = "in the baseline, not in this report (removed, renamed or not launched)";
      break;
    case GateStatus::New:
      details = "no baseline kernel of that name: not gated";
      break;
  }
  auto status = gate_status_name(r.status);
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n",
                     r.status == GateStatus::Regression ? fmt::format("**{}**", status) : std::string(status),
                     md_code(r.pair ? pair_title(*r.pair) : r.kernel().display, true),
                     md_text(r.kernel().launch_text()), md_duration(r.before), md_duration(r.after), md_text(change),
                     md_text(details));
}

// ------------------------------------------------------------ GitHub

std::string percent_encode(std::string_view s, std::string_view special) {
  std::string out;
  for (char c : s) {
    if (special.find(c) != std::string_view::npos)
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

std::string github_command(const GateResult& g, const GateRow& r) {
  static constexpr std::string_view commands[] = {"error", "", "warning", "notice"};
  static constexpr std::string_view titles[] = {"performance regression", "", "kernel missing since the baseline",
                                                "new kernel, not gated"};
  int s = static_cast<int>(r.status);
  const auto& k = r.kernel();
  std::string props;
  if (auto file = source_path_under(k.source, g.source_root); !file.empty())
    props = fmt::format("file={},line={},", github_property(file), k.source.line);
  props += "title=" + github_property(fmt::format("keet gate: {}: {}", titles[s], k.display));
  return fmt::format("::{} {}::{}\n", commands[s], props, github_message(gate_row_message(r)));
}

}  // namespace

std::string github_property(std::string_view s) { return percent_encode(s, "%\r\n:,"); }
std::string github_message(std::string_view s) { return percent_encode(s, "%\r\n"); }

std::string source_path_under(const SourceLocation& s, const std::string& root) {
  namespace fs = std::filesystem;
  if (s.empty()) return "";
  fs::path file = fs::path(s.file).lexically_normal();
  if (root.empty() || file.is_relative()) return file.generic_string();
  std::error_code ec;
  fs::path base = fs::absolute(fs::path(root), ec).lexically_normal();
  if (ec) return file.generic_string();
  fs::path rel = file.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return file.generic_string();
  return rel.generic_string();
}

std::string gate_junit(const GateResult& g) {
  auto rows = gate_rows(g);
  std::string cases;
  std::map<std::string, int> total, seen;
  for (const auto& r : rows) ++total[r.kernel().identity()];
  for (const auto& r : rows) {
    std::string name = r.kernel().identity();
    int n = ++seen[name];
    if (total[name] > 1) name += fmt::format(" launch {}", n);
    cases += junit_case(r, name);
  }
  size_t tests = rows.size(), failures = g.regressions.size();
  size_t skipped = g.diff.unmatched_before.size() + g.diff.unmatched_after.size();
  std::string time = seconds(total_ns(g));
  std::string suite_attrs =
      fmt::format("name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\"",
                  xml_attr("keet gate: " + g.report + " against " + g.baseline), tests, failures, skipped, time);
  if (!g.timestamp.empty()) suite_attrs += fmt::format(" timestamp=\"{}\"", xml_attr(g.timestamp));
  if (!g.hostname.empty()) suite_attrs += fmt::format(" hostname=\"{}\"", xml_attr(g.hostname));
  std::string properties = junit_property("report", g.report) + junit_property("baseline", g.baseline) +
                           junit_property("max_slowdown", fmt::format("{}", g.max_slowdown)) +
                           junit_property("min_delta_ns", fmt::format("{}", g.min_delta_ns));
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"keet gate\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{}\">\n"
      "  <testsuite {} id=\"0\" package=\"keet.gate\">\n"
      "    <properties>\n{}    </properties>\n{}"
      "  </testsuite>\n</testsuites>\n",
      tests, failures, time, suite_attrs, properties, cases);
}

std::string gate_markdown(const GateResult& g) {
  std::string verdict = g.failed() ? fmt::format("FAILED, {} regression(s)", g.regressions.size()) : "PASSED";
  std::string out = fmt::format("## keet gate: {}\n\n", verdict);
  out += fmt::format("{} against {} ({}): {} paired, {} missing, {} new.\n\n", md_code(g.report), md_text(g.baseline),
                     md_text(gate_limits(g)), g.diff.pairs.size(), g.diff.unmatched_before.size(),
                     g.diff.unmatched_after.size());
  auto rows = gate_rows(g);
  if (rows.empty()) return out + "No kernels to compare.\n";
  out +=
      "| status | kernel | launch | baseline | current | change | details |\n"
      "|---|---|---|---:|---:|---:|---|\n";
  for (const auto& r : rows) out += md_row(r);
  return out;
}

std::string gate_github(const GateResult& g) {
  std::string out;
  for (const auto& r : gate_rows(g)) {
    if (r.status != GateStatus::Ok) out += github_command(g, r);
    // A plain log line never starts with "::", so a kernel name cannot pose as a command.
    else
      out += "keet gate: ok " + github_message(gate_row_message(r)) + "\n";
  }
  out +=
      fmt::format("keet gate: {} ({} paired, {} missing, {} new; {})\n",
                  g.failed() ? fmt::format("FAILED, {} regression(s)", g.regressions.size()) : "PASSED",
                  g.diff.pairs.size(), g.diff.unmatched_before.size(), g.diff.unmatched_after.size(), gate_limits(g));
  return out;
}

}  // namespace keet::render
