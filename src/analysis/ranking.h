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

}  // namespace keet::analysis
