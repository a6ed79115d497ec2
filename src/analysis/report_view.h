// The report as a whole: the comparisons an expert opens with before reading
// any one kernel. A hand-written kernel beside the library kernel that runs
// the same operation, setup and fill kernels against the work they serve, and
// one kernel launched at several shapes. Built from one cheap pass over the
// report (names, launch shapes and durations), as the ranking is.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/ranking.h"
#include "model/report.h"

namespace keet::analysis {

// One sentence with the launches it is about.
struct ReportComparison {
  std::string kind;  // "library_beside_user" | "setup_share"
  std::string text;
  std::vector<int> indices;  // the launches it compares (representative launches)
};

// One kernel at several launch shapes: each shape's median time, fastest first.
struct LaunchShapeRow {
  int index = 0;  // the representative launch
  model::Dim3 grid, block;
  size_t launches = 0;
  double median_ns = 0;
  double vs_fastest = 1;  // median over the fastest shape's median
};
struct LaunchShapeSeries {
  std::string display;
  std::vector<LaunchShapeRow> rows;  // fastest first
  std::string verdict;               // what the table proves, one sentence
};

struct ReportView {
  std::vector<ReportComparison> comparisons;
  std::vector<LaunchShapeSeries> shapes;
  bool empty() const { return comparisons.empty() && shapes.empty(); }
};

// Collects what the view needs one launch at a time (a streaming pass keeps
// one small record per launch configuration, not the kernels).
class ReportSurvey {
 public:
  void add(const model::Kernel& k);
  ReportView view() const;

 private:
  struct Family {  // one kernel name: its library operation and time
    std::string display, library, primitive;
    bool setup = false;
    int index = 0;  // first launch
    size_t launches = 0;
    double total_ns = 0;
    int timed = 0;
  };
  LaunchGroups configurations_;
  std::map<std::string, size_t, std::less<>> position_;
  std::vector<Family> families_;
  double total_ns_ = 0;
};

}  // namespace keet::analysis
