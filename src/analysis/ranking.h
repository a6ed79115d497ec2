// Where to look first: kernels grouped by name and ranked by their share of
// total GPU time in the report.
#pragma once
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

}  // namespace keet::analysis
