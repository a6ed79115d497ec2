// A throwaway PostgreSQL server for store tests: initdb into a temp folder,
// start on a free loopback port (unix socket in the same folder), create a
// database, stop and delete everything on destruction. Uses Debian's
// postgresql 15 binaries; as root the server runs as the 'postgres' user.
#pragma once
#include <optional>
#include <string>

#include "testing.h"

namespace keet::testing {

class PgServer {
 public:
  // Starts a server, or returns nullopt and sets `why` (binaries missing, ...).
  static std::optional<PgServer> start(std::string& why);
  PgServer(PgServer&& o) noexcept;
  PgServer& operator=(PgServer&&) = delete;
  ~PgServer();
  // postgresql://postgres@127.0.0.1:PORT/DB
  std::string url(const std::string& db = "keet_test") const;
  // Creates database `db` (empty) and returns its URL.
  std::string create_database(const std::string& db);
  // Stops the server as a crash would (immediate: every connection dropped),
  // and starts it again on the same port and data; false if either failed.
  bool stop();
  bool start_again();
  bool restart() { return stop() && start_again(); }

 private:
  PgServer() = default;
  ProcessResult pg_ctl_start() const;
  std::string dir_, as_user_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace keet::testing
