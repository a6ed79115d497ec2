// keet serve's API, called in-process (the HTTP transport is covered end to
// end in tests/e2e/serve_test.cc), and its job store on real SQLite and a real
// PostgreSQL server.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include "io/sha256.h"
#include "service/api.h"
#include "service/job_store.h"
#include "store/history.h"
#include "store/libpq.h"
#include "store/sql.h"
#include "support/kineto_writer.h"
#include "support/pg_server.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet::service {
namespace {

using keet::testing::one_kernel_report;
using keet::testing::source_dir;
using keet::testing::temp_path;
using keet::testing::write_file;
using nlohmann::json;

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(ServiceApi, EveryRouteIsInTheOpenApiFileAndEveryDocumentedRouteExists) {
  std::ifstream in(source_dir() + "/docs/openapi.json");
  auto doc = json::parse(in);
  std::set<std::string> documented, served;
  for (const auto& [path, item] : doc["paths"].items())
    for (const auto& [method, op] : item.items())
      if (method != "parameters") documented.insert(upper(method) + " " + path);
  for (const auto& r : routes()) served.insert(r.method + " " + r.pattern);
  EXPECT_EQ(documented, served);
}

TEST(ServiceApi, SecretsAreComparedWhole) {
  EXPECT_TRUE(same_secret("s3cret", "s3cret"));
  EXPECT_FALSE(same_secret("s3cret", "s3cre"));
  EXPECT_FALSE(same_secret("s3cret", "s3cret!"));
  EXPECT_FALSE(same_secret("s3cret", "S3cret"));
  EXPECT_FALSE(same_secret("", "x"));
}

TEST(ServiceApi, LoopbackHostHeaders) {
  EXPECT_TRUE(loopback_host("127.0.0.1:8080"));
  EXPECT_TRUE(loopback_host("localhost:1"));
  EXPECT_TRUE(loopback_host("[::1]:8080"));
  EXPECT_FALSE(loopback_host("evil.example:8080"));
  EXPECT_FALSE(loopback_host("127.0.0.1.evil.example"));
}

// GET `path` as a loopback client sends it.
Request loopback_get(const std::string& path) {
  Request r;
  r.method = "GET";
  r.path = path;
  r.headers["host"] = "127.0.0.1:8080";
  return r;
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_path("service_api_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto jobs = open_job_store("sqlite:" + dir_ + "/jobs.sqlite");
    ASSERT_TRUE(jobs) << jobs.error().message;
    jobs_ = std::move(*jobs);
    blobs_ = std::make_unique<BlobStore>(dir_);
    runner_ = make_process_runner(keet::testing::keet_binary(), dir_ + "/runs");
    opt_.data_dir = dir_;
    opt_.max_queue = 3;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Api api() {
    return Api(*jobs_, *blobs_, *runner_, nullptr, opt_, [] { return int64_t{1000}; });
  }

  static Request get(const std::string& path) { return loopback_get(path); }
  static Request upload(const std::string& body, const std::string& name = "k.ncu-rep") {
    Request r = get("/api/v1/jobs");
    r.method = "POST";
    r.body = body;
    r.query["name"] = name;
    return r;
  }
  static Request diff_request(const json& body) {
    Request r = get("/api/v1/diff");
    r.method = "POST";
    r.body = body.dump();
    return r;
  }
  static std::string header(const Response& r, const std::string& name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return "";
  }

  std::string dir_;
  std::unique_ptr<JobStore> jobs_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<KeetRunner> runner_;
  ServiceOptions opt_;
};

TEST_F(ApiTest, AnUploadIsQueuedAndItsStatusReadBack) {
  auto a = api();
  auto res = a.handle(upload("not really a report"));
  ASSERT_EQ(res.status, 202) << res.body;
  auto job = json::parse(res.body);
  EXPECT_EQ(job["state"], "queued");
  EXPECT_EQ(job["name"], "k.ncu-rep");
  EXPECT_EQ(header(res, "Location"), "/api/v1/jobs/" + job["id"].get<std::string>());
  auto status = a.handle(get("/api/v1/jobs/" + job["id"].get<std::string>()));
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(json::parse(status.body)["size_bytes"], 19);
  auto result = a.handle(get("/api/v1/jobs/" + job["id"].get<std::string>() + "/result"));
  EXPECT_EQ(result.status, 409) << "no result before the job has run";
  auto list = a.handle(get("/api/v1/jobs"));
  EXPECT_EQ(json::parse(list.body)["jobs"].size(), 1u);
}

// Counts the keet processes the workers start; each is the real keet, run
// by the real process runner.
class CountingRunner final : public KeetRunner {
 public:
  explicit CountingRunner(KeetRunner& real) : real_(real) {}
  Result<RunOutcome> run(const std::vector<std::string>& args, const std::string& cwd, std::chrono::milliseconds limit,
                         const std::function<bool()>& keep_going) override {
    {
      std::lock_guard lock(mu_);
      commands_.push_back(args.empty() ? "" : args.front());
    }
    return real_.run(args, cwd, limit, keep_going);
  }
  std::multiset<std::string> commands() {
    std::lock_guard lock(mu_);
    return {commands_.begin(), commands_.end()};
  }

 private:
  KeetRunner& real_;
  std::mutex mu_;
  std::vector<std::string> commands_;
};

// Each job is one keet process that reads its report once and writes every
// result (an analysis, a diff, a timeline); a gate against a baseline is one
// more, whatever formats it gives.
TEST_F(ApiTest, EachJobIsOneKeetProcessThatWritesEveryResult) {
  CountingRunner counting(*runner_);
  opt_.max_queue = 10;
  opt_.workers = 1;
  opt_.history_db = dir_ + "/history.sqlite";  // empty: the gate has no baseline to compare with
  Workers workers(*jobs_, *blobs_, counting, opt_);
  Api a(*jobs_, *blobs_, counting, &workers, opt_, [] { return int64_t{1000}; });
  workers.start();
  auto id = [&](const Request& r) { return json::parse(a.handle(r).body)["id"].get<std::string>(); };
  std::string before = id(upload(one_kernel_report("k", 4096, 256, keet::testing::scenario_metrics(100000))));
  std::string after = id(upload(one_kernel_report("k", 4096, 256, keet::testing::scenario_metrics(130000))));
  auto gated = upload(one_kernel_report("g", 4096, 256, keet::testing::scenario_metrics(90000)));
  gated.query["baseline"] = "latest";
  std::string gate = id(gated);
  std::string diff = id(diff_request({{"before", before}, {"after", after}}));
  keet::testing::KinetoWriter trace;
  for (int i = 0; i < 4; ++i) trace.launch("void k<float>(float*)", i * 100.0, i * 100.0 + 8, 60);
  std::string timeline = id(upload(trace.json(), "trace.json"));
  for (int i = 0; i < 1200 && workers.completed() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  workers.stop();
  EXPECT_EQ(counting.commands(),
            (std::multiset<std::string>{"analyze", "analyze", "analyze", "gate", "diff", "timeline"}));
  auto results = [&](const std::string& job) {
    auto status = json::parse(a.handle(get("/api/v1/jobs/" + job)).body);
    EXPECT_EQ(status["state"], "done") << status.dump();
    return status["results"];
  };
  auto result = [&](const std::string& job, const std::string& format) {
    Request r = get("/api/v1/jobs/" + job + "/result");
    r.query["format"] = format;
    return a.handle(r);
  };
  EXPECT_EQ(results(before), json::parse(R"(["html", "json", "markdown"])"));
  EXPECT_EQ(results(gate), json::parse(R"(["html", "json", "markdown"])"));
  for (std::string format : {"gate", "sarif"}) {
    auto answer = result(gate, format);
    EXPECT_EQ(answer.status, 404);
    EXPECT_NE(answer.body.find("no baseline 'latest' recorded"), std::string::npos) << format << ": " << answer.body;
  }
  EXPECT_EQ(results(diff), json::parse(R"(["html", "json", "markdown"])"));
  EXPECT_EQ(results(timeline), json::parse(R"(["html", "json"])"));
  auto analysis = json::parse(result(before, "json").body);
  EXPECT_EQ(analysis["report"]["path"], "k.ncu-rep");
  auto compared = json::parse(result(diff, "json").body);
  EXPECT_FALSE(compared["pairs"].empty()) << compared.dump();
  EXPECT_NE(result(timeline, "html").body.find("<html"), std::string::npos);
}

// The job JSON has the members docs/openapi.json's Job schema names: all the
// required ones and no undocumented one.
TEST_F(ApiTest, AJobHasExactlyTheDocumentedMembers) {
  std::ifstream in(source_dir() + "/docs/openapi.json");
  auto schema = json::parse(in)["components"]["schemas"]["Job"];
  auto a = api();
  auto job = json::parse(a.handle(upload("bytes", "x.ncu-rep")).body);
  auto other = json::parse(a.handle(upload("other bytes", "y.ncu-rep")).body);
  auto diff =
      json::parse(a.handle(diff_request({{"before", job["id"]}, {"after", other["id"]}, {"pairs", {{0, 1}}}})).body);
  for (const auto& j : {job, diff}) {
    for (const auto& [key, value] : j.items())
      EXPECT_TRUE(schema["properties"].contains(key)) << key << " is undocumented";
    for (const auto& key : schema["required"]) EXPECT_TRUE(j.contains(key.get<std::string>())) << key << " is missing";
  }
  EXPECT_TRUE(diff.contains("pairs")) << diff.dump();
  auto info = json::parse(a.handle(get("/api/v1/info")).body);
  auto info_schema = json::parse(std::ifstream(source_dir() + "/docs/openapi.json"))["components"]["schemas"]["Info"];
  for (const auto& [key, value] : info.items()) EXPECT_TRUE(info_schema["properties"].contains(key)) << key;
  EXPECT_EQ(info.size(), info_schema["required"].size());
}

// A diff's pairs (keet diff --pair) are checked, kept with the job and shown in it.
TEST_F(ApiTest, ADiffTakesPairsAsJsonOrAMultipartField) {
  opt_.max_queue = 10;  // two uploads and three diffs wait: no worker runs here
  auto a = api();
  std::string before = json::parse(a.handle(upload("b", "before.ncu-rep")).body)["id"];
  std::string after = json::parse(a.handle(upload("a", "after.ncu-rep")).body)["id"];
  auto res = a.handle(diff_request({{"before", before}, {"after", after}, {"pairs", {{1, 0}, {0, 2}}}}));
  ASSERT_EQ(res.status, 202) << res.body;
  auto job = json::parse(res.body);
  EXPECT_EQ(job["pairs"], json::parse("[[1, 0], [0, 2]]"));
  auto stored = jobs_->get(job["id"]);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->pairs, (std::vector<std::pair<int, int>>{{1, 0}, {0, 2}}));
  EXPECT_EQ(json::parse(a.handle(get("/api/v1/jobs/" + job["id"].get<std::string>())).body)["pairs"], job["pairs"]);
  // No pairs: none shown.
  auto plain = json::parse(a.handle(diff_request({{"before", before}, {"after", after}})).body);
  EXPECT_FALSE(plain.contains("pairs")) << plain.dump();

  for (const char* bad :
       {R"("0:1")", "[[1]]", "[[1, 2, 3]]", "[[-1, 0]]", R"([["1", 0]])", "[[1.5, 0]]", "[[1000000000, 0]]"}) {
    auto refused = a.handle(diff_request({{"before", before}, {"after", after}, {"pairs", json::parse(bad)}}));
    EXPECT_EQ(refused.status, 400) << bad << ": " << refused.body;
    EXPECT_NE(json::parse(refused.body)["error"].get<std::string>().find("index"), std::string::npos) << refused.body;
  }
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back({i, i});
  EXPECT_EQ(a.handle(diff_request({{"before", before}, {"after", after}, {"pairs", many}})).status, 400);

  Request multipart = diff_request(json::object());
  multipart.body.clear();
  multipart.parts = {
      {"before", "b.ncu-rep", "before bytes"}, {"after", "a.ncu-rep", "after bytes"}, {"pairs", "", "[[0, 0]]"}};
  auto m = a.handle(multipart);
  ASSERT_EQ(m.status, 202) << m.body;
  EXPECT_EQ(json::parse(m.body)["pairs"], json::parse("[[0, 0]]"));
  multipart.parts.back().data = "0:0";
  EXPECT_EQ(a.handle(multipart).status, 400);
}

TEST_F(ApiTest, TheUploadedNameIsShownButNeverAPath) {
  auto a = api();
  auto res = a.handle(upload("bytes", "../../etc/passwd"));
  ASSERT_EQ(res.status, 202);
  auto job = json::parse(res.body);
  EXPECT_EQ(job["name"], "passwd");
  auto stored = jobs_->get(job["id"]);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ(blobs_->path((*stored)->report).rfind(dir_ + "/reports/", 0), 0u);
  EXPECT_TRUE(blobs_->has((*stored)->report));
}

// An upload goes when the last job that uses it is deleted, not before: a
// diff made from two uploads' jobs keeps both reports alive.
TEST_F(ApiTest, DeletingTheLastJobOfAnUploadRemovesIt) {
  opt_.max_queue = 10;
  std::vector<std::string> lines;
  opt_.log = [&lines](std::string_view line) { lines.emplace_back(line); };
  auto a = api();
  std::string first = json::parse(a.handle(upload("same bytes")).body)["id"];
  std::string second = json::parse(a.handle(upload("same bytes")).body)["id"];
  std::string other = json::parse(a.handle(upload("other bytes")).body)["id"];
  std::string diff = json::parse(a.handle(diff_request({{"before", first}, {"after", other}})).body)["id"];
  auto address = (**jobs_->get(first)).report, other_address = (**jobs_->get(other)).report;
  auto remove = [&](const std::string& id) {
    Request r = get("/api/v1/jobs/" + id);
    r.method = "DELETE";
    return a.handle(r).status;
  };
  EXPECT_EQ(remove(first), 204);
  EXPECT_TRUE(blobs_->has(address)) << "the second upload of the same bytes and the diff use it";
  EXPECT_EQ(remove(second), 204);
  EXPECT_TRUE(blobs_->has(address)) << "the diff uses it";
  EXPECT_EQ(remove(diff), 204);
  EXPECT_FALSE(blobs_->has(address)) << "no job uses it any more";
  EXPECT_TRUE(blobs_->has(other_address)) << "its own job still uses it";
  EXPECT_EQ(remove(other), 204);
  EXPECT_FALSE(blobs_->has(other_address));
  EXPECT_EQ(remove(other), 404);
  ASSERT_EQ(lines.size(), 8u) << "4 accepted, 4 deleted";
  EXPECT_EQ(lines[0].find("ts=1970-01-01T00:00:01.000Z event=job.accepted job=" + first +
                          " kind=analyze bytes=10 name=k.ncu-rep"),
            0u)
      << lines[0];
  EXPECT_NE(lines.back().find("event=job.deleted job=" + other + " uploads_removed=1"), std::string::npos)
      << lines.back();
}

// Many uploads at once: the queue's limit holds exactly (its length is read
// and grown under one lock), the rest get 429.
TEST_F(ApiTest, TheQueueLimitHoldsUnderABurst) {
  auto a = api();
  std::atomic<int> accepted{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i)
    clients.emplace_back([&, i] {
      int status = a.handle(upload("report bytes " + std::to_string(i))).status;
      (status == 202 ? accepted : refused) += status == 202 || status == 429;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(accepted.load(), 3) << "--max-queue 3";
  EXPECT_EQ(refused.load(), 13);
}

TEST_F(ApiTest, InfoAsksTheStore) {
  auto info = api().handle(get("/api/v1/info"));
  ASSERT_EQ(info.status, 200) << info.body;
  auto doc = json::parse(info.body);
  EXPECT_EQ(doc["store"], "sqlite");
  EXPECT_EQ(doc["store_health"], json::parse(R"({"reachable": true})"));
}

TEST(ServiceLog, LinesAreLogfmtWithQuotedValues) {
  EXPECT_EQ(
      log_line(1764774245123, "job.failed", {{"job", "ab12"}, {"error", "a \"bad\" = report\nline 2"}, {"empty", ""}}),
      R"(ts=2025-12-03T15:04:05.123Z event=job.failed job=ab12 error="a \"bad\" = report line 2" empty="")");
  EXPECT_EQ(log_line(0, "x", {{"path", "C:\\dir"}}), R"(ts=1970-01-01T00:00:00.000Z event=x path="C:\\dir")");
}

// What a killed server leaves: a half-written upload and job folders. Only
// what is older than the given age goes (a live process may own the rest).
// A spooled upload is renamed into the store under the SHA-256 of its bytes
// (the address put() gives the same bytes); a second copy of stored bytes is
// left where it is, for the HTTP server to remove.
TEST(BlobStoreAdopt, ASpooledFileIsRenamedInUnderItsDigest) {
  std::string dir = temp_path("blob_adopt_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  BlobStore blobs(dir);
  std::string bytes(300000, 'r');
  for (size_t i = 0; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(i % 251);
  std::filesystem::create_directories(dir + "/reports/spool");
  std::string spooled = dir + "/reports/spool/body.tmp-1";
  write_file(spooled, bytes);
  auto address = blobs.adopt(spooled);
  ASSERT_TRUE(address) << address.error().message;
  EXPECT_EQ(*address, io::sha256_hex(bytes));
  EXPECT_FALSE(std::filesystem::exists(spooled)) << "moved, not copied";
  ASSERT_TRUE(blobs.has(*address));
  EXPECT_EQ(std::filesystem::file_size(blobs.path(*address)), bytes.size());
  write_file(spooled, bytes);
  auto again = blobs.adopt(spooled);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *address);
  EXPECT_TRUE(std::filesystem::exists(spooled)) << "the same bytes are stored once";
  auto put = blobs.put(bytes);
  ASSERT_TRUE(put);
  EXPECT_EQ(*put, *address);
  EXPECT_FALSE(blobs.adopt(dir + "/reports/spool/absent"));
  std::filesystem::remove_all(dir);
}

TEST(ServiceLeftovers, OldPartialUploadsAndJobFoldersAreRemoved) {
  std::string dir = temp_path("service_leftovers_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  BlobStore blobs(dir);
  auto kept = blobs.put("a report");
  ASSERT_TRUE(kept);
  auto sub = std::filesystem::path(blobs.path(*kept)).parent_path();
  auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  auto make = [&](const std::filesystem::path& p, bool dir_entry, bool old) {
    if (dir_entry)
      std::filesystem::create_directories(p);
    else
      std::ofstream(p) << "x";
    if (old) std::filesystem::last_write_time(p, old_time);
  };
  make(sub / (*kept + ".tmp-old"), false, true);
  make(sub / (*kept + ".tmp-new"), false, false);
  std::filesystem::create_directories(dir + "/reports/spool");  // bodies the HTTP server spooled
  make(dir + "/reports/spool/body.tmp-AbC123", false, true);
  make(dir + "/work/oldjob-1234", true, true);
  make(dir + "/work/newjob-1234", true, false);
  std::filesystem::create_directories(dir + "/work/runs");
  make(dir + "/work/runs/run-1-1.out", false, true);
  make(dir + "/work/runs/run-2-1.out", false, false);
  EXPECT_EQ(blobs.remove_partial(std::chrono::hours(1)), 2);
  EXPECT_FALSE(std::filesystem::exists(dir + "/reports/spool/body.tmp-AbC123"));
  EXPECT_EQ(remove_stale_work(dir, std::chrono::hours(1)), 2);
  EXPECT_FALSE(std::filesystem::exists(sub / (*kept + ".tmp-old")));
  EXPECT_TRUE(std::filesystem::exists(sub / (*kept + ".tmp-new")));
  EXPECT_TRUE(blobs.has(*kept));
  EXPECT_FALSE(std::filesystem::exists(dir + "/work/oldjob-1234"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/work/newjob-1234"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/work/runs"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/work/runs/run-1-1.out"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/work/runs/run-2-1.out"));
  std::filesystem::remove_all(dir);
}

TEST_F(ApiTest, AFullQueueAnswers429WithRetryAfter) {
  auto a = api();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(a.handle(upload("r" + std::to_string(i))).status, 202);
  auto res = a.handle(upload("one too many"));
  EXPECT_EQ(res.status, 429);
  EXPECT_EQ(header(res, "Retry-After"), "5");
}

TEST_F(ApiTest, AnEmptyUploadIsRefused) { EXPECT_EQ(api().handle(upload("")).status, 400); }

TEST_F(ApiTest, EveryApiRequestNeedsTheTokenWhenOneIsSet) {
  opt_.token = "t0ken";
  auto a = api();
  EXPECT_EQ(a.handle(get("/api/v1/jobs")).status, 401);
  auto wrong = get("/api/v1/jobs");
  wrong.headers["authorization"] = "Bearer t0kem";
  EXPECT_EQ(a.handle(wrong).status, 401);
  auto right = get("/api/v1/jobs");
  right.headers["authorization"] = "Bearer t0ken";
  EXPECT_EQ(a.handle(right).status, 200);
  auto mcp = get("/mcp");
  EXPECT_EQ(a.handle(mcp).status, 401);
  EXPECT_EQ(a.handle(get("/")).status, 200) << "the UI's static shell holds no data and asks for the token";
}

TEST_F(ApiTest, ForeignOriginsAndHostsAreRefused) {
  auto a = api();
  auto cross = get("/api/v1/jobs");
  cross.headers["origin"] = "http://evil.example";
  EXPECT_EQ(a.handle(cross).status, 403);
  auto rebound = get("/api/v1/jobs");
  rebound.headers["host"] = "evil.example:8080";
  EXPECT_EQ(a.handle(rebound).status, 403) << "DNS rebinding: a loopback server answers loopback names only";
  auto same = get("/api/v1/jobs");
  same.headers["origin"] = "http://127.0.0.1:8080";
  auto res = a.handle(same);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(header(res, "Access-Control-Allow-Origin"), "") << "no CORS unless configured";
}

TEST_F(ApiTest, AConfiguredOriginGetsCors) {
  opt_.allowed_origins = {"https://ci.example"};
  auto a = api();
  auto r = get("/api/v1/jobs");
  r.headers["origin"] = "https://ci.example";
  auto res = a.handle(r);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(header(res, "Access-Control-Allow-Origin"), "https://ci.example");
}

TEST_F(ApiTest, UnknownPathsAndMethods) {
  auto a = api();
  EXPECT_EQ(a.handle(get("/api/v1/nothing")).status, 404);
  auto del = get("/api/v1/jobs");
  del.method = "DELETE";
  EXPECT_EQ(a.handle(del).status, 405);
  EXPECT_EQ(a.handle(get("/api/v1/jobs/0123")).status, 404);
  EXPECT_EQ(a.handle(get("/ui/../../etc/passwd")).status, 404);
}

TEST_F(ApiTest, TheUiIsServedWithAContentSecurityPolicy) {
  auto a = api();
  auto page = a.handle(get("/"));
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/ui/app.js"), std::string::npos);
  EXPECT_NE(header(page, "Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(header(page, "X-Content-Type-Options"), "nosniff");
  auto js = a.handle(get("/ui/app.js"));
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body.find("innerHTML ="), std::string::npos) << "outside text reaches the page through textContent";
}

TEST_F(ApiTest, AQuestionNeedsAConfiguredLlm) {
  auto a = api();
  auto job = json::parse(a.handle(upload("x")).body);
  auto ask = get("/api/v1/jobs/" + job["id"].get<std::string>() + "/ask");
  ask.method = "POST";
  ask.body = R"({"question":"why?"})";
  EXPECT_EQ(a.handle(ask).status, 409);
}

// --- the runner (the per-job time limit and cancelling are kills) -------------

TEST(ServiceRunner, TheTimeLimitKillsTheProcessGroup) {
  auto runner = make_process_runner("/bin/sh", temp_path("runner_limit"));
  auto t0 = std::chrono::steady_clock::now();
  auto o = runner->run({"-c", "sleep 30 & sleep 30"}, "", std::chrono::milliseconds(200), {});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(ServiceRunner, KeepGoingFalseStopsIt) {
  auto runner = make_process_runner("/bin/sh", temp_path("runner_stop"));
  int asked = 0;
  auto o = runner->run({"-c", "sleep 30"}, "", std::chrono::seconds(60), [&] { return ++asked < 3; });
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->stopped);
  EXPECT_FALSE(o->timed_out);
}

TEST(ServiceRunner, OutputErrorsAndFolder) {
  auto runner = make_process_runner("/bin/sh", temp_path("runner_io"));
  std::string dir = temp_path("runner_cwd");
  std::filesystem::create_directories(dir);
  auto o = runner->run({"-c", "pwd; echo 'keet: report: broken' >&2; exit 2"}, dir, std::chrono::seconds(10), {});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->exit_code, 2);
  EXPECT_EQ(o->out, std::filesystem::canonical(dir).string() + "\n");
  EXPECT_EQ(first_error_line(o->err), "report: broken");
}

// keet timeline says what it runs before it fails: the job's error is its last line.
TEST(ServiceRunner, LastErrorLineSkipsWhatKeetSaidItRan) {
  std::string err =
      "keet: running /opt/nsys export -o /srv/x.sqlite report\nkeet: report: nsys failed\n"
      "keet: warning: something\n\n";
  EXPECT_EQ(first_error_line(err), "running /opt/nsys export -o /srv/x.sqlite report");
  EXPECT_EQ(last_error_line(err), "report: nsys failed");
  EXPECT_EQ(last_error_line("\n"), "keet exited without a message");
}

// A truncated report fails with a warning alone (what was read, where the file
// ends): that warning is the job's error, not "exited without a message".
TEST(ServiceRunner, AWarningAloneIsTheError) {
  std::string err =
      "keet: warning: report: at byte 255066: block payload of 11081 bytes runs past the end of the file "
      "(8471 left); read 20 kernel(s) before it\n";
  std::string expected =
      "report: at byte 255066: block payload of 11081 bytes runs past the end of the file (8471 left); read 20 "
      "kernel(s) before it";
  EXPECT_EQ(first_error_line(err), expected);
  EXPECT_EQ(last_error_line(err), expected);
  EXPECT_EQ(first_error_line("keet: warning: a\nkeet: report: broken\n"), "report: broken");
}

TEST(ServiceRunner, AResultIsHeldInABufferOfItsOwnSize) {
  auto runner = make_process_runner("/bin/sh", temp_path("runner_size"));
  auto o = runner->run({"-c", "printf 'small result'"}, "", std::chrono::seconds(10), {});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->out, "small result");
  EXPECT_LT(o->out.capacity(), 4096u);  // not the 64 MiB limit, zero-filled
}

// --- the job store -----------------------------------------------------------

Job queued(const std::string& id, int64_t at) {
  Job j;
  j.id = id;
  j.name = id;
  j.report = std::string(64, 'a');
  j.created_at = at;
  return j;
}

void claims_are_exclusive_and_stale_ones_return(JobStore& s) {
  ASSERT_TRUE(s.add(queued("j1", 1)));
  ASSERT_TRUE(s.add(queued("j2", 2)));
  EXPECT_EQ(*s.waiting(), 2);
  auto a = s.claim("w1", "c1", 100, 0);
  ASSERT_TRUE(a && *a);
  EXPECT_EQ((*a)->id, "j1") << "oldest first";
  EXPECT_EQ((*a)->attempts, 1);
  auto b = s.claim("w2", "c2", 100, 0);
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->id, "j2");
  auto none = s.claim("w3", "c3", 100, 0);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "a fresh claim is not taken";
  auto beat = s.beat(**a, 900, 0.5, "html");
  ASSERT_TRUE(beat && *beat);
  EXPECT_FALSE(**beat);
  // w2 stops beating: after its lease j2 is claimed again, by w3.
  auto again = s.claim("w3", "c3", 1000, 500);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->id, "j2");
  EXPECT_EQ((*again)->attempts, 2);
  // The old claim cannot report nor finish any more.
  auto old_beat = s.beat(**b, 1001, 0.9, "x");
  ASSERT_TRUE(old_beat);
  EXPECT_FALSE(*old_beat);
  auto old_finish = s.finish(**b, JobState::Done, "", 1002, {{"json", "{}"}});
  ASSERT_TRUE(old_finish);
  EXPECT_FALSE(*old_finish);
  auto finished = s.finish(**again, JobState::Done, "", 1003, {{"json", "{\"a\":1}"}});
  ASSERT_TRUE(finished);
  EXPECT_TRUE(*finished);
  EXPECT_EQ(**s.result("j2", "json"), "{\"a\":1}");
  EXPECT_EQ((**s.get("j2")).state, JobState::Done);
  // j1's worker stops too, and its second worker: the job fails, it is not tried a third time.
  auto second = s.claim("w4", "c4", 5000, 4000);
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->id, "j1");
  auto third = s.claim("w5", "c5", 9000, 8000);
  ASSERT_TRUE(third);
  EXPECT_FALSE(*third);
  auto j1 = **s.get("j1");
  EXPECT_EQ(j1.state, JobState::Failed);
  EXPECT_NE(j1.error.find("stopped"), std::string::npos) << j1.error;
}

void cancel_and_remove(JobStore& s) {
  ASSERT_TRUE(s.add(queued("q", 1)));
  ASSERT_TRUE(s.add(queued("r", 2)));
  EXPECT_TRUE(*s.cancel("q", 10));
  EXPECT_EQ((**s.get("q")).state, JobState::Cancelled);
  auto r = s.claim("w", "c", 20, 0);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->id, "r");
  EXPECT_TRUE(*s.cancel("r", 30));
  auto beat = s.beat(**r, 31, 0.1, "json");
  ASSERT_TRUE(beat && *beat);
  EXPECT_TRUE(**beat) << "the worker learns it should stop";
  EXPECT_FALSE(*s.cancel("q", 40)) << "already over";
  EXPECT_TRUE(*s.remove("r"));
  EXPECT_FALSE(*s.get("r"));
  EXPECT_FALSE(*s.remove("r"));
}

class SqliteJobStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        temp_path("jobs_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".sqlite");
    std::filesystem::remove(path_);
    auto s = open_job_store("sqlite:" + path_);
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove(path_);
  }
  std::string path_;
  std::unique_ptr<JobStore> store_;
};

