#include "app/profile.h"
#include "app/tool_path.h"
#include "io/process.h"
#include "util/error.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/embedded_data.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

constexpr std::string_view kMissing =
    "ncu (the Nsight Compute CLI) was not found. Install the CUDA toolkit or Nsight Compute, then put ncu on PATH, "
    "set NCU=/path/to/ncu, or pass --ncu /path/to/ncu";

// ERR_NVGPUCTRPERM: the driver only lets administrators read GPU counters.
constexpr std::string_view kCounterPermission =
    "ncu could not read the GPU performance counters (ERR_NVGPUCTRPERM): the NVIDIA driver restricts profiling to "
    "administrators. Either run keet profile as root (sudo), or allow all users: add "
    "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to /etc/modprobe.d/nvidia-profiling.conf and reboot "
    "(or reload the nvidia module); in a container, start it with --cap-add=SYS_ADMIN. "
    "On Windows: NVIDIA Control Panel > Developer > Manage GPU Performance Counters > allow all users. "
    "Details: developer.nvidia.com/ERR_NVGPUCTRPERM";

std::optional<std::string> in_cuda_dirs() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/local", ec))
    if (e.path().filename().string().starts_with("cuda") && executable(e.path() / "bin/ncu"))
      found.push_back(e.path() / "bin/ncu");
  if (found.empty()) return std::nullopt;
  std::ranges::sort(found);
  return found.back().string();  // cuda-12.4 sorts after cuda-11.8
}

bool is_index(const std::string& s) { return !s.empty() && std::ranges::all_of(s, ::isdigit); }

Result<void> kernel_filter(std::vector<std::string>& args, const ProfileRequest& r) {
  if (is_index(r.kernel)) {  // keet's index counts launches, as ncu's launch-skip does
    if (r.skip || r.count)
      return fail(ExitCode::BadInput, "-k " + r.kernel + " is a launch index: it cannot be combined with -s or -c");
    args.insert(args.end(), {"--launch-skip", r.kernel, "--launch-count", "1"});
    return {};
  }
  if (!r.name_base.empty()) args.insert(args.end(), {"--kernel-name-base", r.name_base});
  if (!r.kernel.empty()) args.insert(args.end(), {"--kernel-name", r.kernel});
  if (r.skip) args.insert(args.end(), {"--launch-skip", std::to_string(*r.skip)});
  if (r.count) args.insert(args.end(), {"--launch-count", std::to_string(*r.count)});
  return {};
}

// What ncu collects: keet's default is everything (with source counters and
// the source files), unless --set or --section choose.
void collection(std::vector<std::string>& args, const ProfileRequest& r, const CommandTail& tail) {
  bool chosen = !r.set.empty() || !r.sections.empty();
  if (!chosen || !r.set.empty()) args.insert(args.end(), {"--set", chosen ? r.set : "full"});
  for (const auto& s : r.sections) args.insert(args.end(), {"--section", s});
  if (!chosen) args.insert(args.end(), {"--section", "SourceCounters"});
  bool source_given = std::ranges::any_of(tail.ncu_options, [](const std::string& o) {
    return o == "--import-source" || o.starts_with("--import-source=");
  });
  if (!source_given) args.insert(args.end(), {"--import-source", "yes"});
}

struct NcuOptionTable {
  std::set<std::string, std::less<>> flags;
  std::map<std::string, std::string, std::less<>> owned;  // ncu option -> the keet flag that sets it
};

const NcuOptionTable& ncu_options() {
  static const NcuOptionTable table = [] {
    NcuOptionTable t;
    auto j = nlohmann::json::parse(embedded_file("ncu/options.json").value_or("{}"), nullptr, false);
    if (!j.is_object()) return t;
    // Named copies: items() of a temporary would outlive the object it walks.
    const auto flags = j.value("flags", nlohmann::json::array());
    const auto owned = j.value("owned", nlohmann::json::object());
    for (const auto& f : flags)
      if (f.is_string()) t.flags.insert(f.get<std::string>());
    for (const auto& [k, v] : owned.items())
      if (v.is_string()) t.owned.emplace(k, v.get<std::string>());
    return t;
  }();
  return table;
}

// ncu's process group, for the signal handler that passes Ctrl-C on to it (a
// group of its own no longer receives the terminal's signals).
std::atomic<pid_t> g_child_group{0};

void forward_signal(int sig) {
  if (pid_t g = g_child_group.load(); g > 0) kill(-g, sig);
}

class PosixRunner final : public ProcessRunner {
 public:
  Result<int> run(const std::vector<std::string>& argv, const std::function<void(std::string_view)>& sink,
                  std::chrono::seconds timeout) override {
    auto child = io::spawn({.argv = argv, .output_pipe = true});
    if (!child) return fail(ExitCode::Dependency, "cannot run " + argv[0]);
    g_child_group = child->pid();
    auto old_int = signal(SIGINT, forward_signal), old_term = signal(SIGTERM, forward_signal);
    bool timed_out = pump(*child, timeout, sink);
    if (timed_out) child->kill_group();
    int code = child->wait();  // also kills whatever of the group is left (a grandchild holding the pipe)
    g_child_group = 0;
    signal(SIGINT, old_int);
    signal(SIGTERM, old_term);
    if (timed_out)
      return fail(ExitCode::Dependency,
                  fmt::format("{} ran longer than {} s and was stopped", argv[0], timeout.count()));
    if (code == 127) return fail(ExitCode::Dependency, "cannot run " + argv[0]);
    return code;
  }

