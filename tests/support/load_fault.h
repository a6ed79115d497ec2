// keet serve under load and faults, on loopback only and bounded in time and
// bytes: the checks of docs/server.md's "Load and faults" section. One plan
// runs in a short form in the test suite (tests/e2e/serve_load_test.cc) and
// in a long form from scripts/bench (the keet_load_fault program), which
// prints the figures the docs quote.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace keet::testing {

// A TCP connection to 127.0.0.1:port (-1 when refused).
int connect_loopback(int port);
// Sends all of `bytes` (false once the server has closed the connection).
bool send_all(int fd, std::string_view bytes);

struct LoadFaultPlan {
  // A burst: `clients` at once upload `reports` between them, a new
  // connection each, never retrying: every upload must be accepted and every
  // job end done, none lost, none run twice.
  int clients = 32;
  int reports = 64;
  // Clients without the token each send a body of `big_bytes`: each must be
  // refused on its headers, and the server's peak memory stay under
  // `big_peak_mib` however large the bodies are.
  int big_clients = 4;
  size_t big_bytes = 64u << 20;
  long big_peak_mib = 256;
  // Slow clients (a byte a second of headers or of body) and held event
  // streams, while a normal client's requests must each be answered within
  // `slow_deadline_ms`.
  int slow_clients = 64;
  int slow_seconds = 3;
  long slow_deadline_ms = 1000;
  // PostgreSQL (skipped without its binaries) restarts while jobs run; no
  // job is lost and keet is not restarted.
  int postgres_jobs = 8;
  int job_wait_s = 180;                            // how long jobs may take to end, per step
  std::function<void(std::string_view)> progress;  // a line per step; may be empty
};

struct LoadFaultCheck {
  std::string step;  // burst, no-token, slow-clients, postgres-restart, used-port
  bool ok = false;
  bool skipped = false;
  std::string figures;  // what was measured, one line
  std::string failure;  // why not ok
};

std::vector<LoadFaultCheck> run_load_fault(const LoadFaultPlan& plan);

// A fresh, empty folder for one server's data ("serve_NAME_PID" under the tests' temp folder).
std::string serve_test_dir(const std::string& name);
// keet serve's arguments for a test server: any free port, `dir` as its data
// folder, a queue no test fills, then `extra`.
std::vector<std::string> serve_test_args(const std::string& dir, std::vector<std::string> extra);
// GET `path` from the server at `url` as JSON; null unless it answered 200.
nlohmann::json serve_get_json(const std::string& url, const std::string& path);
// Every job in `ids` that has ended (done, failed or cancelled), by id,
// waiting up to `seconds` for all of them.
std::map<std::string, nlohmann::json> wait_ended(const std::string& url, const std::vector<std::string>& ids,
                                                 int seconds);

// A report of `kernels` copies of the memory-bound scenario kernel (more
// kernels: longer jobs), each duration offset so that reports differ.
std::string serve_test_report(double duration_ns, int kernels = 1);

}  // namespace keet::testing