TEST_F(SqliteJobStore, ClaimsAreExclusiveAndStaleOnesReturn) { claims_are_exclusive_and_stale_ones_return(*store_); }
TEST_F(SqliteJobStore, CancelAndRemove) { cancel_and_remove(*store_); }

// A diff job's pairs come back from the store as they went in.
void pairs_are_kept(JobStore& s) {
  Job diff = queued("d", 1);
  diff.kind = JobKind::Diff;
  diff.report2 = std::string(64, 'b');
  diff.pairs = {{1, 0}, {0, 12}};
  ASSERT_TRUE(s.add(diff));
  ASSERT_TRUE(s.add(queued("plain", 2)));
  EXPECT_EQ((**s.get("d")).pairs, diff.pairs);
  EXPECT_TRUE((**s.get("plain")).pairs.empty());
  auto claimed = s.claim("w", "c", 10, 0);
  ASSERT_TRUE(claimed && *claimed);
  EXPECT_EQ((*claimed)->id, "d");
  EXPECT_EQ((*claimed)->pairs, diff.pairs);
}

// The keet_jobs table as stores made before diff jobs kept pairs created it, with one queued job.
constexpr const char* kTableWithoutPairs[] = {
    "CREATE TABLE keet_jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,"
    " name TEXT NOT NULL, report TEXT NOT NULL, report2 TEXT NOT NULL, baseline TEXT NOT NULL,"
    " created_at BIGINT NOT NULL, started_at BIGINT NOT NULL, finished_at BIGINT NOT NULL, heartbeat_at BIGINT NOT "
    "NULL,"
    " worker TEXT NOT NULL, claim TEXT NOT NULL, attempts INTEGER NOT NULL, progress DOUBLE PRECISION NOT NULL,"
    " stage TEXT NOT NULL, cancel INTEGER NOT NULL, error TEXT NOT NULL, size BIGINT NOT NULL)",
    "INSERT INTO keet_jobs VALUES ('old', 'diff', 'queued', 'a vs b', 'r1', 'r2', '', 1, 0, 0, 0, '', '', 0, 0, '', 0, "
    "'', 9)"};

