#include "pg_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "testing.h"

namespace fs = std::filesystem;

namespace keet::testing {
namespace {

const char* kBin = "/usr/lib/postgresql/15/bin";

// Asks the kernel for a free port by binding port 0 (a tiny race remains).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

// postgres refuses to run as root, so root runs it as the 'postgres' user.
std::string as(const std::string& user, const std::string& cmd) {
  if (user.empty()) return cmd;
  return "runuser -u " + user + " -- " + cmd;
}

}  // namespace

std::optional<PgServer> PgServer::start(std::string& why) {
  if (!fs::exists(std::string(kBin) + "/initdb")) {
    why = std::string("PostgreSQL 15 binaries not found under ") + kBin + " (apt-get install postgresql)";
    return std::nullopt;
  }
  PgServer s;
  if (geteuid() == 0) {
    if (run_command("id postgres").rc != 0) {
      why = "running as root and no 'postgres' user exists to run the server";
      return std::nullopt;
    }
    s.as_user_ = "postgres";
  }
  char tmpl[] = "/tmp/keet-pg-XXXXXX";
  if (!mkdtemp(tmpl)) {
    why = "cannot create a temp folder";
    return std::nullopt;
  }
  s.dir_ = tmpl;
  if (!s.as_user_.empty()) run_command("chown " + s.as_user_ + " " + shell_quote(s.dir_));
  s.port_ = free_port();
  std::string data = s.dir_ + "/data";
  auto init = run_command(as(s.as_user_, std::string(kBin) + "/initdb -A trust -U postgres -D " + shell_quote(data)));
  if (init.rc != 0) {
    why = "initdb failed: " + init.err;
    return std::nullopt;
  }
  auto up = s.pg_ctl_start();
  if (up.rc != 0) {
    why = "pg_ctl start failed: " + up.err + up.out;
    return std::nullopt;
  }
  s.running_ = true;
  s.create_database("keet_test");
  return s;
}

PgServer::PgServer(PgServer&& o) noexcept
    : dir_(std::move(o.dir_)), as_user_(std::move(o.as_user_)), port_(o.port_), running_(o.running_) {
  o.running_ = false;
  o.dir_.clear();
}

PgServer::~PgServer() {
  if (running_)
    run_command(
        as(as_user_, std::string(kBin) + "/pg_ctl -w -m immediate -D " + shell_quote(dir_ + "/data") + " stop"));
  if (!dir_.empty()) fs::remove_all(dir_);
}

bool PgServer::stop() {
  if (!running_) return true;
  running_ = run_command(as(as_user_,
                            std::string(kBin) + "/pg_ctl -w -m immediate -D " + shell_quote(dir_ + "/data") + " stop"))
                 .rc != 0;
  return !running_;
}

ProcessResult PgServer::pg_ctl_start() const {
  std::string opts = "-p " + std::to_string(port_) + " -k " + dir_ + " -c listen_addresses=127.0.0.1 -c fsync=off";
  return run_command(as(as_user_, std::string(kBin) + "/pg_ctl -w -t 60 -D " + shell_quote(dir_ + "/data") + " -l " +
                                      shell_quote(dir_ + "/log") + " -o " + shell_quote(opts) + " start"));
}

bool PgServer::start_again() {
  if (!running_) running_ = pg_ctl_start().rc == 0;
  return running_;
}

std::string PgServer::url(const std::string& db) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

std::string PgServer::create_database(const std::string& db) {
  run_command(std::string(kBin) + "/psql -q -h 127.0.0.1 -p " + std::to_string(port_) + " -U postgres -d postgres -c " +
              shell_quote("CREATE DATABASE " + db));
  return url(db);
}

}  // namespace keet::testing
