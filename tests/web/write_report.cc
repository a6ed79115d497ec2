// Writes the tests' reports for tests that run outside C++:
//   keet_write_test_report FILE [TIMELINE.sqlite]
//     the memory-bound scenario report (tests/support/report_writer): the
//     browser test's upload when ../shared has no fixture; with a second path,
//     also an Nsight Systems export of a run with a long idle gap
//     (tests/support/timeline_writer): the browser test's timeline upload.
//   keet_write_test_report --transpose-example SOURCE FILE
//     KEET's transpose example profiled elsewhere (transpose_example_report):
//     the Neovim test's report.
//   keet_write_test_report --transpose-example-without-lineinfo SOURCE FILE
//     the same built without -lineinfo (no line table): the kernel found by name.
#include <fstream>
#include <iostream>
#include <string_view>

#include "support/report_writer.h"
#include "support/timeline_writer.h"

namespace {

bool write(const char* path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--transpose-example")
    return write(argv[3], keet::testing::transpose_example_report(argv[2])) ? 0 : 1;
  if (argc == 4 && std::string_view(argv[1]) == "--transpose-example-without-lineinfo")
    return write(argv[3], keet::testing::transpose_example_report(argv[2], false)) ? 0 : 1;
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: keet_write_test_report FILE [TIMELINE.sqlite] | --transpose-example[-without-lineinfo] SOURCE "
                 "FILE\n";
    return 2;
  }
  if (!write(argv[1],
             keet::testing::one_kernel_report("strided_copy", 8192, 256, keet::testing::scenario_metrics(120000))))
    return 1;
  if (argc == 3) {
    constexpr int64_t kMs = 1'000'000;
    keet::testing::TimelineWriter w;
    w.kernel({"prepare(float *)", "prepare", 1 * kMs, 31 * kMs});
    for (int i = 0; i < 4; ++i) w.kernel({"solve(float *)", "solve", (631 + i * 40) * kMs, (661 + i * 40) * kMs});
    w.write(argv[2]);
  }
  return 0;
}
