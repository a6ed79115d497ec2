#include "analysis/ranking.h"

#include <algorithm>

#include "analysis/derived.h"

namespace keet::analysis {

void KernelRanking::add(const model::Kernel& k) {
  const std::string& name = k.display_name();
  auto it = position_.find(name);
  if (it == position_.end()) {
    it = position_.emplace(name, groups_.size()).first;
    groups_.emplace_back().name = name;
  }
  KernelGroup& g = groups_[it->second];
  auto duration = kernel_duration_ns(k);
  double ns = duration.value_or(0);
  g.timed += duration.has_value();
  g.indices.push_back(k.index);
  g.total_ns += ns;
  total_ += ns;
}

std::vector<KernelGroup> KernelRanking::groups() const {
  std::vector<KernelGroup> out = groups_;
  for (auto& g : out) {
    g.share = total_ > 0 ? g.total_ns / total_ : 0;
    g.mean_ns = g.total_ns / static_cast<double>(g.indices.size());
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::vector<KernelGroup> rank_kernels(const std::vector<const model::Kernel*>& kernels) {
  KernelRanking r;
  for (const auto* k : kernels) r.add(*k);
  return r.groups();
}

}  // namespace keet::analysis