// Opened (twice, as two processes would), the old table gains the column; its job has no pairs.
void an_old_store_gains_the_pairs_column(const std::string& url) {
  for (int open = 0; open < 2; ++open) {
    auto s = open_job_store(url);
    ASSERT_TRUE(s) << s.error().message;
    auto old = (*s)->get("old");
    ASSERT_TRUE(old && *old);
    EXPECT_EQ((*old)->name, "a vs b");
    EXPECT_TRUE((*old)->pairs.empty());
  }
  auto s = open_job_store(url);
  ASSERT_TRUE(s);
  pairs_are_kept(**s);
}

TEST_F(SqliteJobStore, PairsAreKept) { pairs_are_kept(*store_); }

TEST_F(SqliteJobStore, AnOldStoreGainsThePairsColumn) {
  store_.reset();
  std::filesystem::remove(path_);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  for (const char* sql : kTableWithoutPairs)
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
  an_old_store_gains_the_pairs_column("sqlite:" + path_);
}

TEST_F(SqliteJobStore, JobsSurviveReopening) {
  ASSERT_TRUE(store_->add(queued("kept", 1)));
  store_.reset();
  auto again = open_job_store("sqlite:" + path_);
  ASSERT_TRUE(again);
  auto j = (*again)->get("kept");
  ASSERT_TRUE(j && *j);
  EXPECT_EQ((*j)->state, JobState::Queued);
}

