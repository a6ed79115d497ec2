// keet serve under load and faults, bounded and on loopback only: 32 clients
// uploading at once (figures printed: jobs/s, upload latency p50/p99, peak
// memory), the server killed and restarted mid-queue, a worker killed
// mid-job. Every accepted job must end done or failed with a reason, none
// lost, none finished twice, and the server must keep answering.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/pg_server.h"
#include "support/report_writer.h"
#include "support/serve_process.h"
#include "support/testing.h"

namespace keet::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// `kernels` copies of the memory-bound scenario kernel (more kernels, longer jobs).
std::string report_bytes(double duration_ns, int kernels = 1) {
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

std::string fresh_dir(const std::string& name) {
  auto dir = temp_path("serve_load_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> serve_args(const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> a{"--port", "0", "--data-dir", dir, "--max-queue", "10000"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json get_json(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path.c_str());
  if (!r || r->status != 200) return {};
  return json::parse(r->body, nullptr, false);
}

// Waits until every job in `ids` has ended; returns them by id.
std::map<std::string, json> wait_all(httplib::Client& c, const std::vector<std::string>& ids, int seconds) {
  std::map<std::string, json> ended;
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline && ended.size() < ids.size()) {
    auto list = get_json(c, "/api/v1/jobs?limit=1000");
    for (const auto& j : list["jobs"])
      if (j["state"] != "queued" && j["state"] != "running") ended[j["id"]] = j;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ended;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void expect_each_ended_once(const std::vector<std::string>& ids, const std::map<std::string, json>& ended, int max_attempts) {
  EXPECT_EQ(ended.size(), ids.size()) << "every accepted job ends";
  for (const auto& id : ids) {
    auto it = ended.find(id);
    if (it == ended.end()) {
      ADD_FAILURE() << "job " << id << " was lost";
      continue;
    }
    const auto& j = it->second;
    EXPECT_TRUE(j["state"] == "done" || (j["state"] == "failed" && !j.value("error", "").empty())) << j.dump();
    EXPECT_LE(j["attempts"].get<int>(), max_attempts) << j.dump();
  }
}

TEST(ServeLoad, ThirtyTwoClientsUploadAtOnce) {
  std::string dir = fresh_dir("clients");
  KeetProcess server("serve", serve_args(dir, {"--workers", "2", "--threads", "48"}));
  ASSERT_TRUE(server.ok()) << server.log();
  const std::vector<std::string> reports = {report_bytes(120000), report_bytes(60000, 3), report_bytes(1000, 2)};
  const std::string corrupt(2048, 'z');
  constexpr int kClients = 32, kEach = 1;
  std::mutex mu;
  std::vector<std::string> ids, corrupt_ids;
  std::vector<double> latency_ms;
  std::vector<std::string> refused;
  std::atomic<int> retries{0};
  auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      httplib::Client client(server.url());
      client.set_read_timeout(60, 0);
      for (int i = 0; i < kEach; ++i) {
        bool bad = (c * kEach + i) % 8 == 5;  // 4 corrupt uploads among 32
        const std::string& body = bad ? corrupt : reports[(c + i) % reports.size()];
        auto t0 = Clock::now();
        // The listen backlog is widened past httplib's 5 (the plugin's
        // widen_backlog): a burst of 32 connections is accepted, none reset.
        auto res = client.Post("/api/v1/jobs?name=load.ncu-rep", body, "application/octet-stream");
        for (int again = 0; again < 5 && !res; ++again) {
          ++retries;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          res = client.Post("/api/v1/jobs?name=load.ncu-rep", body, "application/octet-stream");
        }
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        std::lock_guard lock(mu);
        if (!res || res->status != 202) {
          refused.push_back(res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error()));
          continue;
        }
        latency_ms.push_back(ms);
        auto id = json::parse(res->body)["id"].get<std::string>();
        ids.push_back(id);
        if (bad) corrupt_ids.push_back(id);
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_TRUE(refused.empty()) << refused.size() << " uploads refused, first: " << refused.front();
  EXPECT_EQ(retries.load(), 0) << "connections were reset: the listen backlog is too short";
  httplib::Client c(server.url());
  auto ended = wait_all(c, ids, 240);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  long rss = server.peak_rss_kib();
  expect_each_ended_once(ids, ended, 1);
  for (const auto& id : corrupt_ids) EXPECT_EQ(ended[id]["state"], "failed") << ended[id].dump();
  int done = 0;
  for (const auto& [id, j] : ended) done += j["state"] == "done";
  EXPECT_EQ(done, static_cast<int>(ids.size() - corrupt_ids.size()));
  // The figures docs/server.md quotes (2 workers; each job runs keet three times).
  std::cout << fmt::format("[ serve load ] {} clients, {} jobs ({} corrupt) in {:.2f} s: {:.1f} jobs/s; upload latency p50 {:.1f} ms, "
                           "p99 {:.1f} ms ({} connection retries); server peak RSS {} KiB\n",
                           kClients, ids.size(), corrupt_ids.size(), seconds, static_cast<double>(ids.size()) / seconds,
                           percentile(latency_ms, 0.5), percentile(latency_ms, 0.99), retries.load(), rss);
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

TEST(ServeLoad, AServerKilledMidQueueFinishesEveryJobAfterARestart) {
  std::string dir = fresh_dir("restart");
  std::vector<std::string> ids;
  {
    KeetProcess server("serve", serve_args(dir, {"--workers", "1", "--lease", "1"}));
    ASSERT_TRUE(server.ok()) << server.log();
    httplib::Client c(server.url());
    for (int i = 0; i < 8; ++i) {
      auto res = c.Post("/api/v1/jobs?name=q.ncu-rep", report_bytes(1000 + i, 20), "application/octet-stream");
      ASSERT_TRUE(res && res->status == 202);
      ids.push_back(json::parse(res->body)["id"]);
    }
    // Killed with jobs queued and one running.
    for (int i = 0; i < 100 && get_json(c, "/api/v1/jobs/" + ids[0])["state"] == "queued"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.kill();
  }
  KeetProcess again("serve", serve_args(dir, {"--workers", "2", "--lease", "1"}));
  ASSERT_TRUE(again.ok()) << again.log();
  httplib::Client c(again.url());
  auto ended = wait_all(c, ids, 120);
  expect_each_ended_once(ids, ended, 2);
  for (const auto& [id, j] : ended) {
    EXPECT_EQ(j["state"], "done") << j.dump();
    auto res = c.Get(("/api/v1/jobs/" + id + "/result?format=json").c_str());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_EQ(again.stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST(ServeLoad, AJobWhoseWorkerIsKilledIsTakenByAnotherWorker) {
  std::string dir = fresh_dir("worker");
  KeetProcess server("serve", serve_args(dir, {"--workers", "0", "--lease", "1"}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  // A job long enough to be caught running: 1,000 kernels, analysed three times.
  auto res = c.Post("/api/v1/jobs?name=big.ncu-rep", report_bytes(5000, 1000), "application/octet-stream");
  ASSERT_TRUE(res && res->status == 202);
  std::string id = json::parse(res->body)["id"];
  std::string store = "sqlite:" + dir + "/jobs.sqlite";
  auto worker = std::make_unique<KeetProcess>("worker", std::vector<std::string>{"--data-dir", dir, "--workers", "1", "--lease", "1"});
  json job;
  for (int i = 0; i < 500; ++i) {
    job = get_json(c, "/api/v1/jobs/" + id);
    if (job["state"] != "queued") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(job["state"], "running") << job.dump() << worker->log();
  worker->kill();
  EXPECT_EQ(get_json(c, "/api/v1/jobs/" + id)["state"], "running") << "its claim is still held";
  KeetProcess second("worker", {"--data-dir", dir, "--workers", "1", "--lease", "1"});
  auto ended = wait_all(c, {id}, 120);
  expect_each_ended_once({id}, ended, 2);
  EXPECT_EQ(ended[id]["state"], "done") << ended[id].dump();
  EXPECT_EQ(ended[id]["attempts"], 2) << "claimed again after the first worker died";
  EXPECT_EQ(c.Get("/api/v1/info")->status, 200);
  EXPECT_EQ(second.stop() , 0) << second.log();
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// The upload docs/server.md shows, `curl --data-binary @R.ncu-rep`, sends
// the report as application/x-www-form-urlencoded; it is taken as bytes at
// any size. A chunked body (no Content-Length) is bounded by --max-upload
// like any other, and every refusal has a JSON body.
TEST(ServeLoad, UploadsOfAnyContentTypeAndChunkedOnesWork) {
  std::string dir = fresh_dir("content_types");
  KeetProcess server("serve", serve_args(dir, {"--workers", "1", "--max-upload", "64k"}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  std::string report = report_bytes(1000, 30);
  ASSERT_GT(report.size(), 8192u) << "larger than httplib's form-urlencoded limit";
  ASSERT_LT(report.size(), 64u << 10);
  auto form = c.Post("/api/v1/jobs?name=curl.ncu-rep", report, "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 202) << form->body;
  auto chunked_body = [](std::string bytes) {
    return [bytes](size_t offset, httplib::DataSink& sink) {
      if (offset < bytes.size()) sink.write(bytes.data() + offset, std::min<size_t>(4096, bytes.size() - offset));
      else sink.done();
      return true;
    };
  };
  auto chunked = c.Post("/api/v1/jobs?name=chunked.ncu-rep", chunked_body(report), "application/octet-stream");
  ASSERT_TRUE(chunked);
  EXPECT_EQ(chunked->status, 202) << chunked->body;
  httplib::Client big(server.url());
  auto too_big = big.Post("/api/v1/jobs?name=big.ncu-rep", chunked_body(std::string(1u << 20, 'x')), "application/octet-stream");
  if (too_big) {  // the server may close the connection before the client has sent it all
    EXPECT_EQ(too_big->status, 413);
    EXPECT_NE(json::parse(too_big->body, nullptr, false).value("error", "").find("limit of"), std::string::npos) << too_big->body;
  }
  auto too_long = c.Post("/api/v1/jobs?name=long.ncu-rep", std::string(1u << 20, 'x'), "application/octet-stream");
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 413);
  EXPECT_TRUE(json::parse(too_long->body, nullptr, false).contains("error")) << too_long->body;
  std::vector<std::string> ids{json::parse(form->body)["id"], json::parse(chunked->body)["id"]};
  auto ended = wait_all(c, ids, 60);
  expect_each_ended_once(ids, ended, 1);
  for (const auto& [id, j] : ended) EXPECT_EQ(j["state"], "done") << j.dump();
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

// What a server answers to `bytes` sent on a raw connection: what it wrote
// until it closed, went quiet for two seconds, or (`status_only`) ended its
// status line, which then is all that is returned.
std::string raw_exchange(int port, const std::string& head, bool status_only) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && send(fd, head.data(), head.size(), 0) > 0) {
    char buf[4096];
    ssize_t n;
    while (!(status_only && got.find("\r\n") != std::string::npos) && (n = recv(fd, buf, sizeof buf, 0)) > 0)
      got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return status_only ? got.substr(0, got.find("\r\n")) : got;
}

std::string status_before_body(int port, const std::string& head) { return raw_exchange(port, head, true); }

// What httplib answers by itself (a request it cannot parse) has a JSON error
// body like every answer keet makes.
TEST(ServeLoad, EveryErrorHasAJsonBody) {
  std::string dir = fresh_dir("errors");
  KeetProcess server("serve", serve_args(dir, {"--workers", "0"}));
  ASSERT_TRUE(server.ok()) << server.log();
  for (std::string bad : std::vector<std::string>{"NONSENSE\r\n\r\n", "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                          "GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=x\r\nConnection: close\r\n\r\n"}) {
    std::string answer = raw_exchange(server.port(), bad, false);
    auto head_end = answer.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << answer.substr(0, 200);
    EXPECT_EQ(answer.substr(9, 1), "4") << answer.substr(0, 200);
    auto body = json::parse(answer.substr(head_end + 4), nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << answer.substr(0, 300);
  }
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

// Clients without the token send large bodies: each is refused on its
// headers, its body is dropped as it arrives (never kept), and the server's
// memory does not grow with them. A client that waits for 100 Continue gets
// the 401 instead, and never sends the body.
TEST(ServeLoad, BodiesWithoutATokenAreRefusedOnTheirHeadersAndNeverKept) {
  std::string dir = fresh_dir("no_token");
  KeetProcess server("serve", serve_args(dir, {"--workers", "0", "--token", "tok-load", "--max-upload", "1G"}));
  ASSERT_TRUE(server.ok()) << server.log();
  long before = server.peak_rss_kib();
  constexpr size_t kBody = 128u << 20, kChunk = 64u << 10;
  const std::string chunk(kChunk, 'x');
  std::atomic<int> accepted{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&, c] {
      httplib::Client client(server.url());
      client.set_write_timeout(10, 0);
      auto provide = [&](size_t offset, httplib::DataSink& sink) {
        if (offset < kBody) return sink.write(chunk.data(), kChunk);
        sink.done();
        return true;
      };
      auto res = c % 2 ? client.Post("/api/v1/jobs", provide, "application/octet-stream")  // chunked
                       : client.Post("/api/v1/jobs", kBody,
                                     [&](size_t offset, size_t, httplib::DataSink& sink) {
                                       return offset < kBody && sink.write(chunk.data(), kChunk);
                                     },
                                     "application/octet-stream");
      if (res && res->status != 401) ++accepted;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(accepted.load(), 0) << "every client is answered 401 (or cut off)";
  long after = server.peak_rss_kib();
  EXPECT_LT(after - before, 48 * 1024) << "4 x 128 MiB sent; peak RSS grew from " << before << " to " << after << " KiB";
  std::string expect = "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                       "Content-Length: 1073741824\r\nExpect: 100-continue\r\n\r\n";
  std::string refused = raw_exchange(server.port(), expect, false);
  EXPECT_EQ(refused.substr(0, 12), "HTTP/1.1 401") << refused;
  EXPECT_NE(refused.find("Connection: close"), std::string::npos) << "so that the client does not send the body anyway: " << refused;
  EXPECT_NE(refused.find("Content-Length: "), std::string::npos) << "else the client reads until the connection closes: " << refused;
  std::string with_token = expect;
  with_token.insert(with_token.find("Content-Type"), "Authorization: Bearer tok-load\r\n");
  EXPECT_EQ(status_before_body(server.port(), with_token).substr(0, 12), "HTTP/1.1 100") << "with the token, go on";
  httplib::Client ok(server.url());
  ok.set_bearer_token_auth("tok-load");
  auto res = ok.Post("/api/v1/jobs?name=ok.ncu-rep", report_bytes(1000), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202) << res->body;
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

// PostgreSQL restarts (as a crash would: every connection dropped) while
// jobs run, and is down for a while: the server says so at /api/v1/info (503)
// and then, without a restart of keet, every job ends done, each job's life
// is in the log, and uploads work again.
TEST(ServeLoad, APostgresRestartMidRunLosesNoJobAndNeedsNoKeetRestart) {
  std::string why;
  auto pg = PgServer::start(why);
  if (!pg) GTEST_SKIP() << "no PostgreSQL server: " << why;
  std::string dir = fresh_dir("pg_restart");
  KeetProcess server("serve", serve_args(dir, {"--workers", "2", "--lease", "3", "--store", pg->url()}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  std::vector<std::string> ids;
  auto upload = [&](int i) {
    auto res = c.Post("/api/v1/jobs?name=pg.ncu-rep", report_bytes(1000 + i, 40), "application/octet-stream");
    ASSERT_TRUE(res && res->status == 202) << (res ? res->body : httplib::to_string(res.error()));
    ids.push_back(json::parse(res->body)["id"]);
  };
  for (int i = 0; i < 8; ++i) ASSERT_NO_FATAL_FAILURE(upload(i));
  for (int i = 0; i < 200 && get_json(c, "/api/v1/jobs/" + ids[0])["state"] == "queued"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(pg->stop());
  auto down = c.Get("/api/v1/info");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 503);
  EXPECT_EQ(json::parse(down->body)["store_health"]["reachable"], false) << down->body;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // workers poll and finish against a database that is away
  ASSERT_TRUE(pg->start_again());
  for (int i = 0; i < 50 && c.Get("/api/v1/info")->status != 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto up = c.Get("/api/v1/info");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->status, 200) << up->body;
  for (int i = 8; i < 12; ++i) ASSERT_NO_FATAL_FAILURE(upload(i));
  auto ended = wait_all(c, ids, 180);
  expect_each_ended_once(ids, ended, 2);
  for (const auto& [id, j] : ended) EXPECT_EQ(j["state"], "done") << j.dump() << server.log();
  EXPECT_EQ(server.stop(), 0);
  std::string log = server.log();
  for (const auto& id : ids) {
    EXPECT_NE(log.find("event=job.accepted job=" + id), std::string::npos) << id;
    EXPECT_NE(log.find("event=job.done job=" + id), std::string::npos) << id;
  }
  EXPECT_NE(log.find("event=store.unavailable"), std::string::npos) << log;
  EXPECT_NE(log.find("event=store.available"), std::string::npos) << log;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace keet::testing
