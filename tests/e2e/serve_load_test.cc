// keet serve under load and faults, bounded and on loopback only: 32 clients
// uploading at once (figures printed: jobs/s, upload latency p50/p99, peak
// memory), the server killed and restarted mid-queue, a worker killed
// mid-job. Every accepted job must end done or failed with a reason, none
// lost, none finished twice, and the server must keep answering.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
        // cpp-httplib listens with a backlog of 5 (compiled into Debian's
        // library): in a burst of 32 connections some are reset before they
        // are accepted, and a client tries again, as an HTTP client would.
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

}  // namespace
}  // namespace keet::testing
