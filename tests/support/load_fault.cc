#include "support/load_fault.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/pg_server.h"
#include "support/report_writer.h"
#include "support/serve_process.h"
#include "support/testing.h"

namespace keet::testing {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string serve_test_report(double duration_ns, int kernels) {
  ReportWriter w;
  ReportWriter::Block b;
  for (int i = 0; i < kernels; ++i) {
    auto k = w.kernel("kernel_" + std::to_string(i), 8192, 256, scenario_metrics(duration_ns + i));
    b.results.push_back(k.SerializeAsString());
  }
  w.flush_strings(b);
  w.add(b);
  return w.bytes();
}

std::string serve_test_dir(const std::string& name) {
  auto dir = temp_path("serve_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> serve_test_args(const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> a{"--port", "0", "--data-dir", dir, "--max-queue", "100000"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json serve_get_json(const std::string& url, const std::string& path) {
  httplib::Client c(url);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path.c_str());
  if (!r || r->status != 200) return {};
  return json::parse(r->body, nullptr, false);
}

std::map<std::string, json> wait_ended(const std::string& url, const std::vector<std::string>& ids, int seconds) {
  std::map<std::string, json> ended;
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline && ended.size() < ids.size()) {
    auto list = serve_get_json(url, "/api/v1/jobs?limit=1000");
    if (list.is_object())
      for (const auto& j : list["jobs"])
        if (j["state"] != "queued" && j["state"] != "running") ended[j["id"]] = j;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return ended;
}

int connect_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

// MSG_NOSIGNAL: a server that closed on us must not end the whole program.
bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// What became of the accepted jobs: how many were lost, did not end done, or ran more than `max_attempts` times.
struct JobTally {
  int lost = 0, not_done = 0, over_attempts = 0;
  std::string first_problem;
};

JobTally tally(const std::vector<std::string>& ids, const std::map<std::string, json>& ended, int max_attempts) {
  JobTally t;
  for (const auto& id : ids) {
    auto it = ended.find(id);
    if (it == ended.end()) {
      ++t.lost;
      if (t.first_problem.empty()) t.first_problem = "job " + id + " never ended";
      continue;
    }
    if (it->second["state"] != "done") {
      ++t.not_done;
      if (t.first_problem.empty()) t.first_problem = it->second.dump();
    }
    if (it->second.value("attempts", 0) > max_attempts) ++t.over_attempts;
  }
  return t;
}

// ------------------------------------------------------------ raw sockets

// The status line the server has sent within `ms` ("" if none).
std::string status_line(int fd, int ms) {
  std::string got;
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (got.find("\r\n") == std::string::npos && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got.substr(0, got.find("\r\n"));
}

LoadFaultCheck failed(std::string step, std::string why) { return {std::move(step), false, false, "", std::move(why)}; }

// ------------------------------------------------------------------ burst

LoadFaultCheck burst(const LoadFaultPlan& p) {
  auto dir = serve_test_dir("burst");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "2"}));
  if (!server.ok()) return failed("burst", "the server did not start: " + server.log());
  // One upload in 16 is not a report: its job must fail with the reader's reason, and the others go on.
  auto corrupt = [](int i) { return i % 16 == 5; };
  std::vector<std::string> reports;
  for (int i = 0; i < p.reports; ++i)
    reports.push_back(corrupt(i) ? std::string(2048 + i, 'z') : serve_test_report(1000 + i, 1 + i % 8));
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<std::string> ids, errors, corrupt_ids;
  std::vector<double> latency_ms;
  auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < p.clients; ++c)
    clients.emplace_back([&] {
      for (int i; (i = next++) < p.reports;) {
        httplib::Client client(server.url());  // a new connection for each upload: the listen backlog is tested
        client.set_connection_timeout(10, 0);
        client.set_read_timeout(60, 0);
        auto t = Clock::now();
        auto r = client.Post(fmt::format("/api/v1/jobs?name=burst-{}.ncu-rep", i), reports[static_cast<size_t>(i)],
                             "application/octet-stream");
        std::lock_guard lock(mu);
        latency_ms.push_back(ms_since(t));
        if (!r)
          errors.push_back(httplib::to_string(r.error()));
        else if (r->status != 202)
          errors.push_back(fmt::format("{} {}", r->status, r->body));
        else
          (corrupt(i) ? corrupt_ids : ids).push_back(json::parse(r->body, nullptr, false).value("id", ""));
      }
    });
  for (auto& t : clients) t.join();
  double upload_s = ms_since(start) / 1000;
  std::vector<std::string> all = ids;
  all.insert(all.end(), corrupt_ids.begin(), corrupt_ids.end());
  auto ended = wait_ended(server.url(), all, p.job_wait_s);
  double all_s = ms_since(start) / 1000;
  auto t = tally(ids, ended, 1);
  int corrupt_failed = 0;
  for (const auto& id : corrupt_ids)
    if (auto it = ended.find(id); it != ended.end())
      corrupt_failed += it->second["state"] == "failed" && !it->second.value("error", "").empty();
  long peak = server.peak_rss_kib();
  LoadFaultCheck check{"burst", false, false, "", ""};
  check.figures = fmt::format(
      "{} clients, {} uploads in {:.1f} s: {} failed (reset, refused or timed out); upload p50 {:.0f} ms, p99 {:.0f} "
      "ms; "
      "{} jobs ended in {:.1f} s ({:.1f} jobs/s), {} lost, {} not done, {} run twice, {} of {} corrupt uploads failed "
      "with "
      "a reason; server peak {} MiB",
      p.clients, p.reports, upload_s, errors.size(), percentile(latency_ms, 0.5), percentile(latency_ms, 0.99),
      ended.size(), all_s, static_cast<double>(ended.size()) / all_s, t.lost, t.not_done, t.over_attempts,
      corrupt_failed, corrupt_ids.size(), peak / 1024);
  if (!errors.empty())
    check.failure = fmt::format("{} uploads failed, the first: {}", errors.size(), errors.front());
  else if (t.lost || t.not_done || t.over_attempts)
    check.failure = t.first_problem;
  else if (corrupt_failed != static_cast<int>(corrupt_ids.size()))
    check.failure = "a corrupt upload's job did not fail with a reason";
  check.ok = check.failure.empty();
  server.stop();
  std::filesystem::remove_all(dir);
  return check;
}

