#include "analysis/hotspots.h"

#include "analysis/source_costs.h"

namespace keet::analysis {

Context::Context(const model::Report& r, const model::Kernel& k) : report(r), kernel(k) {}
Context::~Context() = default;

const SourceTable& Context::table() const {
  if (!table_) table_ = std::make_unique<SourceTable>(source_table(report, kernel));
  return *table_;
}

std::vector<SourceRef> hot_lines(const Context& ctx, const std::vector<std::string>& metrics, int n) {
  // Skip the work entirely for kernels without per-PC data.
  bool any = false;
  for (const auto& m : metrics)
    if (const auto* metric = ctx.kernel.find(m); metric && !metric->instances.empty()) any = true;
  if (!any || n <= 0) return {};
  for (const auto& m : metrics) {
    auto refs = hottest_lines(ctx.table(), m, static_cast<size_t>(n));
    if (!refs.empty()) return refs;
  }
  return {};
}

}  // namespace keet::analysis