// One server for the suite (started on first use); each test gets its own database.
keet::testing::PgServer* job_pg_server(std::string& why) {
  static std::string reason;
  static std::optional<keet::testing::PgServer> server = keet::testing::PgServer::start(reason);
  why = reason;
  return server ? &*server : nullptr;
}

class PgJobStore : public ::testing::Test {
 protected:
  void SetUp() override { server_ = job_pg_server(why_); }
  std::string database() {
    static int databases = 0;
    return server_ ? server_->create_database("jobs_" + std::to_string(++databases)) : "";
  }
  keet::testing::PgServer* server_ = nullptr;
  std::string why_;
};

#define KEET_REQUIRE_PG() \
  if (!server_) GTEST_SKIP() << "no PostgreSQL server: " << why_

TEST_F(PgJobStore, ClaimsAreExclusiveAndStaleOnesReturn) {
  KEET_REQUIRE_PG();
  auto s = open_job_store(database());
  ASSERT_TRUE(s) << s.error().message;
  claims_are_exclusive_and_stale_ones_return(**s);
}

TEST_F(PgJobStore, PairsAreKept) {
  KEET_REQUIRE_PG();
  auto s = open_job_store(database());
  ASSERT_TRUE(s) << s.error().message;
  pairs_are_kept(**s);
}

