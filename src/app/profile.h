// `keet profile`'s moving parts: finding ncu, the collection it runs, running
// it behind a narrow ProcessRunner (tests substitute a fake), and turning
// ncu's failures into guidance.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::app {

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs argv[0] (searched on PATH) in a process group of its own with its
  // output streamed to `sink`; returns the exit status, or an error when it
  // could not start or ran past `timeout` (0: none). When it ends, or times
  // out, the rest of its group is killed: a grandchild still holding the
  // output pipe cannot keep keet waiting.
  virtual Result<int> run(const std::vector<std::string>& argv, const std::function<void(std::string_view)>& sink,
                          std::chrono::seconds timeout = std::chrono::seconds(0)) = 0;
};
ProcessRunner& system_runner();

struct ProfileRequest {
  std::string ncu;                      // --ncu
  std::string kernel;                   // -k: index, name, or regex:<pattern>
  std::string output;                   // -o/--export; default derived from the application
  std::vector<std::string> tail;        // after --: ncu's own options, then the application and its arguments
  int timeout_s = 0;                    // --timeout; 0: none
  bool force = false;                   // --force-overwrite: replace an existing report
  std::string set;                      // --set; "" with no --section: full
  std::vector<std::string> sections;    // --section, repeatable
  std::string name_base;                // --kernel-name-base; "": ncu's default (function)
  std::optional<uint64_t> skip, count;  // -s/--launch-skip, -c/--launch-count
};

// The words after --, split as ncu reads them: its options (any ncu option
// keet does not set itself, passed on verbatim), then the application. An
// option takes one value unless ncu lists it as a flag (data/ncu/options.json)
// or it is written --opt=value. Options keet sets from its own flags are
// refused, naming the keet flag.
struct CommandTail {
  std::vector<std::string> ncu_options;
  std::vector<std::string> app;
};
Result<CommandTail> split_tail(const std::vector<std::string>& tail);

using GetEnv = std::function<std::string(const std::string&)>;
// --ncu, then $NCU, then PATH, then /usr/local/cuda*/bin (newest first).
Result<std::string> find_ncu(const std::string& flag, const GetEnv& getenv);
// "./build/app" -> "app.ncu-rep".
std::string default_report_path(const std::vector<std::string>& app);
// The file ncu writes for `-o name`: ncu appends ".ncu-rep" unless the name
// already ends with it ("out" -> "out.ncu-rep").
std::string ncu_report_file(const std::string& output);
// The full ncu command line: the collection (--set full, source counters and
// imported source unless --set/--section say otherwise), --force-overwrite
// with -f, the report path, the kernel filter, the options passed through,
// then the application.
Result<std::vector<std::string>> ncu_arguments(const std::string& ncu, const ProfileRequest& r,
                                               const std::string& report);
// Refuses to replace an existing report unless -f was given (as ncu); with
// -f the old file is removed first, so a failed run never analyses it.
Result<void> prepare_report_path(const std::string& report, bool force);
// Explains what went wrong from ncu's exit status and output (exit 3), or ok.
Result<void> check_ncu_outcome(int status, std::string_view output, const std::string& report);

// What check_ncu_outcome needs from ncu's output, kept without holding all of
// it: ncu can print hundreds of megabytes.
class OutputTail {
 public:
  void add(std::string_view chunk);
  std::string text() const { return markers_ + tail_; }  // the markers seen, then the last bytes

 private:
  static constexpr size_t kKeep = 64 * 1024;
  std::string tail_, markers_;
};

}  // namespace keet::app