// --------------------------------------------------------------- no token

// One client without the token: headers announcing `bytes` (by length, or
// chunked), then the body. A client that `waits` reads the answer before it
// sends the body, as one waiting for 100 Continue would.
struct BigResult {
  std::string status;
  size_t sent = 0;
};

BigResult send_big_body(int port, size_t bytes, bool chunked, bool waits) {
  BigResult out;
  int fd = connect_loopback(port);
  if (fd < 0) return out;
  std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n";
  head += chunked ? "Transfer-Encoding: chunked\r\n\r\n" : fmt::format("Content-Length: {}\r\n\r\n", bytes);
  if (send_all(fd, head)) {
    if (waits) out.status = status_line(fd, 2000);
    const std::string piece(64u << 10, 'x');
    std::string framed = chunked ? fmt::format("{:x}\r\n", piece.size()) + piece + "\r\n" : piece;
    while (out.sent < bytes && send_all(fd, framed)) out.sent += piece.size();
    if (out.sent >= bytes && chunked) send_all(fd, "0\r\n\r\n");
    if (!waits) out.status = status_line(fd, 2000);
  }
  close(fd);
  return out;
}

LoadFaultCheck no_token(const LoadFaultPlan& p) {
  auto dir = serve_test_dir("no_token");
  KeetProcess server("serve",
                     serve_test_args(dir, {"--workers", "0", "--token", "load-fault-token", "--max-upload", "2G"}));
  if (!server.ok()) return failed("no-token", "the server did not start: " + server.log());
  std::vector<BigResult> results(static_cast<size_t>(p.big_clients));
  auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < p.big_clients; ++c)
    clients.emplace_back(
        [&, c] { results[static_cast<size_t>(c)] = send_big_body(server.port(), p.big_bytes, c % 2 == 1, c % 4 < 2); });
  for (auto& t : clients) t.join();
  double seconds = ms_since(start) / 1000;
  long peak_mib = server.peak_rss_kib() / 1024;
  int refused = 0, accepted = 0;
  size_t most_sent = 0;
  for (const auto& r : results) {
    refused += r.status.starts_with("HTTP/1.1 401");
    accepted += r.status.starts_with("HTTP/1.1 2");
    most_sent = std::max(most_sent, r.sent);
  }
  LoadFaultCheck check{"no-token", false, false, "", ""};
  check.figures = fmt::format(
      "{} clients without the token, {} MiB body each (half chunked): {} answered 401 on their headers, {} accepted, "
      "the most any could send before the server closed {:.1f} MiB, {:.1f} s; server peak {} MiB (limit {} MiB)",
      p.big_clients, p.big_bytes >> 20, refused, accepted, static_cast<double>(most_sent) / (1 << 20), seconds,
      peak_mib, p.big_peak_mib);
  if (accepted)
    check.failure = "a body without the token was accepted";
  else if (refused < p.big_clients)
    check.failure = fmt::format("only {} of {} clients read a 401", refused, p.big_clients);
  else if (peak_mib >= p.big_peak_mib)
    check.failure = fmt::format("server peak {} MiB", peak_mib);
  else if (most_sent >= p.big_bytes && p.big_bytes >= (64u << 20))
    check.failure = "a refused body was read to its end";
  check.ok = check.failure.empty();
  server.stop();
  std::filesystem::remove_all(dir);
  return check;
}

