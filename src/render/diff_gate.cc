#include "render/diff_gate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "render/diff_format.h"
#include "util/json.h"
#include "render/html_parts.h"  // html::esc(): one markup escaper for HTML and JUnit XML

namespace keet::render {
namespace {

// Metrics that moved in their bad direction by more than this explain a slowdown.
constexpr double kMovedEnough = 0.10;
constexpr size_t kCausesShown = 3;

bool moved_badly(const MetricDelta& m) {
  if (!m.change || std::fabs(*m.change) < kMovedEnough || m.key.metric == "gpu__time_duration.sum") return false;
  return m.key.lower_is_better ? *m.change > 0 : *m.change < 0;
}

std::string finding_title(const PairDiff& p, const std::string& id) {
  for (const auto& f : p.after.findings)
    if (f.id == id && !f.title.empty()) return fmt::format("{} ({})", id, f.title);
  return id;
}

std::string pass_message(const PairDiff& p) {
  return fmt::format("{}: {} -> {} ({}, {})", p.after.name, format_duration(p.before.duration_ns),
                     format_duration(p.after.duration_ns), format_change(p.change), verdict_name(p.verdict));
}

nlohmann::json sarif_result(const GateResult& g, const PairDiff& p) {
  nlohmann::json artifact = nlohmann::json::object();
  artifact["physicalLocation"]["artifactLocation"]["uri"] = g.report;
  nlohmann::json logical = nlohmann::json::object();
  logical["name"] = p.after.name;
  logical["kind"] = "function";
  artifact["logicalLocations"] = nlohmann::json::array({logical});
  nlohmann::json r = nlohmann::json::object();
  r["ruleId"] = "keet.regression";
  r["level"] = "error";
  r["message"]["text"] = regression_message(p);
  r["locations"] = nlohmann::json::array({artifact});
  r["properties"]["change"] = p.change ? nlohmann::json(*p.change) : nlohmann::json(nullptr);
  r["properties"]["introduced"] = p.introduced;
  return r;
}

}  // namespace

GateResult gate(DiffResult d, double max_slowdown) {
  GateResult g;
  g.max_slowdown = max_slowdown;
  for (size_t i = 0; i < d.pairs.size(); ++i)
    if (d.pairs[i].change && *d.pairs[i].change > max_slowdown) g.regressions.push_back(i);
  g.diff = std::move(d);
  return g;
}

std::string likely_cause(const PairDiff& p) {
  std::vector<std::string> causes;
  for (const auto& id : p.introduced) causes.push_back("finding introduced: " + finding_title(p, id));
  for (const auto& m : p.metrics)
    if (moved_badly(m) && causes.size() < kCausesShown + p.introduced.size()) causes.push_back("metric moved: " + metric_line(m));
  if (auto shift = p.bottleneck_shift(); !shift.empty()) causes.push_back("bottleneck shift: " + shift);
  if (p.before.launch_text() != p.after.launch_text())
    causes.push_back("launch changed: " + p.before.launch_text() + " -> " + p.after.launch_text());
  if (causes.empty()) return "no finding or key metric explains it (noise? clocks? input size?)";
  std::string out;
  for (const auto& c : causes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

std::string regression_message(const PairDiff& p) {
  return fmt::format("{} ({}) is {} slower: {} -> {}. Likely cause: {}", p.after.name, p.after.launch_text(),
                     format_change(p.change), format_duration(p.before.duration_ns),
                     format_duration(p.after.duration_ns), likely_cause(p));
}

std::string gate_text(const GateResult& g) {
  std::string out = fmt::format("keet gate: {} against {} (max slowdown {:.1f}%)\n", g.report, g.baseline,
                                g.max_slowdown * 100);
  for (size_t i : g.regressions) out += "REGRESSION " + regression_message(g.diff.pairs[i]) + "\n";
  for (size_t i = 0; i < g.diff.pairs.size(); ++i)
    if (std::ranges::find(g.regressions, i) == g.regressions.end()) out += "ok " + pass_message(g.diff.pairs[i]) + "\n";
  for (const auto& s : g.diff.unmatched_after) out += fmt::format("new kernel (no baseline): {}\n", s.name);
  for (const auto& s : g.diff.unmatched_before) out += fmt::format("missing since baseline: {}\n", s.name);
  out += g.failed() ? fmt::format("FAILED: {} regression(s)\n", g.regressions.size()) : "PASSED\n";
  return out;
}

std::string gate_junit(const GateResult& g) {
  std::string cases;
  for (size_t i = 0; i < g.diff.pairs.size(); ++i) {
    const auto& p = g.diff.pairs[i];
    bool bad = std::ranges::find(g.regressions, i) != g.regressions.end();
    cases += fmt::format("    <testcase classname=\"keet.gate\" name=\"{}\" time=\"{:.9f}\">\n", html::esc(p.after.identity()),
                         p.after.duration_ns.value_or(0) / 1e9);
    if (bad)
      cases += fmt::format("      <failure type=\"performance-regression\" message=\"{}\"/>\n",
                           html::esc(regression_message(p)));
    cases += "    </testcase>\n";
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
                     "  <testsuite name=\"keet gate {}\" tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
                     html::esc(g.baseline), g.diff.pairs.size(), g.regressions.size(), cases);
}

std::string gate_sarif(const GateResult& g) {
  nlohmann::json results = nlohmann::json::array();
  for (size_t i : g.regressions) results.push_back(sarif_result(g, g.diff.pairs[i]));
  nlohmann::json rule = nlohmann::json::object();
  rule["id"] = "keet.regression";
  rule["shortDescription"]["text"] = "kernel slower than its baseline";
  rule["fullDescription"]["text"] =
      fmt::format("A kernel's duration grew by more than {:.1f}% over the recorded baseline.", g.max_slowdown * 100);
  nlohmann::json run = nlohmann::json::object();
  run["tool"]["driver"]["name"] = "keet";
  run["tool"]["driver"]["rules"] = nlohmann::json::array({rule});
  run["results"] = results;
  nlohmann::json sarif = nlohmann::json::object();
  sarif["version"] = "2.1.0";
  sarif["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  sarif["runs"] = nlohmann::json::array({run});
  return json_text(sarif, 2) + "\n";
}

}  // namespace keet::render
