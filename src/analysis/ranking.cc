#include "analysis/ranking.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "analysis/derived.h"

namespace keet::analysis {

void KernelRanking::add(const model::Kernel& k) {
  const std::string& name = k.display_name();
  auto it = position_.find(name);
  if (it == position_.end()) {
    it = position_.emplace(name, groups_.size()).first;
    groups_.emplace_back().model::KernelIdentity::operator=(identity_of(k));
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
  // The device is part of the configuration: launches on two GPUs are two
  // kernels to diagnose (their limits differ), not one.
  std::string device = k.text("device__attribute_display_name").value_or("");
  std::string key = fmt::format("{}\x1f{},{},{}\x1f{},{},{}\x1f{}", k.display_name(), k.grid.x, k.grid.y, k.grid.z,
                                k.block.x, k.block.y, k.block.z, device);
  auto it = position_.find(key);
  if (it == position_.end()) {
    it = position_.emplace(std::move(key), groups_.size()).first;
    auto& g = groups_.emplace_back();
    g.summary.model::KernelIdentity::operator=(identity_of(k));
    g.summary.device = std::move(device);
  }
  Group& g = groups_[it->second];
  g.summary.indices.push_back(k.index);
  if (auto d = kernel_duration_ns(k))
    g.timed.emplace_back(*d, k.index);
  else
    g.untimed.push_back(k.index);
}

namespace {

// The summary of `timed` (sorted by duration) plus `untimed` launches; the
// launch with the median duration stands for them (the first when none is timed).
LaunchSummary summarise(const LaunchSummary& config, std::span<const std::pair<double, int>> timed,
                        std::span<const int> untimed) {
  LaunchSummary s;
  s.model::KernelIdentity::operator=(config);
  s.duration_ns.reset();
  for (const auto& [ns, index] : timed) s.indices.push_back(index), s.total_ns += ns;
  s.indices.insert(s.indices.end(), untimed.begin(), untimed.end());
  std::ranges::sort(s.indices);
  s.index = s.indices.front();
  if (!timed.empty()) {
    s.timed = static_cast<int>(timed.size());
    s.min_ns = timed.front().first;
    s.max_ns = timed.back().first;
    s.median_ns = timed[(timed.size() - 1) / 2].first;
    s.index = timed[(timed.size() - 1) / 2].second;
    s.duration_ns = s.median_ns;
  }
  return s;
}

}  // namespace

std::vector<LaunchSummary> LaunchGroups::summaries() const {
  std::vector<LaunchSummary> out;
  for (const auto& g : groups_) {
    auto sorted = g.timed;
    std::ranges::sort(sorted);
    out.push_back(summarise(g.summary, sorted, g.untimed));
  }
  return out;
}

std::vector<LaunchSummary> LaunchGroups::folds(const FoldRule& rule) const {
  std::vector<LaunchSummary> out;
  for (const auto& g : groups_) {
    auto sorted = g.timed;
    std::ranges::sort(sorted);
    const auto& untimed = g.untimed;
    // Bands: a launch starts a new band when it is beyond noise of the band's shortest.
    std::vector<size_t> starts{0};
    for (size_t i = 1; i < sorted.size(); ++i) {
      double first = sorted[starts.back()].first;
      if (sorted[i].first > std::max(first * (1 + rule.relative), first + rule.absolute_ns)) starts.push_back(i);
    }
    if (sorted.empty() || starts.size() > rule.max_folds) starts = {0};
    std::span<const std::pair<double, int>> all(sorted);
    for (size_t b = 0; b < starts.size(); ++b) {
      size_t end = b + 1 < starts.size() ? starts[b + 1] : sorted.size();
      out.push_back(summarise(g.summary, all.subspan(starts[b], end - starts[b]),
                              b == 0 ? std::span<const int>(untimed) : std::span<const int>()));
    }
  }
  // First-seen order: by each fold's first launch.
  std::ranges::stable_sort(out, {}, [](const LaunchSummary& s) { return s.indices.front(); });
  return out;
}

}  // namespace keet::analysis
