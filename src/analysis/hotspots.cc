#include "analysis/hotspots.h"

#include "analysis/sass.h"
#include "analysis/source_costs.h"

namespace keet::analysis {

Context::Context(const model::Report& r, const model::Kernel& k, SassInstructions* s) : report(r), kernel(k), sass(s) {}
Context::~Context() = default;

std::unique_ptr<SourceTable> Context::annotated(SourceTable t) const {
  if (sass)
    if (auto why = sass->annotate(t, report, kernel); !why.empty() && sass_missing_.empty()) sass_missing_ = why;
  return std::make_unique<SourceTable>(std::move(t));
}

const SourceTable& Context::table() const {
  if (!table_) table_ = annotated(source_table(report, kernel));
  return *table_;
}

const SourceTable& Context::table_for(const std::vector<std::string>& metrics) const {
  for (const auto& [names, t] : partial_)
    if (names == metrics) return *t;
  partial_.emplace_back(metrics, annotated(source_table(report, kernel, metrics)));
  return *partial_.back().second;
}

std::vector<SourceRef> hot_lines(const Context& ctx, const std::vector<std::string>& metrics, int n) {
  // Skip the work entirely for kernels without per-PC data.
  bool any = false;
  for (const auto& m : metrics)
    if (const auto* metric = ctx.kernel.find(m); metric && !metric->instances.empty()) any = true;
  if (!any || n <= 0) return {};
  // Only these metrics' lists are decoded: each one's rows and shares are the
  // same in a table over them as in the kernel's whole table.
  std::vector<std::string> names;
  for (const auto& m : metrics) names.push_back(resolve_metric(m));
  const SourceTable& table = ctx.table_for(names);
  for (const auto& m : metrics) {
    auto refs = hottest_lines(table, m, static_cast<size_t>(n));
    if (!refs.empty()) return refs;
  }
  return {};
}

}  // namespace keet::analysis
