#include "service/runner.h"
#include "util/error.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <cstring>

extern char** environ;

namespace keet::service {
namespace {

constexpr size_t kMaxOutput = 64u << 20;  // a result larger than this is refused
constexpr auto kPoll = std::chrono::milliseconds(20);

std::string read_bounded(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string out(limit, '\0');
  in.read(out.data(), static_cast<std::streamsize>(limit));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

class ProcessRunner final : public KeetRunner {
 public:
  ProcessRunner(std::string exe, std::string dir) : exe_(std::move(exe)), dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
  }

  Result<RunOutcome> run(const std::vector<std::string>& args, const std::string& cwd, std::chrono::milliseconds limit,
                         const std::function<bool()>& keep_going) override {
    std::string base = dir_ + "/run-" + std::to_string(getpid()) + "-" + std::to_string(++counter_);
    std::string out_path = base + ".out", err_path = base + ".err";
    KEET_TRY(pid, spawn(args, cwd, out_path, err_path));
    RunOutcome o = wait(*pid, limit, keep_going);
    o.out = read_bounded(out_path, kMaxOutput);
    o.err = read_bounded(err_path, 64 * 1024);
    std::error_code ec;
    std::filesystem::remove(out_path, ec);
    std::filesystem::remove(err_path, ec);
    return o;
  }

 private:
  Result<pid_t> spawn(const std::vector<std::string>& args, const std::string& cwd, const std::string& out,
                      const std::string& err) {
    std::vector<std::string> argv_s{exe_};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // The server blocks SIGINT/SIGTERM for its signal thread; the child gets them back.
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, exe_.c_str(), &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return fail(ExitCode::Dependency, "cannot start " + exe_ + ": " + std::strerror(rc));
    return pid;
  }

  static RunOutcome wait(pid_t pid, std::chrono::milliseconds limit, const std::function<bool()>& keep_going) {
    RunOutcome o;
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      o.timed_out = limit.count() > 0 && std::chrono::steady_clock::now() > deadline;
      o.stopped = !o.timed_out && keep_going && !keep_going();
      if (o.timed_out || o.stopped) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        return o;
      }
      std::this_thread::sleep_for(kPoll);
    }
    kill(-pid, SIGKILL);  // whatever it started is not left behind
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return o;
  }

  std::string exe_, dir_;
  std::atomic<int> counter_{0};
};

}  // namespace

std::unique_ptr<KeetRunner> make_process_runner(std::string executable, std::string scratch_dir) {
  return std::make_unique<ProcessRunner>(std::move(executable), std::move(scratch_dir));
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.string();
}

}  // namespace keet::service
