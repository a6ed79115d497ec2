#include "service/lsp_index.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/source_costs.h"

namespace keet::service {
// Named, not anonymous: unity builds put this file beside mcp.cc and api.cc.
namespace lsp_index_impl {

constexpr size_t kStallsPerLine = 3;

std::string bottleneck_of(const analysis::KernelDiagnosis& d) {
  if (!d.data_quality.sufficient || d.bottleneck.cls == analysis::BottleneckClass::Unknown) return "insufficient data";
  return fmt::format("{}-bound", analysis::class_name(d.bottleneck.cls));
}

std::string cost_label(std::string_view metric) {
  if (metric == analysis::resolve_metric("samples")) return "stall samples";
  if (metric == analysis::resolve_metric("instructions")) return "executed instructions";
  return std::string(metric);
}

LspKernel kernel_summary(const std::string& report_path, const model::Report& head, const model::Kernel& k,
                         const analysis::KernelDiagnosis& d, const analysis::SourceTable& t) {
  LspKernel s;
  s.report = report_path;
  s.identity = d;
  s.function = k.function.empty() ? k.display_name() : k.function;
  s.bottleneck = bottleneck_of(d);
  if (!d.findings.empty()) {
    s.top_finding = d.findings.front().title;
    s.top_finding_id = d.findings.front().id;
    s.top_speedup = d.findings.front().estimated_speedup;
  }
  s.cost_metric = cost_label(t.sorted_by);
  if (auto it = t.totals.find(t.sorted_by); it != t.totals.end()) s.cost_total = it->second;
  s.start = analysis::kernel_location(head, k);
  return s;
}

std::vector<std::pair<std::string, double>> top_stalls(const analysis::SourceLineCost& r) {
  std::vector<std::pair<std::string, double>> out;
  double samples = r.samples();
  if (samples <= 0) return out;
  for (const auto& [reason, value] : r.stalls()) {
    if (out.size() == kStallsPerLine || value <= 0) break;
    out.emplace_back(reason, value / samples);
  }
  return out;
}

// The findings that name this line among their hot lines.
std::vector<LspLineFinding> findings_on(const analysis::KernelDiagnosis& d, const std::string& file, int line) {
  std::vector<LspLineFinding> out;
  for (const auto& f : d.findings)
    for (const auto& ref : f.source)
      if (ref.line == line && ref.file == file)
        out.push_back({f.id, f.title, f.severity, ref.share, f.estimated_speedup});
  return out;
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = path.size();
    auto part = path.substr(start, end - start);
    if (!part.empty() && part != ".") out.push_back(part);
    start = end + 1;
  }
  return out;
}

}  // namespace lsp_index_impl

void LspIndex::add(const std::string& report_path, const model::Report& head, const model::Kernel& k,
                   const analysis::KernelDiagnosis& d) {
  using namespace lsp_index_impl;
  auto table = analysis::source_table(head, k);
  size_t id = kernels.size(), before = lines.size();
  kernels.push_back(kernel_summary(report_path, head, k, d, table));
  if (table.level == analysis::SourceLevel::Source)
    for (const auto& r : table.lines) {
      if (r.is_sass() || r.file.empty()) continue;
      double cost = r.value(table.sorted_by);
      auto on_line = findings_on(d, r.file, r.line);
      if (cost <= 0 && on_line.empty()) continue;
      lines.push_back({r.file, r.line, id, table.share(r, table.sorted_by), cost, r.samples(),
                       r.executed_instructions(), top_stalls(r), std::move(on_line)});
    }
  if (lines.size() > before) return;
  auto& gap = kernels.back().line_gap;
  gap = table.level == analysis::SourceLevel::None   ? LspLineGap::NoSourceCounters
        : table.level == analysis::SourceLevel::Sass ? LspLineGap::NoLineTable
                                                     : LspLineGap::Unmapped;
  notes.push_back(fmt::format("{}: no source lines: {}", d.display_name(), line_gap_text(gap)));
}

std::string line_gap_text(LspLineGap gap) {
  switch (gap) {
    case LspLineGap::None:
      break;
    case LspLineGap::NoSourceCounters:
      return "the report has no per-instruction source counters (profile with ncu --set full or --section "
             "SourceCounters)";
    case LspLineGap::NoLineTable:
      return "its cubin has no line table (built without -lineinfo: compile with -lineinfo and profile again)";
    case LspLineGap::Unmapped:
      return "its line table maps none of the instructions with cost to a source line";
  }
  return "";
}

int shared_suffix(std::string_view report_path, std::string_view file) {
  using lsp_index_impl::components;
  auto a = components(report_path), b = components(file);
  int n = 0;
  while (n < static_cast<int>(a.size()) && n < static_cast<int>(b.size()) && a[a.size() - 1 - n] == b[b.size() - 1 - n])
    ++n;
  return n;
}

int rooted_match(std::string_view report_path, std::string_view file, std::string_view source_root) {
  using lsp_index_impl::components;
  auto root = components(source_root), f = components(file);
  if (f.size() <= root.size() || !std::equal(root.begin(), root.end(), f.begin())) return 0;
  size_t relative = f.size() - root.size();
  return static_cast<size_t>(shared_suffix(report_path, file)) >= relative ? static_cast<int>(relative) : 0;
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

}  // namespace keet::service
