// Writes the tests' memory-bound scenario report (tests/support/report_writer)
// to argv[1]: the browser test's upload when ../shared has no fixture.
#include <fstream>
#include <iostream>

#include "support/report_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: keet_write_test_report FILE\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << keet::testing::one_kernel_report("strided_copy", 8192, 256, keet::testing::scenario_metrics(120000));
  if (!out.flush()) return 1;
  return 0;
}
