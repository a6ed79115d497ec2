// keet serve under load and faults, bounded and on loopback only: the
// load-and-fault plan's short form (tests/support/load_fault.h), the server
// killed and restarted mid-queue, a worker killed mid-job, bodies of any
// content type, hostile requests. Every accepted job must end done or failed with a reason, none
// lost, none finished twice, and the server must keep answering.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/sha256.h"
#include "support/load_fault.h"
#include "support/report_writer.h"
#include "support/serve_process.h"
#include "support/testing.h"

namespace keet::testing {
namespace {

using nlohmann::json;

void expect_each_ended_once(const std::vector<std::string>& ids, const std::map<std::string, json>& ended,
                            int max_attempts) {
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

// The load-and-fault plan's short form (docs/server.md "Load and faults";
// scripts/bench runs the long one): a burst of 32 clients, 4 bodies without
// the token, 64 slow clients, a PostgreSQL restart, a used port.
TEST(ServeLoad, LoadAndFaultsShortForm) {
  LoadFaultPlan plan;
  if (keet_is_sanitized()) {  // each job runs an ASan keet three times: fewer jobs, same checks
    plan.reports = 32;
    plan.postgres_jobs = 4;
  }
  plan.big_bytes = keet_is_sanitized() ? (16u << 20) : (64u << 20);
  plan.big_peak_mib = keet_is_sanitized() ? 1024 : 256;  // ASan keeps freed memory and shadow
  plan.progress = [](std::string_view line) { std::cout << "[ load-fault ] " << line << std::endl; };
  for (const auto& c : run_load_fault(plan)) {
    if (c.skipped) {
      std::cout << "[ load-fault ] " << c.step << " skipped: " << c.failure << std::endl;
      continue;
    }
    EXPECT_TRUE(c.ok) << c.step << ": " << c.failure << "\n" << c.figures;
  }
}

TEST(ServeLoad, AServerKilledMidQueueFinishesEveryJobAfterARestart) {
  std::string dir = serve_test_dir("restart");
  std::vector<std::string> ids;
  {
    KeetProcess server("serve", serve_test_args(dir, {"--workers", "1", "--lease", "1"}));
    ASSERT_TRUE(server.ok()) << server.log();
    httplib::Client c(server.url());
    for (int i = 0; i < 8; ++i) {
      auto res = c.Post("/api/v1/jobs?name=q.ncu-rep", serve_test_report(1000 + i, 20), "application/octet-stream");
      ASSERT_TRUE(res && res->status == 202);
      ids.push_back(json::parse(res->body)["id"]);
    }
    // Killed with jobs queued and one running.
    for (int i = 0; i < 100 && serve_get_json(server.url(), "/api/v1/jobs/" + ids[0])["state"] == "queued"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.kill();
  }
  KeetProcess again("serve", serve_test_args(dir, {"--workers", "2", "--lease", "1"}));
  ASSERT_TRUE(again.ok()) << again.log();
  httplib::Client c(again.url());
  auto ended = wait_ended(again.url(), ids, 120);
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
  std::string dir = serve_test_dir("worker");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "0", "--lease", "1"}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  // A job long enough to be caught running: 1,000 kernels, analysed three times.
  auto res = c.Post("/api/v1/jobs?name=big.ncu-rep", serve_test_report(5000, 1000), "application/octet-stream");
  ASSERT_TRUE(res && res->status == 202);
  std::string id = json::parse(res->body)["id"];
  std::string store = "sqlite:" + dir + "/jobs.sqlite";
  auto worker = std::make_unique<KeetProcess>(
      "worker", std::vector<std::string>{"--data-dir", dir, "--workers", "1", "--lease", "1"});
  json job;
  for (int i = 0; i < 500; ++i) {
    job = serve_get_json(server.url(), "/api/v1/jobs/" + id);
    if (job["state"] != "queued") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(job["state"], "running") << job.dump() << worker->log();
  worker->kill();
  EXPECT_EQ(serve_get_json(server.url(), "/api/v1/jobs/" + id)["state"], "running") << "its claim is still held";
  KeetProcess second("worker", {"--data-dir", dir, "--workers", "1", "--lease", "1"});
  auto ended = wait_ended(server.url(), {id}, 120);
  expect_each_ended_once({id}, ended, 2);
  EXPECT_EQ(ended[id]["state"], "done") << ended[id].dump();
  EXPECT_EQ(ended[id]["attempts"], 2) << "claimed again after the first worker died";
  EXPECT_EQ(c.Get("/api/v1/info")->status, 200);
  EXPECT_EQ(second.stop(), 0) << second.log();
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// The upload docs/server.md shows, `curl --data-binary @R.ncu-rep`, sends
// the report as application/x-www-form-urlencoded; it is taken as bytes at
// any size. A chunked body (no Content-Length) is bounded by --max-upload
// like any other, and every refusal has a JSON body.
TEST(ServeLoad, UploadsOfAnyContentTypeAndChunkedOnesWork) {
  std::string dir = serve_test_dir("content_types");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "1", "--max-upload", "64k"}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  std::string report = serve_test_report(1000, 30);
  ASSERT_GT(report.size(), 8192u) << "larger than httplib's form-urlencoded limit";
  ASSERT_LT(report.size(), 64u << 10);
  auto form = c.Post("/api/v1/jobs?name=curl.ncu-rep", report, "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 202) << form->body;
  auto chunked_body = [](std::string bytes) {
    return [bytes](size_t offset, httplib::DataSink& sink) {
      if (offset < bytes.size())
        sink.write(bytes.data() + offset, std::min<size_t>(4096, bytes.size() - offset));
      else
        sink.done();
      return true;
    };
  };
  auto chunked = c.Post("/api/v1/jobs?name=chunked.ncu-rep", chunked_body(report), "application/octet-stream");
  ASSERT_TRUE(chunked);
  EXPECT_EQ(chunked->status, 202) << chunked->body;
  httplib::Client big(server.url());
  auto too_big =
      big.Post("/api/v1/jobs?name=big.ncu-rep", chunked_body(std::string(1u << 20, 'x')), "application/octet-stream");
  if (too_big) {  // the server may close the connection before the client has sent it all
    EXPECT_EQ(too_big->status, 413);
    EXPECT_NE(json::parse(too_big->body, nullptr, false).value("error", "").find("limit of"), std::string::npos)
        << too_big->body;
  }
  auto too_long = c.Post("/api/v1/jobs?name=long.ncu-rep", std::string(1u << 20, 'x'), "application/octet-stream");
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 413);
  EXPECT_TRUE(json::parse(too_long->body, nullptr, false).contains("error")) << too_long->body;
  std::vector<std::string> ids{json::parse(form->body)["id"], json::parse(chunked->body)["id"]};
  auto ended = wait_ended(server.url(), ids, 60);
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

// Every answer keet makes to a bad request has a JSON error body; a request
// line or headers past the per-connection memory (64 KiB) are refused by the
// HTTP library (libmicrohttpd's own short body: these never reach keet) and
// cost the server no memory, however long the client goes on.
TEST(ServeLoad, BadRequestsGetJsonErrorsAndHostileHeadersAreBounded) {
  std::string dir = serve_test_dir("errors");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "0", "--max-upload", "1M"}));
  ASSERT_TRUE(server.ok()) << server.log();
  for (std::string bad : std::vector<std::string>{
           "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
           "PUT /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
           "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
           "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000000\r\n\r\n",
           "POST /api/v1/jobs/x/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nConnection: "
           "close\r\n\r\n{no}"}) {
    std::string answer = raw_exchange(server.port(), bad, false);
    auto head_end = answer.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << answer.substr(0, 200);
    EXPECT_EQ(answer.substr(9, 1), "4") << answer.substr(0, 200);
    auto body = json::parse(answer.substr(head_end + 4), nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << answer.substr(0, 300);
  }
  long before = server.peak_rss_kib();
  const std::string endless_line = "GET /" + std::string(4u << 20, 'a');  // never ends its line
  std::string headers = "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 100000; ++i) headers += "X-H" + std::to_string(i) + ": v\r\n";
  for (const std::string& hostile : {endless_line, headers}) {
    std::string answer = raw_exchange(server.port(), hostile, false);
    if (!answer.empty()) {  // refused (431 or 414) rather than cut off
      EXPECT_EQ(answer.substr(9, 1), "4") << answer.substr(0, 200);
      EXPECT_NE(answer.find("Content-Length: "), std::string::npos) << answer.substr(0, 300);
    }
  }
  EXPECT_LT(server.peak_rss_kib() - before, 16 * 1024) << "hostile request lines and headers are not kept";
  httplib::Client c(server.url());
  auto ok = c.Get("/api/v1/info");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

// Uploads past the in-memory budget (256 KiB) go to disk as they arrive and
// are renamed into the store: three 96 MiB bodies (by length, chunked, as a
// multipart part) grow the server's memory by a few MiB, the stored bytes are
// the sent ones, and nothing is left in the spool folder.
TEST(ServeLoad, LargeUploadsGoToDiskNotMemory) {
  std::string dir = serve_test_dir("large");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "0", "--max-upload", "128M"}));
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  c.set_read_timeout(60, 0);
  long before = server.peak_rss_kib();
  constexpr size_t kSize = 96u << 20;
  auto body = [](char fill) {
    std::string b(kSize, fill);
    for (size_t i = 0; i < b.size(); i += 4093) b[i] = static_cast<char>(i % 253);
    return b;
  };
  std::vector<std::pair<std::string, std::string>> sent;  // job id, bytes
  {
    std::string raw = body('a');
    auto r = c.Post("/api/v1/jobs?name=raw.ncu-rep", raw, "application/octet-stream");
    ASSERT_TRUE(r && r->status == 202) << (r ? r->body : httplib::to_string(r.error()));
    sent.emplace_back(json::parse(r->body)["id"], io::sha256_hex(raw));
  }
  {
    std::string chunked = body('b');
    auto provide = [&](size_t offset, httplib::DataSink& sink) {
      if (offset < chunked.size())
        sink.write(chunked.data() + offset, std::min<size_t>(1u << 20, chunked.size() - offset));
      else
        sink.done();
      return true;
    };
    auto r = c.Post("/api/v1/jobs?name=chunked.ncu-rep", provide, "application/octet-stream");
    ASSERT_TRUE(r && r->status == 202) << (r ? r->body : httplib::to_string(r.error()));
    sent.emplace_back(json::parse(r->body)["id"], io::sha256_hex(chunked));
  }
  {
    std::string part = body('c');
    httplib::MultipartFormDataItems items = {{"report", part, "part.ncu-rep", "application/octet-stream"}};
    auto r = c.Post("/api/v1/jobs", items);
    ASSERT_TRUE(r && r->status == 202) << (r ? r->body : httplib::to_string(r.error()));
    EXPECT_EQ(json::parse(r->body)["name"], "part.ncu-rep");
    sent.emplace_back(json::parse(r->body)["id"], io::sha256_hex(part));
  }
  long grown_kib = server.peak_rss_kib() - before;
  long limit_kib = keet_is_sanitized() ? 256 * 1024 : 24 * 1024;  // ASan keeps freed memory in quarantine
  EXPECT_LT(grown_kib, limit_kib) << "3 x 96 MiB uploaded; peak RSS grew by " << grown_kib << " KiB";
  for (const auto& [id, digest] : sent) {
    auto job = c.Get("/api/v1/jobs/" + id);
    ASSERT_TRUE(job);
    EXPECT_EQ(json::parse(job->body)["size_bytes"], kSize) << job->body;
    auto stored = dir + "/reports/" + digest.substr(0, 2) + "/" + digest;
    ASSERT_TRUE(std::filesystem::exists(stored)) << "stored under the digest of the bytes sent";
    EXPECT_EQ(std::filesystem::file_size(stored), kSize);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir + "/reports/spool")) << "no spooled body is left";
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

// A client without the token that waits for 100 Continue gets the 401
// instead, and never sends its body; with the token it is told to go on.
// (Clients that send 1 GiB bodies without the token: the load-and-fault plan.)
TEST(ServeLoad, BodiesWithoutATokenAreRefusedOnTheirHeadersAndNeverKept) {
  std::string dir = serve_test_dir("no_token");
  KeetProcess server("serve", serve_test_args(dir, {"--workers", "0", "--token", "tok-load", "--max-upload", "1G"}));
  ASSERT_TRUE(server.ok()) << server.log();
  std::string expect =
      "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
      "Content-Length: 1073741824\r\nExpect: 100-continue\r\n\r\n";
  std::string refused = raw_exchange(server.port(), expect, false);
  EXPECT_EQ(refused.substr(0, 12), "HTTP/1.1 401") << refused;
  EXPECT_NE(refused.find("Connection: close"), std::string::npos)
      << "so that the client does not send the body anyway: " << refused;
  EXPECT_NE(refused.find("Content-Length: "), std::string::npos)
      << "else the client reads until the connection closes: " << refused;
  std::string with_token = expect;
  with_token.insert(with_token.find("Content-Type"), "Authorization: Bearer tok-load\r\n");
  EXPECT_EQ(status_before_body(server.port(), with_token).substr(0, 12), "HTTP/1.1 100") << "with the token, go on";
  httplib::Client ok(server.url());
  ok.set_bearer_token_auth("tok-load");
  auto res = ok.Post("/api/v1/jobs?name=ok.ncu-rep", serve_test_report(1000), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202) << res->body;
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace keet::testing
