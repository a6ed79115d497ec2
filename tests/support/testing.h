// Helpers shared by unit, end-to-end and benchmark code.
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keet::testing {

// ../shared beside the project root, when it exists (CI and developers).
std::optional<std::string> shared_dir();
// The oracle's sample reports folder (NVIDIA's examples), if ../shared exists.
std::optional<std::string> oracle_examples();
// The examples folder of ncu 2024.1 (sharedBankConflicts, instructionMix, ...), if
// ../shared/tools/ncu-oracle-2024.1 can name it.
std::optional<std::string> oracle_examples_2024();
// Every .ncu-rep / .nsight-cuprof-report under shared/fixtures, sorted.
std::vector<std::string> fixture_reports();
std::string source_dir();
std::string temp_path(const std::string& name);
// Writes `bytes` to `path` (a test set-up step: a failure throws).
void write_file(const std::string& path, const std::string& bytes);

struct ProcessResult {
  int rc = -1;
  std::string out;
  std::string err;
};
// Runs a command line through /bin/sh; stdout and stderr are captured apart.
ProcessResult run_command(const std::string& cmd);
// Runs build/keet with the given argument string (already shell-quoted).
ProcessResult run_keet(const std::string& args);
std::string shell_quote(const std::string& s);
// One line of ncu's CSV output split into cells: every cell quoted, quotes
// inside doubled, no newline inside a cell. The tests' own splitter, kept
// apart from the product's CSV reader so that it can check that reader.
std::vector<std::string> csv_cells(std::string_view line);

}  // namespace keet::testing

#define KEET_REQUIRE_SHARED()                                                  \
  do {                                                                         \
    if (!keet::testing::shared_dir())                                          \
      GTEST_SKIP() << "../shared is absent: fixture/oracle tests are skipped"; \
  } while (0)
