#include "app/profile.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

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

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

std::optional<std::string> on_path(const std::string& path_var) {
  for (auto dir : split(path_var, ':'))
    if (!dir.empty() && executable(fs::path(dir) / "ncu")) return (fs::path(dir) / "ncu").string();
  return std::nullopt;
}

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

void kernel_filter(std::vector<std::string>& args, const std::string& kernel) {
  if (kernel.empty()) return;
  if (is_index(kernel)) {  // keet's index counts launches, as ncu's launch-skip does
    args.insert(args.end(), {"--launch-skip", kernel, "--launch-count", "1"});
    return;
  }
  args.insert(args.end(), {"--kernel-name-base", "demangled", "--kernel-name", kernel});
}

class PosixRunner final : public ProcessRunner {
 public:
  Result<int> run(const std::vector<std::string>& argv, const std::function<void(std::string_view)>& sink) override {
    int fds[2];
    if (pipe(fds) != 0) return fail(ExitCode::Dependency, "cannot create a pipe");
    pid_t pid = fork();
    if (pid < 0) return fail(ExitCode::Dependency, "cannot fork");
    if (pid == 0) exec_child(argv, fds);
    close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) sink({buf, static_cast<size_t>(n)});
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return fail(ExitCode::Dependency, "cannot run " + argv[0]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  [[noreturn]] static void exec_child(const std::vector<std::string>& argv, int fds[2]) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
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
  if (auto p = on_path(getenv("PATH"))) return *p;
  if (auto p = in_cuda_dirs()) return *p;
  return fail(ExitCode::Dependency, std::string(kMissing));
}

std::string default_report_path(const std::vector<std::string>& app) {
  std::string base = app.empty() ? "keet-profile" : fs::path(app.front()).filename().string();
  return (base.empty() ? "keet-profile" : base) + ".ncu-rep";
}

std::vector<std::string> ncu_arguments(const std::string& ncu, const ProfileRequest& r, const std::string& report) {
  std::vector<std::string> args = {ncu,          "--set", "full", "--import-source", "yes", "--section", "SourceCounters",
                                   "--force-overwrite", "-o", report};
  kernel_filter(args, r.kernel);
  args.insert(args.end(), r.app.begin(), r.app.end());
  return args;
}

Result<void> check_ncu_outcome(int status, std::string_view output, const std::string& report) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string_view::npos) return fail(ExitCode::Dependency, std::string(kCounterPermission));
  std::error_code ec;
  if (fs::is_regular_file(report, ec)) return {};
  if (output.find("No kernels were profiled") != std::string_view::npos)
    return fail(ExitCode::Dependency, "ncu profiled no kernels: check -k and that the application launches CUDA kernels");
  return fail(ExitCode::Dependency, fmt::format("ncu exited with status {} and wrote no report at {}", status, report));
}

}  // namespace keet::app
