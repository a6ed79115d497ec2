// Writes the tests' memory-bound scenario report (tests/support/report_writer)
// to argv[1]: the browser test's upload when ../shared has no fixture. With a
// second path, also an Nsight Systems export of a run with a long idle gap
// (tests/support/timeline_writer): the browser test's timeline upload.
#include <fstream>
#include <iostream>

#include "support/report_writer.h"
#include "support/timeline_writer.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: keet_write_test_report FILE [TIMELINE.sqlite]\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << keet::testing::one_kernel_report("strided_copy", 8192, 256, keet::testing::scenario_metrics(120000));
  if (!out.flush()) return 1;
  if (argc == 3) {
    constexpr int64_t kMs = 1'000'000;
    keet::testing::TimelineWriter w;
    w.kernel({"prepare(float *)", "prepare", 1 * kMs, 31 * kMs});
    for (int i = 0; i < 4; ++i) w.kernel({"solve(float *)", "solve", (631 + i * 40) * kMs, (661 + i * 40) * kMs});
    w.write(argv[2]);
  }
  return 0;
}
