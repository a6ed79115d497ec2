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
// The folder holding a real nvdisasm and cuobjdump (CUDA 12.4, from Debian's
// non-free nvidia-cuda-toolkit: scripts/fetch-nvdisasm, which fetches them
// into a cache on first use), or nullopt with the reason in `why`. Asked once.
std::optional<std::string> real_nvdisasm_dir(std::string* why = nullptr);
// The CUDA compiler the tests build their own cubins with: $KEET_TEST_NVCC,
// else /usr/local/cuda/bin/nvcc, when it is there.
std::optional<std::string> nvcc_path();
std::string source_dir();
std::string temp_path(const std::string& name);
// Headless Chromium on this machine ("chromium", ...), or nullopt.
std::optional<std::string> chromium();
// Renders `html` in headless Chromium with every host name unresolvable and
// returns the DOM it built; the screenshot is kept as a test artefact,
// build/test-artifacts/<name>.png (checked to be there and not blank-small).
std::string render_in_chromium(const std::string& browser, const std::string& html, const std::string& name);
// The bytes of the file at `path` ("" when it cannot be read).
std::string read_file(const std::string& path);
// Writes `bytes` to `path` (a test set-up step: a failure throws).
void write_file(const std::string& path, const std::string& bytes);
// The same, made executable (a stand-in program).
void write_script(const std::string& path, const std::string& text);
// A folder (under temp_path(`name`)) holding a stand-in nvdisasm: called as
// nvdisasm -b SMxy FILE, it prints one instruction per 16 bytes of FILE
// naming the SM and the offset. For tests of SASS without the toolkit.
std::string stand_in_nvdisasm(const std::string& name);

struct ProcessResult {
  int rc = -1;
  std::string out;
  std::string err;
};
// Runs a command line through /bin/sh; stdout and stderr are captured apart.
ProcessResult run_command(const std::string& cmd);
// The keet executable the end-to-end tests run: $KEET_TEST_BINARY when set
// (scripts/sanitize points it at an ASan+UBSan keet), else this build's keet.
const std::string& keet_binary();
// The build folder these tests belong to (its install rules; schemas and
// clients the tests fetch into it), whichever keet they run.
std::string build_dir();
// Whether keet_binary() runs under AddressSanitizer (asked once, by running it).
bool keet_is_sanitized();
// ASAN_OPTIONS (the current ones) plus hard_rss_limit_mb: the memory cap of an
// ASan keet, which an address-space limit would stop before main (ASan reserves
// terabytes of shadow). `mib` is what an uninstrumented keet may map; room for
// ASan's quarantine, shadow and redzones is added.
std::string asan_options_capped(long mib);
// A shell prefix that caps the memory of the keet command after it at `mib`:
// "ulimit -v KIB; ", or for an ASan keet "ASAN_OPTIONS='...' ".
std::string memory_cap_prefix(long mib);
// A shell prefix for a command whose memory a test measures: an ASan keet keeps
// up to 256 MiB of freed memory resident (its quarantine, which catches uses
// after free), so it runs without one; "" for a release keet.
std::string measured_memory_prefix();
// Runs keet_binary() with the given argument string (already shell-quoted).
ProcessResult run_keet(const std::string& args);
std::string shell_quote(const std::string& s);
// One line of ncu's CSV output split into cells: every cell quoted, quotes
// inside doubled, no newline inside a cell. The tests' own splitter, kept
// apart from the product's CSV reader so that it can check that reader.
std::vector<std::string> csv_cells(std::string_view line);

}  // namespace keet::testing

#define KEET_REQUIRE_SHARED()                                                                                  \
  do {                                                                                                         \
    if (!keet::testing::shared_dir()) GTEST_SKIP() << "../shared is absent: fixture/oracle tests are skipped"; \
  } while (0)