TEST_F(PgJobStore, AnOldStoreGainsThePairsColumn) {
  KEET_REQUIRE_PG();
  std::string url = database();
  ASSERT_TRUE(store::load_libpq());
  PGconn* conn = store::pq().connectdb(store::pg_connect_url(url).c_str());
  ASSERT_EQ(store::pq().status(conn), CONNECTION_OK) << store::pq().error_message(conn);
  for (const char* sql : kTableWithoutPairs) {
    PGresult* r = store::pq().exec(conn, sql);
    EXPECT_EQ(store::pq().result_status(r), PGRES_COMMAND_OK) << sql << ": " << store::pq().error_message(conn);
    store::pq().clear(r);
  }
  store::pq().finish(conn);
  an_old_store_gains_the_pairs_column(url);
}

TEST_F(PgJobStore, CancelAndRemove) {
  KEET_REQUIRE_PG();
  auto s = open_job_store(database());
  ASSERT_TRUE(s) << s.error().message;
  cancel_and_remove(**s);
}

// The database restarts (every connection dropped, as in a crash): the next
// call connects again and succeeds; while it is down, calls fail at once with
// the reason, and when it is back they succeed without reopening the store.
TEST_F(PgJobStore, ARestartedDatabaseIsConnectedToAgain) {
  KEET_REQUIRE_PG();
  auto s = open_job_store(database());
  ASSERT_TRUE(s) << s.error().message;
  JobStore& store = **s;
  ASSERT_TRUE(store.add(queued("before", 1)));
  ASSERT_TRUE(server_->restart());
  auto got = store.get("before");
  ASSERT_TRUE(got) << "the first call after the restart: " << got.error().message;
  EXPECT_TRUE(*got);
  ASSERT_TRUE(store.add(queued("after", 2)));
  EXPECT_TRUE(store.ping());

  ASSERT_TRUE(server_->stop());
  auto started = std::chrono::steady_clock::now();
  auto down = store.ping();
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, ExitCode::Dependency);
  EXPECT_EQ(down.error().message.find("postgres@"), std::string::npos)
      << "no user name in the message: " << down.error().message;
  EXPECT_FALSE(store.claim("w", "c", 10, 0)) << "no claim while the database is down";
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5)) << "a down database answers fast";

  ASSERT_TRUE(server_->start_again());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // connecting again is tried once a second
  auto back = store.claim("w", "c", 10, 0);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(*back);
  EXPECT_EQ((*back)->id, "before");
  EXPECT_EQ(*store.waiting(), 1);
}