 private:
  // Reads the child's output until the pipe closes, the child has exited and
  // its pipe stayed quiet for a moment, or the timeout passes (returns true).
  static bool pump(const io::Process& child, std::chrono::seconds timeout,
                   const std::function<void(std::string_view)>& sink) {
    using Clock = std::chrono::steady_clock;
    auto deadline = Clock::now() + timeout;
    char buf[65536];
    bool exited = false;
    for (;;) {
      if (timeout.count() > 0 && Clock::now() >= deadline) return true;
      pollfd p{child.output_fd(), POLLIN, 0};
      int ready = poll(&p, 1, exited ? 500 : 200);
      if (ready > 0) {
        ssize_t n = read(child.output_fd(), buf, sizeof buf);
        if (n <= 0) return false;  // every writer is gone
        sink({buf, static_cast<size_t>(n)});
        continue;
      }
      if (exited) return false;  // the child is gone and whoever holds its pipe is quiet
      exited = child.exited();
    }
  }
};

}  // namespace

ProcessRunner& system_runner() {
  static PosixRunner runner;
  return runner;
}

Result<std::string> find_ncu(const std::string& flag, const GetEnv& getenv) {
  for (const auto& explicit_path : {flag, getenv("NCU")}) {
    if (explicit_path.empty()) continue;
    if (executable(explicit_path)) return explicit_path;
    return fail(ExitCode::Dependency, fmt::format("{}: not an executable ncu. {}", explicit_path, kMissing));
  }
  if (auto p = on_path("ncu", getenv("PATH"))) return *p;
  if (auto p = in_cuda_dirs()) return *p;
  return fail(ExitCode::Dependency, std::string(kMissing));
}

Result<CommandTail> split_tail(const std::vector<std::string>& tail) {
  const auto& table = ncu_options();
  CommandTail out;
  size_t i = 0;
  for (; i < tail.size() && tail[i].starts_with('-'); ++i) {
    std::string_view word = tail[i];
    std::string_view name = word.substr(0, word.find('='));
    if (auto owned = table.owned.find(name); owned != table.owned.end())
      return fail(ExitCode::BadInput, fmt::format("ncu option {} after --: give it to keet before -- ({}), keet passes "
                                                  "it to ncu",
                                                  name, owned->second));
    out.ncu_options.emplace_back(word);
    bool takes_value = name.size() == word.size() && !table.flags.contains(name);
    if (takes_value && i + 1 < tail.size()) out.ncu_options.push_back(tail[++i]);
  }
  out.app.assign(tail.begin() + static_cast<std::ptrdiff_t>(i), tail.end());
  if (out.app.empty())
    return fail(ExitCode::BadInput,
                "no application to profile: give it after -- (keet profile [options] -- "
                "[ncu options] ./app [args])");
  return out;
}

Result<void> prepare_report_path(const std::string& report, bool force) {
  std::error_code ec;
  if (!fs::exists(report, ec)) return {};
  if (!force)
    return fail(ExitCode::BadInput, fmt::format("{} exists: pass --force-overwrite to replace it, as ncu", report));
  if (!fs::remove(report, ec) && ec)
    return fail(ExitCode::BadInput, fmt::format("{}: cannot remove the old report: {}", report, ec.message()));
  return {};
}

std::string default_report_path(const std::vector<std::string>& app) {
  std::string base = app.empty() ? "keet-profile" : fs::path(app.front()).filename().string();
  return (base.empty() ? "keet-profile" : base) + ".ncu-rep";
}

std::string ncu_report_file(const std::string& output) {
  return output.ends_with(".ncu-rep") ? output : output + ".ncu-rep";
}

Result<std::vector<std::string>> ncu_arguments(const std::string& ncu, const ProfileRequest& r,
                                               const std::string& report) {
  KEET_TRY(tail, split_tail(r.tail));
  std::vector<std::string> args = {ncu};
  collection(args, r, *tail);
  if (r.force) args.push_back("--force-overwrite");
  args.insert(args.end(), {"-o", report});
  KEET_TRY_VOID(kernel_filter(args, r));
  // ncu takes its first non-option word as the application and passes the
  // rest to it; it rejects "--" (2022.3 and 2024.1: "option is ambiguous").
  args.insert(args.end(), tail->ncu_options.begin(), tail->ncu_options.end());
  args.insert(args.end(), tail->app.begin(), tail->app.end());
  return args;
}

void OutputTail::add(std::string_view chunk) {
  // Markers are looked for across the chunk boundary too.
  std::string window = tail_.substr(tail_.size() > 64 ? tail_.size() - 64 : 0) + std::string(chunk);
  for (std::string_view m : {"ERR_NVGPUCTRPERM", "No kernels were profiled"})
    if (window.find(m) != std::string::npos && markers_.find(m) == std::string::npos) markers_ += std::string(m) + "\n";
  tail_ += chunk;
  if (tail_.size() > 2 * kKeep) tail_.erase(0, tail_.size() - kKeep);
}

Result<void> check_ncu_outcome(int status, std::string_view output, const std::string& report) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string_view::npos)
    return fail(ExitCode::Dependency, std::string(kCounterPermission));
  std::error_code ec;
  if (fs::is_regular_file(report, ec)) return {};
  if (output.find("No kernels were profiled") != std::string_view::npos)
    return fail(ExitCode::Dependency,
                "ncu profiled no kernels: check -k and that the application launches CUDA kernels");
  return fail(ExitCode::Dependency, fmt::format("ncu exited with status {} and wrote no report at {}", status, report));
}

}  // namespace keet::app
