// Where to look first: kernels grouped by name and ranked by their share of
// total GPU time in the report.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

// The identity is the group's first launch (its display name names the group).
struct KernelGroup : model::KernelIdentity {
  std::vector<int> indices;  // launches in report order
  double total_ns = 0;       // sum of the launches' duration_ns
  double share = 0;          // of all kernels' time, 0..1
  double mean_ns = 0;
  int timed = 0;  // launches whose report holds a duration; 0: time and share are not measured
};

// Launches without a duration count zero time but still appear.
std::vector<KernelGroup> rank_kernels(const std::vector<const model::Kernel*>& kernels);

// The same ranking built one launch at a time, for commands that stream a
// report: it keeps one group per kernel name, not the kernels.
class KernelRanking {
 public:
  void add(const model::Kernel& k);
  std::vector<KernelGroup> groups() const;

 private:
  std::map<std::string, size_t, std::less<>> position_;  // name -> index in groups_
  std::vector<KernelGroup> groups_;                      // first-seen order
  double total_ = 0;
};

// --print-summary per-kernel: repeated launches of one kernel with one launch
// configuration (same name, grid, block and device) folded into one entry, with the
// spread of their durations and a representative launch to diagnose (the
// one with the median duration; the first when none is timed).
// The identity is the representative launch's (its index and duration; the
// device is ncu's device__attribute_display_name, "" when the report lacks it).
struct LaunchSummary : model::KernelIdentity {
  std::vector<int> indices;  // report order
  int timed = 0;
  double total_ns = 0, min_ns = 0, max_ns = 0, median_ns = 0;
  double mean_ns() const { return timed ? total_ns / timed : 0; }
};
// Whether `fold` stands for several launches (null: a kernel shown alone).
inline bool folds_launches(const LaunchSummary* fold) { return fold && fold->indices.size() > 1; }

// When identical launches fold into one diagnosis (analyze's text, markdown
// and HTML): same name, grid, block and device, and durations within noise of the
// fold's shortest: at most `relative` longer, or `absolute_ns` (short kernels
// jitter by about a microsecond whatever their length). A configuration whose
// durations spread over more than `max_folds` bands is one fold with its
// spread stated, so one kernel is never diagnosed more than that many times.
struct FoldRule {
  double relative = 0.25;
  double absolute_ns = 1000;
  size_t max_folds = 3;
};

class LaunchGroups {
 public:
  void add(const model::Kernel& k);
  std::vector<LaunchSummary> summaries() const;  // first-seen order, one per configuration
  // Per configuration, one summary per band of durations within noise
  // (untimed launches join the first band); first-seen order.
  std::vector<LaunchSummary> folds(const FoldRule& rule = {}) const;

 private:
  struct Group {
    LaunchSummary summary;
    std::vector<std::pair<double, int>> timed;  // duration, index
    std::vector<int> untimed;                   // indices of launches with no duration
  };
  std::map<std::string, size_t, std::less<>> position_;
  std::vector<Group> groups_;
};

}  // namespace keet::analysis