// A client is told that the store failed and why, not where it is: neither
// the database's address nor the data folder is in an answer (the log has them).
TEST_F(PgJobStore, AStoreFailureNamesNoServerAddress) {
  KEET_REQUIRE_PG();
  std::string url = database();
  auto s = open_job_store(url);
  ASSERT_TRUE(s) << s.error().message;
  std::string dir = temp_path("service_pg_paths_" + std::to_string(getpid()));
  BlobStore blobs(dir);
  auto runner = make_process_runner(keet::testing::keet_binary(), dir + "/runs");
  ServiceOptions opt;
  opt.data_dir = dir;
  std::vector<std::string> lines;
  opt.log = [&lines](std::string_view line) { lines.emplace_back(line); };
  Api api(**s, blobs, *runner, nullptr, opt, [] { return int64_t{1000}; });
  Request list = loopback_get("/api/v1/jobs");
  ASSERT_EQ(api.handle(list).status, 200);
  ASSERT_TRUE(server_->stop());
  std::string address = url.substr(url.find('@') + 1);  // 127.0.0.1:PORT/DB
  std::string host = address.substr(0, address.find(':'));
  std::string port = address.substr(host.size() + 1, address.find('/') - host.size() - 1);
  // libpq spells them apart ("server at \"127.0.0.1\", port 5433"): neither may show.
  auto names_the_server = [&](const std::string& body) {
    return body.find(host) != std::string::npos || body.find(port) != std::string::npos;
  };
  auto failed = api.handle(list);
  EXPECT_EQ(failed.status, 503);
  EXPECT_FALSE(names_the_server(failed.body)) << failed.body;
  EXPECT_NE(failed.body.find("the job store"), std::string::npos) << failed.body;
  auto health = api.handle(loopback_get("/api/v1/info"));
  EXPECT_EQ(health.status, 503);
  EXPECT_FALSE(names_the_server(health.body)) << health.body;
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("event=store.error"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(address.substr(0, address.find('/'))), std::string::npos)
      << "the log keeps the address: " << lines[0];
  ASSERT_TRUE(server_->start_again());
  std::filesystem::remove_all(dir);
}

// Four connections (as four processes would have) claim 40 jobs at once:
// SKIP LOCKED hands each job to exactly one of them.
TEST_F(PgJobStore, ConcurrentClaimersNeverShareAJob) {
  KEET_REQUIRE_PG();
  std::string url = database();
  std::vector<std::unique_ptr<JobStore>> stores;
  for (int i = 0; i < 4; ++i) {
    auto s = open_job_store(url);
    ASSERT_TRUE(s) << s.error().message;
    stores.push_back(std::move(*s));
  }
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(stores[0]->add(queued("job" + std::to_string(i), i)));
  std::vector<std::vector<std::string>> claimed(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (;;) {
        auto j = stores[t]->claim("w" + std::to_string(t), "c" + std::to_string(t), 100, 0);
        if (!j || !*j) return;
        claimed[t].push_back((*j)->id);
      }
    });
  for (auto& t : threads) t.join();
  std::multiset<std::string> all;
  for (const auto& c : claimed) all.insert(c.begin(), c.end());
  EXPECT_EQ(all.size(), 40u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 40u) << "a job was claimed twice";
}

}  // namespace
}  // namespace keet::service
