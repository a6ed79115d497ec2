#include "render/diff_gate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "render/diff_format.h"
#include "util/json.h"

namespace keet::render {
using namespace compare;
namespace {

// Metrics that moved in their bad direction by more than this explain a slowdown.
constexpr double kMovedEnough = 0.10;
constexpr size_t kCausesShown = 3;

// A rate must move by kMovedEnough of its range (10 points); a count by that
// much relatively and by enough of its unit's largest value in the pair to
// matter (MetricDelta::weight): 95 KB more written beside 500 MB read is not a cause.
constexpr double kWeightEnough = 0.02;
bool moved_badly(const MetricDelta& m) {
  if (m.key.metric == "gpu__time_duration.sum") return false;
  if (m.rate()) {
    if (std::fabs(m.points()) < kMovedEnough * 100) return false;
    return m.key.lower_is_better ? m.points() > 0 : m.points() < 0;
  }
  if (!m.change || std::fabs(*m.change) < kMovedEnough || m.weight < kWeightEnough) return false;
  return m.key.lower_is_better ? *m.change > 0 : *m.change < 0;
}

std::string finding_title(const PairDiff& p, const std::string& id) {
  for (const auto& f : p.after.findings)
    if (f.id == id && !f.title.empty()) return fmt::format("{} ({})", id, f.title);
  return id;
}

std::string pass_message(const PairDiff& p) {
  return fmt::format("{}: {} -> {} ({}, {})", p.after.display, format_duration(p.before.duration_ns),
                     format_duration(p.after.duration_ns), format_change(p.change), verdict_name(p.verdict));
}

}  // namespace

std::string likely_cause(const PairDiff& p) {
  std::vector<std::string> causes;
  for (const auto& id : p.introduced) causes.push_back("finding introduced: " + finding_title(p, id));
  for (const auto& m : p.metrics)
    if (moved_badly(m) && causes.size() < kCausesShown + p.introduced.size())
      causes.push_back("metric moved: " + metric_line(m));
  if (auto shift = p.bottleneck_shift(); !shift.empty()) causes.push_back("bottleneck shift: " + shift);
  if (p.before.launch_text() != p.after.launch_text())
    causes.push_back("launch changed: " + p.before.launch_text() + " -> " + p.after.launch_text());
  if (causes.empty()) return "no finding or key metric explains it (noise? clocks? input size?)";
  std::string out;
  for (const auto& c : causes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

std::string regression_message(const PairDiff& p) {
  return fmt::format("{} ({}) is {} slower: {} -> {}. Likely cause: {}", pair_title(p), p.after.launch_text(),
                     format_change(p.change), format_duration(p.before.duration_ns),
                     format_duration(p.after.duration_ns), likely_cause(p));
}

std::string gate_row_message(const GateRow& r) {
  switch (r.status) {
    case GateStatus::Regression:
      return regression_message(*r.pair);
    case GateStatus::Ok:
      return pass_message(*r.pair);
    case GateStatus::Missing:
      return fmt::format("{} ({}) ran in the baseline ({}) but not in this report: removed, renamed or not launched",
                         r.before->display, r.before->launch_text(), format_duration(r.before->duration_ns));
    case GateStatus::New:
      return fmt::format("{} ({}) is new: no baseline kernel of that name ({}), so it is not gated", r.after->display,
                         r.after->launch_text(), format_duration(r.after->duration_ns));
  }
  return "";
}

std::string gate_limits(const GateResult& g) {
  std::string out = fmt::format("max slowdown {:.1f}%", g.max_slowdown * 100);
  if (g.min_delta_ns > 0) out += ", min delta " + format_duration(g.min_delta_ns);
  return out;
}

std::string gate_text(const GateResult& g) {
  std::string out = fmt::format("keet gate: {} against {} ({})\n", g.report, g.baseline, gate_limits(g));
  static constexpr std::string_view labels[] = {"REGRESSION", "ok", "MISSING", "NEW"};
  for (const auto& r : gate_rows(g))
    out += fmt::format("{} {}\n", labels[static_cast<int>(r.status)], gate_row_message(r));
  if (!g.diff.suggested_pairs.empty())
    out += fmt::format(
        "hint: the gate pairs kernels by name only; if a NEW kernel is a MISSING one renamed, gate it "
        "with --pair BASELINE:REPORT, e.g. {}\n",
        pair_flags_text(g.diff.suggested_pairs));
  out += g.failed() ? fmt::format("FAILED: {} regression(s)", g.regressions.size()) : std::string("PASSED");
  out += fmt::format(" ({} paired, {} missing, {} new)\n", g.diff.pairs.size(), g.diff.unmatched_before.size(),
                     g.diff.unmatched_after.size());
  return out;
}

std::string gate_json(const GateResult& g) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& r : gate_rows(g)) {
    nlohmann::json k = {
        {"status", gate_status_name(r.status)},
        {"name", r.kernel().display},
        {"before", r.before ? snapshot_json(*r.before) : nlohmann::json(nullptr)},
        {"after", r.after ? snapshot_json(*r.after) : nlohmann::json(nullptr)},
        {"change", r.pair && r.pair->change ? nlohmann::json(*r.pair->change) : nlohmann::json(nullptr)},
        {"message", gate_row_message(r)}};
    kernels.push_back(std::move(k));
  }
  nlohmann::json j = {{"schema", "keet.gate/1"},
                      {"report", g.report},
                      {"baseline", g.baseline},
                      {"max_slowdown", g.max_slowdown},
                      {"min_delta_ns", g.min_delta_ns},
                      {"passed", !g.failed()},
                      {"regressions", g.regressions.size()},
                      {"missing", g.diff.unmatched_before.size()},
                      {"new", g.diff.unmatched_after.size()},
                      {"kernels", kernels}};
  return json_text(j, 2) + "\n";
}

}  // namespace keet::render
