// Where `keet tune` does its work: scratch copies of the project, the only
// writes a change may make (to allowed files, never through a symbolic link,
// never outside the tree), and shell steps run in a copy with a time limit and
// their output logged.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/profile.h"

namespace keet::app {

// Copies `root` to `dest` (created), leaving out .git and every path in
// `skip` (the output folder when it lies inside the tree). Symbolic links are
// copied as links.
Result<void> copy_tree(const std::filesystem::path& root, const std::filesystem::path& dest,
                       const std::vector<std::filesystem::path>& skip);

// Writes `text` to tree/rel atomically (a temporary beside it, then rename).
// `rel` must be a safe relative path (util/unified_diff.h) and no part of
// tree/rel may be a symbolic link: the write cannot land outside `tree`.
Result<void> write_in_tree(const std::filesystem::path& tree, const std::string& rel, const std::string& text);
Result<std::string> read_in_tree(const std::filesystem::path& tree, const std::string& rel);

struct StepResult {
  int status = 0;
  bool timed_out = false;
  bool interrupted = false;  // the step was stopped by Ctrl-C (SIGINT passed to it)
  std::string error;         // could not start
  bool ok() const { return error.empty() && !timed_out && !interrupted && status == 0; }
};

// Runs `command` with /bin/sh in `dir`, its output (stdout and stderr) going
// to `log` (at most 64 MiB kept), stopped after `timeout_s` seconds (0: none).
StepResult run_step(ProcessRunner& runner, const std::filesystem::path& dir, const std::string& command, int timeout_s,
                    const std::filesystem::path& log);
// The argv that runs `command` with /bin/sh in `dir` (what ncu is given as the application).
std::vector<std::string> shell_in(const std::filesystem::path& dir, const std::string& command);

// Whether two files hold the same bytes; when not, the 1-based line where they first differ.
std::optional<size_t> first_difference(const std::filesystem::path& a, const std::filesystem::path& b);

// Ctrl-C while tune runs: set by a SIGINT handler installed for the loop.
bool tune_interrupted();
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  void (*old_)(int);
};

}  // namespace keet::app
