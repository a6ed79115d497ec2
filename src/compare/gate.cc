#include "compare/gate.h"

#include <algorithm>

namespace keet::compare {

GateResult gate(DiffResult d, double max_slowdown, double min_delta_ns) {
  GateResult g;
  g.max_slowdown = max_slowdown;
  g.min_delta_ns = min_delta_ns;
  for (size_t i = 0; i < d.pairs.size(); ++i) {
    const auto& p = d.pairs[i];
    if (!p.change || *p.change <= max_slowdown) continue;
    if (*p.after.duration_ns - *p.before.duration_ns < min_delta_ns) continue;  // too small to matter
    g.regressions.push_back(i);
  }
  g.diff = std::move(d);
  return g;
}

std::string_view gate_status_name(GateStatus s) {
  static constexpr std::string_view names[] = {"regression", "ok", "missing", "new"};
  return names[static_cast<int>(s)];
}

std::vector<GateRow> gate_rows(const GateResult& g) {
  std::vector<GateRow> rows;
  const auto& pairs = g.diff.pairs;
  for (size_t i : g.regressions) rows.push_back({GateStatus::Regression, &pairs[i].before, &pairs[i].after, &pairs[i]});
  for (size_t i = 0; i < pairs.size(); ++i)
    if (std::ranges::find(g.regressions, i) == g.regressions.end())
      rows.push_back({GateStatus::Ok, &pairs[i].before, &pairs[i].after, &pairs[i]});
  for (const auto& s : g.diff.unmatched_before) rows.push_back({GateStatus::Missing, &s, nullptr, nullptr});
  for (const auto& s : g.diff.unmatched_after) rows.push_back({GateStatus::New, nullptr, &s, nullptr});
  return rows;
}

}  // namespace keet::compare
