// The one way keet starts a process: `keet profile` and `keet tune` (ncu,
// builds, the program, nvdisasm) and `keet serve` (a keet per job step) all
// spawn through here. The child runs in a process group of its own, so that
// ending it also ends whatever it started (a grandchild still holding an
// output pipe cannot keep keet waiting); signals blocked in keet are
// unblocked in the child.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace keet::io {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is searched on PATH when it has no '/'
  std::string cwd;                // "": keet's own
  bool stdin_null = false;        // else the child shares keet's standard input
  // Standard output and error: both into one pipe (Process::output_fd), or
  // each into a file (created, truncated, mode 0600) when its path is given.
  bool output_pipe = false;
  std::string stdout_file, stderr_file;
};

class Process {
 public:
  Process() = default;
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();  // closes the pipe; a child still running is killed with its group

  pid_t pid() const { return pid_; }
  int output_fd() const { return output_; }  // -1 without output_pipe
  // Whether the child has ended; its status is kept for wait().
  bool exited() const;
  void kill_group() const;  // SIGKILL to the child's whole group
  // Waits for the child to end and returns its exit code (128 + signal when a
  // signal ended it); then the rest of its group is killed, since nothing of
  // it may outlive the child. To stop a child still running, kill_group() first.
  int wait();
  // Polls every `poll` until the child ends (its exit code), `limit` passes
  // (0: never) or `keep_going` says stop: then the group is killed and the
  // result is empty, `timed_out` telling which.
  std::optional<int> wait_for(std::chrono::milliseconds limit, const std::function<bool()>& keep_going, bool& timed_out,
                              std::chrono::milliseconds poll = std::chrono::milliseconds(20));

 private:
  friend Result<Process> spawn(const SpawnOptions& opt);
  pid_t pid_ = -1;
  int output_ = -1;
  bool reaped_ = false;
};

// Starts the child. When it cannot be started (not found, not executable)
// the error (exit code Dependency) says why in a few words ("No such file or
// directory"); the caller names what it was starting.
Result<Process> spawn(const SpawnOptions& opt);

}  // namespace keet::io
