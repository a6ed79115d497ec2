// Where to look first: kernels grouped by name and ranked by their share of
// total GPU time in the report.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

struct KernelGroup {
  std::string name;            // demangled
  std::vector<int> indices;    // launches in report order
  double total_ns = 0;         // sum of the launches' duration_ns
  double share = 0;            // of all kernels' time, 0..1
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
  std::vector<KernelGroup> groups_;                       // first-seen order
  double total_ = 0;
};

// --print-summary per-kernel: repeated launches of one kernel with one launch
// configuration (same name, grid and block) folded into one entry, with the
// spread of their durations and a representative launch to diagnose (the
// one with the median duration; the first when none is timed).
struct LaunchSummary {
  std::string name;
  model::Dim3 grid, block;
  std::vector<int> indices;  // report order
  int timed = 0;
  double total_ns = 0, min_ns = 0, max_ns = 0;
  int representative = 0;  // kernel index
  double mean_ns() const { return timed ? total_ns / timed : 0; }
};

class LaunchGroups {
 public:
  void add(const model::Kernel& k);
  std::vector<LaunchSummary> summaries() const;  // first-seen order

 private:
  struct Group {
    LaunchSummary summary;
    std::vector<std::pair<double, int>> timed;  // duration, index
  };
  std::map<std::string, size_t, std::less<>> position_;
  std::vector<Group> groups_;
};

}  // namespace keet::analysis