// ----------------------------------------------------------- slow clients

// A slow client of one of three kinds: it trickles its headers, trickles its
// body, or holds an event stream open without reading it.
void slow_client(int port, int kind, const std::string& job, const std::atomic<bool>& stop) {
  int fd = connect_loopback(port);
  if (fd < 0) return;
  std::string head = kind == 0 ? "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                     : kind == 1
                         ? "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                           "Content-Length: 1000000\r\n\r\n"
                         : "GET /api/v1/jobs/" + job + "/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  bool alive = send_all(fd, head);
  while (alive && !stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    if (kind < 2) alive = send_all(fd, "a");
  }
  close(fd);
}

LoadFaultCheck slow_clients(const LoadFaultPlan& p) {
  auto dir = serve_test_dir("slow");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "0"}));
  if (!server.ok()) return failed("slow-clients", "the server did not start: " + server.log());
  httplib::Client c(server.url());
  auto queued = c.Post("/api/v1/jobs?name=waits.ncu-rep", serve_test_report(1000, 1), "application/octet-stream");
  if (!queued || queued->status != 202) return failed("slow-clients", "the first upload failed");
  std::string job = json::parse(queued->body)["id"];
  std::atomic<bool> stop{false};
  std::vector<std::thread> slow;
  for (int i = 0; i < p.slow_clients; ++i) slow.emplace_back([&, i] { slow_client(server.port(), i % 3, job, stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all of them connected and stalled
  std::vector<double> latency_ms;
  int failures = 0;
  auto end = Clock::now() + std::chrono::seconds(p.slow_seconds);
  httplib::Client kept(server.url());  // a kept-alive connection, and a new one each time
  for (int i = 0; Clock::now() < end; ++i) {
    auto t = Clock::now();
    httplib::Client fresh(server.url());
    fresh.set_read_timeout(5, 0);
    auto r = i % 5 == 4 ? fresh.Post("/api/v1/jobs?name=normal.ncu-rep", serve_test_report(2000 + i, 1),
                                     "application/octet-stream")
             : i % 2    ? kept.Get("/api/v1/info")
                        : fresh.Get("/api/v1/jobs/" + job);
    latency_ms.push_back(ms_since(t));
    if (!r || r->status >= 300) ++failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  for (auto& t : slow) t.join();
  double worst = latency_ms.empty() ? 0 : *std::max_element(latency_ms.begin(), latency_ms.end());
  LoadFaultCheck check{"slow-clients", false, false, "", ""};
  check.figures = fmt::format(
      "{} slow clients (a byte a second of headers or body, or an event stream held) for {} s: a normal client's {} "
      "requests took p50 {:.1f} ms, worst {:.1f} ms (limit {} ms), {} failed",
      p.slow_clients, p.slow_seconds, latency_ms.size(), percentile(latency_ms, 0.5), worst, p.slow_deadline_ms,
      failures);
  if (failures)
    check.failure = fmt::format("{} requests of the normal client failed", failures);
  else if (worst >= static_cast<double>(p.slow_deadline_ms))
    check.failure = fmt::format("a request took {:.0f} ms", worst);
  check.ok = check.failure.empty();
  server.stop();
  std::filesystem::remove_all(dir);
  return check;
}

// ---------------------------------------------------------- postgres restart

LoadFaultCheck postgres_restart(const LoadFaultPlan& p) {
  std::string why;
  auto pg = PgServer::start(why);
  if (!pg) return {"postgres-restart", true, true, "", "no PostgreSQL server: " + why};
  auto dir = serve_test_dir("pg");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "2", "--lease", "3", "--store", pg->url()}));
  if (!server.ok()) return failed("postgres-restart", "the server did not start: " + server.log());
  httplib::Client c(server.url());
  std::vector<std::string> ids;
  auto upload = [&](int i) {
    auto r = c.Post(fmt::format("/api/v1/jobs?name=pg-{}.ncu-rep", i), serve_test_report(1000 + i, 40),
                    "application/octet-stream");
    if (r && r->status == 202) ids.push_back(json::parse(r->body)["id"]);
    return r && r->status == 202;
  };
  for (int i = 0; i < p.postgres_jobs; ++i)
    if (!upload(i)) return failed("postgres-restart", "an upload before the restart failed");
  for (int i = 0; i < 200 && serve_get_json(server.url(), "/api/v1/jobs/" + ids[0]).value("state", "") == "queued"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!pg->stop()) return failed("postgres-restart", "PostgreSQL did not stop");
  auto down = c.Get("/api/v1/info");
  int down_status = down ? down->status : 0;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // workers meet a database that is away
  if (!pg->start_again()) return failed("postgres-restart", "PostgreSQL did not start again");
  auto back = Clock::now();
  int up_status = 0;
  for (int i = 0; i < 100 && up_status != 200; ++i) {
    auto r = c.Get("/api/v1/info");
    up_status = r ? r->status : 0;
    if (up_status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  double recovered_ms = ms_since(back);
  int after = 0;
  for (int i = 0; i < p.postgres_jobs / 2; ++i) after += upload(p.postgres_jobs + i);
  auto ended = wait_ended(server.url(), ids, p.job_wait_s);
  auto t = tally(ids, ended, 2);
  server.stop();
  std::string log = server.log();
  int logged = 0;
  for (const auto& id : ids)
    logged += log.find("event=job.accepted job=" + id) != std::string::npos &&
              log.find("event=job.done job=" + id) != std::string::npos;
  LoadFaultCheck check{"postgres-restart", false, false, "", ""};
  check.figures = fmt::format(
      "PostgreSQL stopped with {} jobs queued or running: /api/v1/info answered {} while it was down and 200 {:.0f} ms "
      "after it "
      "was back; {} uploads after; {} jobs ended done of {}, {} lost, {} run more than twice; {} with their life in "
      "the log",
      p.postgres_jobs, down_status, recovered_ms, after, static_cast<int>(ids.size()) - t.not_done - t.lost, ids.size(),
      t.lost, t.over_attempts, logged);
  if (down_status != 503)
    check.failure = fmt::format("/api/v1/info answered {} with the database down", down_status);
  else if (up_status != 200)
    check.failure = "/api/v1/info did not come back to 200 without a restart of keet";
  else if (after != p.postgres_jobs / 2)
    check.failure = "uploads failed after the database came back";
  else if (t.lost || t.not_done || t.over_attempts)
    check.failure = t.first_problem;
  else if (logged != static_cast<int>(ids.size()))
    check.failure = "not every job's life is in the log";
  else if (log.find("event=store.unavailable") == std::string::npos ||
           log.find("event=store.available") == std::string::npos)
    check.failure = "the log does not say when the store went and came back";
  check.ok = check.failure.empty();
  std::filesystem::remove_all(dir);
  return check;
}

// -------------------------------------------------------------- used port

LoadFaultCheck used_port() {
  auto dir = serve_test_dir("port"), dir2 = serve_test_dir("port2");
  KeetProcess first("serve", serve_test_args(dir, {"--workers", "0"}));
  if (!first.ok()) return failed("used-port", "the first server did not start: " + first.log());
  auto second = run_command(fmt::format("timeout 20 {} serve --port {} --data-dir {} --workers 0",
                                        shell_quote(keet_binary()), first.port(), shell_quote(dir2)));
  LoadFaultCheck check{"used-port", false, false, "", ""};
  // Its error, not a warning before it (no nsys on this machine, say).
  auto at = second.err.find("cannot listen");
  std::string said = at == std::string::npos ? second.err : second.err.substr(second.err.rfind('\n', at) + 1);
  check.figures = fmt::format("a second keet serve on port {} exited {}: {}", first.port(), second.rc,
                              said.substr(0, said.find('\n')));
  if (second.rc != 2) check.failure = fmt::format("exit {} (2 expected)", second.rc);
  check.ok = check.failure.empty() && first.stop() == 0;
  if (check.ok == false && check.failure.empty()) check.failure = "the first server did not stop cleanly";
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir2);
  return check;
}

}  // namespace

std::vector<LoadFaultCheck> run_load_fault(const LoadFaultPlan& plan) {
  // A server that closes on a refused body makes the next write fail; the
  // clients here (httplib's among them) must see an error, not be killed.
  signal(SIGPIPE, SIG_IGN);
  std::vector<LoadFaultCheck> out;
  auto step = [&](LoadFaultCheck c) {
    if (plan.progress)
      plan.progress(fmt::format("{:<17} {}  {}", c.step,
                                c.skipped ? "skipped"
                                : c.ok    ? "ok"
                                          : "FAILED",
                                c.figures.empty() || !c.failure.empty()
                                    ? c.failure + (c.figures.empty() ? "" : " | " + c.figures)
                                    : c.figures));
    out.push_back(std::move(c));
  };
  step(burst(plan));
  step(no_token(plan));
  step(slow_clients(plan));
  step(postgres_restart(plan));
  step(used_port());
  return out;
}

}  // namespace keet::testing
