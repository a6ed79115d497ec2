// How keet serve computes a job: it runs the keet executable itself, one
// process per job (`keet analyze report -o json=result.json,html=result.html,...`
// reads and analyses the report once and writes every format; a gate is a
// second process). A crashing or runaway analysis cannot take the server
// down, the per-job time limit and cancelling are a kill, and every result is
// byte for byte what the command line gives.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/error.h"

namespace keet::service {

struct RunOutcome {
  int exit_code = -1;
  std::string out;  // standard output (bounded)
  std::string err;  // standard error (bounded)
  bool timed_out = false;
  bool stopped = false;  // keep_going() said stop
};

class KeetRunner {
 public:
  virtual ~KeetRunner() = default;
  // Runs keet with `args` in folder `cwd` ("": the server's); `keep_going` is
  // asked every few tens of milliseconds and a false answer kills the process
  // group, as does `limit`.
  virtual Result<RunOutcome> run(const std::vector<std::string>& args, const std::string& cwd,
                                 std::chrono::milliseconds limit, const std::function<bool()>& keep_going) = 0;
};

// Spawns `executable` (the running keet) in a process group of its own; its
// output goes to files in `scratch_dir`, read back bounded.
std::unique_ptr<KeetRunner> make_process_runner(std::string executable, std::string scratch_dir);
// What a child wrote to `path` (a result file), bounded as its standard
// output is; "" when there is no such file.
std::string read_output(const std::string& path);
// The running executable (/proc/self/exe).
std::string self_executable();

}  // namespace keet::service
