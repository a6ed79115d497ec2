#include "analysis/ranking.h"

#include <algorithm>
#include <map>

#include "analysis/derived.h"

namespace keet::analysis {

std::vector<KernelGroup> rank_kernels(const std::vector<const model::Kernel*>& kernels) {
  std::map<std::string, KernelGroup> groups;
  std::vector<std::string> order;
  double total = 0;
  for (const auto* k : kernels) {
    auto [it, added] = groups.try_emplace(k->display_name());
    if (added) order.push_back(k->display_name());
    auto duration = kernel_duration_ns(*k);
    double ns = duration.value_or(0);
    it->second.timed += duration.has_value();
    it->second.name = k->display_name();
    it->second.indices.push_back(k->index);
    it->second.total_ns += ns;
    total += ns;
  }
  std::vector<KernelGroup> out;
  for (const auto& name : order) {
    KernelGroup g = groups[name];
    g.share = total > 0 ? g.total_ns / total : 0;
    g.mean_ns = g.total_ns / static_cast<double>(g.indices.size());
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace keet::analysis
