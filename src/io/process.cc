#include "io/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

extern char** environ;

namespace keet::io {
namespace {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// posix_spawn's attributes and file actions, released however spawn() returns.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), output_(std::exchange(other.output_, -1)), reaped_(other.reaped_) {}

Process& Process::operator=(Process&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(output_, other.output_);
  std::swap(reaped_, other.reaped_);
  return *this;
}

Process::~Process() {
  if (output_ >= 0) close(output_);
  if (pid_ > 0 && !reaped_) {
    kill_group();
    wait();
  }
}

bool Process::exited() const {
  if (reaped_) return true;
  siginfo_t info{};  // WNOWAIT: the status stays for wait()
  return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
}

void Process::kill_group() const {
  if (pid_ > 0) kill(-pid_, SIGKILL);
}

int Process::wait() {
  siginfo_t info{};  // WNOWAIT: the child stays a zombie, so its group id stays its own while the rest is killed
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  kill_group();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return exit_code_of(status);
}

std::optional<int> Process::wait_for(std::chrono::milliseconds limit, const std::function<bool()>& keep_going,
                                     bool& timed_out, std::chrono::milliseconds poll) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  timed_out = false;
  while (!exited()) {
    timed_out = limit.count() > 0 && std::chrono::steady_clock::now() > deadline;
    if (timed_out || (keep_going && !keep_going())) {
      kill_group();
      wait();
      return std::nullopt;
    }
    std::this_thread::sleep_for(poll);
  }
  return wait();
}

Result<Process> spawn(const SpawnOptions& opt) {
  if (opt.argv.empty()) return fail(ExitCode::Dependency, "nothing to run");
  Process p;
  int fds[2] = {-1, -1};
  if (opt.output_pipe && pipe2(fds, O_CLOEXEC) != 0) return fail(ExitCode::Dependency, "cannot create a pipe");
  SpawnSetup s;
  if (opt.stdin_null) posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
  if (opt.output_pipe) {
    posix_spawn_file_actions_adddup2(&s.actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&s.actions, fds[1], 2);
  }
  if (!opt.stdout_file.empty())
    posix_spawn_file_actions_addopen(&s.actions, 1, opt.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!opt.stderr_file.empty())
    posix_spawn_file_actions_addopen(&s.actions, 2, opt.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!opt.cwd.empty()) posix_spawn_file_actions_addchdir_np(&s.actions, opt.cwd.c_str());
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&s.attr, 0);
  std::vector<char*> argv;
  for (const auto& a : opt.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &s.actions, &s.attr, argv.data(), environ);
  if (opt.output_pipe) close(fds[1]);
  if (rc != 0) {
    if (opt.output_pipe) close(fds[0]);
    return fail(ExitCode::Dependency, std::strerror(rc));
  }
  p.pid_ = pid;
  p.output_ = opt.output_pipe ? fds[0] : -1;
  return p;
}

}  // namespace keet::io
