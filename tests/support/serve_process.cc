#include "support/serve_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/testing.h"

namespace keet::testing {

KeetProcess::KeetProcess(const std::string& command, const std::vector<std::string>& args,
                         const std::vector<std::string>& env)
    : command_(command) {
  static int counter = 0;
  log_path_ = temp_path("keet_" + command + "_" + std::to_string(getpid()) + "_" + std::to_string(++counter) + ".log");
  std::vector<std::string> argv_s{keet_binary(), command};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (command != "serve") return;
  // "keet serve: listening on http://127.0.0.1:PORT (...)"
  for (int i = 0; i < 200 && port_ == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::string text = log();
    auto at = text.find("listening on http://");
    if (at != std::string::npos) {
      auto colon = text.find(':', at + 20);
      port_ = std::atoi(text.c_str() + colon + 1);
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
  }
}

KeetProcess::~KeetProcess() {
  if (pid_ > 0) kill();
}

std::string KeetProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int KeetProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 400; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  kill();
  return -1;
}

void KeetProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

long KeetProcess::peak_rss_kib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

}  // namespace keet::testing
