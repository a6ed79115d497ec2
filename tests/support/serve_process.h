// A real `keet serve` (or `keet worker`) for end-to-end tests: started on a
// free loopback port, its standard error kept in a file, stopped (SIGTERM) or
// killed (SIGKILL) on demand and always on destruction.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace keet::testing {

class KeetProcess {
 public:
  // `command` is "serve" or "worker"; serve waits until it listens.
  KeetProcess(const std::string& command, const std::vector<std::string>& args,
              const std::vector<std::string>& env = {});
  ~KeetProcess();
  KeetProcess(const KeetProcess&) = delete;
  KeetProcess& operator=(const KeetProcess&) = delete;

  bool ok() const { return port_ > 0 || (command_ == "worker" && pid_ > 0); }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  std::string log() const;    // its standard error so far
  int stop();                 // SIGTERM, then its exit status
  void kill();                // SIGKILL
  long peak_rss_kib() const;  // VmHWM of the running process

 private:
  std::string command_, log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace keet::testing
