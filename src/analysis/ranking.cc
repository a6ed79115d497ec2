#include "analysis/ranking.h"

#include <algorithm>

#include <fmt/format.h>

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

void LaunchGroups::add(const model::Kernel& k) {
  std::string key = fmt::format("{}\x1f{},{},{}\x1f{},{},{}", k.display_name(), k.grid.x, k.grid.y, k.grid.z, k.block.x,
                                k.block.y, k.block.z);
  auto it = position_.find(key);
  if (it == position_.end()) {
    it = position_.emplace(std::move(key), groups_.size()).first;
    auto& g = groups_.emplace_back();
    g.summary.name = k.display_name();
    g.summary.grid = k.grid;
    g.summary.block = k.block;
  }
  Group& g = groups_[it->second];
  g.summary.indices.push_back(k.index);
  if (auto d = kernel_duration_ns(k)) g.timed.emplace_back(*d, k.index);
}

std::vector<LaunchSummary> LaunchGroups::summaries() const {
  std::vector<LaunchSummary> out;
  for (const auto& g : groups_) {
    LaunchSummary s = g.summary;
    s.representative = s.indices.front();
    if (!g.timed.empty()) {
      auto sorted = g.timed;
      std::ranges::sort(sorted);
      s.timed = static_cast<int>(sorted.size());
      s.min_ns = sorted.front().first;
      s.max_ns = sorted.back().first;
      for (const auto& [ns, index] : sorted) s.total_ns += ns;
      s.representative = sorted[(sorted.size() - 1) / 2].second;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace keet::analysis
