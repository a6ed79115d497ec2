// The history store suite, run against both backends: SQLite (a temp file) and
// PostgreSQL (a real server the test starts itself; skipped with the reason
// when it cannot be started).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

#include "store/history.h"
#include "store/libpq.h"
#include "store/sql.h"
#include "support/pg_server.h"
#include "support/testing.h"
#include "util/strings.h"

namespace keet::store {
namespace {

using compare::KernelSnapshot;

KernelSnapshot kernel(std::string name, std::string device, double ns, std::vector<std::string> findings = {}) {
  KernelSnapshot s;
  s.display = std::move(name);
  s.grid = {128, 1, 1};
  s.block = {256, 1, 1};
  s.device = std::move(device);
  s.duration_ns = ns;
  s.bottleneck = "memory";
  s.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 42.5;
  for (auto& f : findings) s.findings.push_back({f, "t", "high", 1.25});
  return s;
}

Run run(std::string tag, int64_t at, std::vector<KernelSnapshot> kernels) {
  return Run{0, std::move(tag), "abc123", at, "r.ncu-rep", std::move(kernels)};
}

// One server for the whole binary; each test gets its own database.
testing::PgServer* pg_server(std::string& why) {
  static std::string reason;
  static std::optional<testing::PgServer> server = testing::PgServer::start(reason);
  why = reason;
  return server ? &*server : nullptr;
}

class LoopStore : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int counter = 0;
    std::string name = "store" + std::to_string(counter++);
    if (GetParam() == "sqlite") {
      url_ = "sqlite:" + testing::temp_path(name + ".sqlite");
      return;
    }
    std::string why;
    auto* server = pg_server(why);
    if (!server) GTEST_SKIP() << "PostgreSQL tests skipped: " << why;
    url_ = server->create_database(name);
  }
  std::unique_ptr<HistoryStore> open() {
    auto s = open_store(url_);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? std::move(*s) : nullptr;
  }
  std::string url_;
};

TEST_P(LoopStore, RecordsAndReadsBackWholeRuns) {
  auto store = open();
  ASSERT_TRUE(store);
  auto id = store->record(
      run("main", 100, {kernel("a", "GPU0", 10, {"memory.uncoalesced_global"}), kernel("b", "GPU0", 20)}));
  ASSERT_TRUE(id) << id.error().message;
  auto runs = store->runs();
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 1u);
  const auto& r = (*runs)[0];
  EXPECT_EQ(r.id, *id);
  EXPECT_EQ(r.tag, "main");
  EXPECT_EQ(r.commit, "abc123");
  EXPECT_EQ(r.recorded_at, 100);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].display, "a");
  EXPECT_EQ(r.kernels[1].duration_ns, 20);
  EXPECT_EQ(r.kernels[0].metrics.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 42.5);
  ASSERT_EQ(r.kernels[0].findings.size(), 1u);
  EXPECT_EQ(r.kernels[0].findings[0].id, "memory.uncoalesced_global");
  EXPECT_EQ(r.device(), "GPU0");
}

TEST_P(LoopStore, NewestFirstWithLimitAndSurvivesReopen) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    for (int t : {300, 100, 200}) ASSERT_TRUE(store->record(run("t" + std::to_string(t), t, {kernel("k", "G", t)})));
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto all = store->runs();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].recorded_at, 300);
  EXPECT_EQ((*all)[2].recorded_at, 100);
  auto two = store->runs(2);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), 2u);
}

TEST_P(LoopStore, BaselineMatchesTagAndDevice) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->record(run("main", 100, {kernel("k", "A100", 10)})));
  ASSERT_TRUE(store->record(run("main", 200, {kernel("k", "RTX", 11)})));
  ASSERT_TRUE(store->record(run("pr", 300, {kernel("k", "A100", 12)})));
  auto main_a100 = store->baseline("main", "A100");
  ASSERT_TRUE(main_a100);
  ASSERT_TRUE(main_a100->has_value());
  EXPECT_EQ((*main_a100)->recorded_at, 100);
  auto latest = store->baseline("latest", "A100");
  ASSERT_TRUE(latest && latest->has_value());
  EXPECT_EQ((*latest)->recorded_at, 300);
  auto none = store->baseline("main", "H100");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST_P(LoopStore, ConcurrentThreadsLoseNothing) {
  ASSERT_TRUE(open());  // schema exists before the race, like a CI cache would
  constexpr int kThreads = 6, kRuns = 8;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto s = open_store(url_);
      if (!s) return void(failures += kRuns);
      for (int i = 0; i < kRuns; ++i)
        if (!(*s)->record(run("t" + std::to_string(t), i, {kernel("a", "G", i), kernel("b", "G", i)}))) ++failures;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto runs = open()->runs();
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), size_t{kThreads * kRuns});
  for (const auto& r : *runs) EXPECT_EQ(r.kernels.size(), 2u) << "run " << r.id << " is torn";
}

TEST_P(LoopStore, ConcurrentProcessesLoseNothing) {
  // No warm-up open: first-time schema creation races too.
  constexpr int kProcs = 5, kRuns = 6;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      auto s = open_store(url_);
      int bad = s ? 0 : kRuns;
      if (!s) fprintf(stderr, "open: %s\n", s.error().message.c_str());
      for (int i = 0; s && i < kRuns; ++i)
        if (auto r = (*s)->record(run("p", i, {kernel("k", "G", i)})); !r) {
          ++bad;
          fprintf(stderr, "record: %s\n", r.error().message.c_str());
        }
      _exit(bad);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer failed";
  }
  auto runs = open()->runs();
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), size_t{kProcs * kRuns});
}

INSTANTIATE_TEST_SUITE_P(Backends, LoopStore, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

TEST(LoopStoreOpen, UrlsAndErrors) {
  EXPECT_EQ(default_store_path("/x/data", "/home/u"), "/x/data/keet/history.sqlite");
  EXPECT_EQ(default_store_path("", "/home/u"), "/home/u/.local/share/keet/history.sqlite");
  auto bad_pg = open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2");
  ASSERT_FALSE(bad_pg);
  EXPECT_EQ(bad_pg.error().code, ExitCode::Dependency);
  auto bad_path = open_store("/proc/keet-cannot-be-here/h.sqlite");
  ASSERT_FALSE(bad_path);
  EXPECT_EQ(bad_path.error().code, ExitCode::BadInput);
  EXPECT_NE(bad_path.error().message.find("/proc/keet-cannot-be-here"), std::string::npos);
}

TEST(LoopStoreOpen, PasswordIsNotShownInErrors) {
  auto r = open_store("postgresql://user:s3cret@127.0.0.1:1/db?connect_timeout=2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find("s3cret"), std::string::npos);
}

TEST(LoopStoreOpen, PasswordParameterIsRedactedEverywhere) {
  EXPECT_EQ(pg_display_url("postgresql://u:pw@h:5/db?password=s3cret&sslmode=require"),
            "postgresql://h:5/db?password=<redacted>&sslmode=require");
  EXPECT_EQ(pg_display_url("postgres://h/db?sslmode=disable&PassWord=x"),
            "postgres://h/db?sslmode=disable&PassWord=<redacted>");
  EXPECT_EQ(pg_display_url("postgresql://h/db?application_name=a@b"), "postgresql://h/db?application_name=a@b");
  auto r = open_store("postgresql://user@127.0.0.1:1/db?password=s3cret&connect_timeout=2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find("s3cret"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("password=<redacted>"), std::string::npos) << r.error().message;
}

TEST(LoopStoreOpen, ConnectTimeoutByDefault) {
  EXPECT_EQ(pg_connect_url("postgresql://h/db"), "postgresql://h/db?connect_timeout=10");
  EXPECT_EQ(pg_connect_url("postgresql://h/db?sslmode=disable"),
            "postgresql://h/db?sslmode=disable&connect_timeout=10");
  EXPECT_EQ(pg_connect_url("postgresql://h/db?Connect_Timeout=3"), "postgresql://h/db?Connect_Timeout=3");
  // A port that accepts connections and never answers: the kernel completes
  // the handshake for the listen backlog, and libpq waits for a reply.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto started = std::chrono::steady_clock::now();
  auto r = open_store("postgresql://u:pw@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/db");
  auto took = std::chrono::steady_clock::now() - started;
  close(fd);
  if (!r && r.error().message.find("libpq") != std::string::npos) GTEST_SKIP() << r.error().message;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ExitCode::Dependency);
  EXPECT_LT(took, std::chrono::seconds(kPgConnectTimeoutS + 5));
}

TEST(LoopStorePg, ReadersNeverWaitForTheWritersLock) {
  std::string why;
  auto* server = pg_server(why);
  if (!server) GTEST_SKIP() << "PostgreSQL tests skipped: " << why;
  std::string url = server->create_database("lockfree");
  ASSERT_TRUE(open_store(url).value()->record(run("main", 1, {kernel("k", "A", 1)})));
  // Another process holds the schema lock (as a writer creating the schema would).
  PGconn* holder = pq().connectdb(url.c_str());
  ASSERT_EQ(pq().status(holder), CONNECTION_OK);
  PGresult* locked = pq().exec(holder, "SELECT pg_advisory_lock(7321001)");
  ASSERT_EQ(pq().result_status(locked), PGRES_TUPLES_OK);
  pq().clear(locked);
  auto reader = open_store(url);
  ASSERT_TRUE(reader) << reader.error().message;
  auto runs = (*reader)->runs();
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), 1u);
  EXPECT_TRUE((*reader)->record(run("main", 2, {kernel("k", "A", 1)})));  // nor do writers, once the schema exists
  pq().finish(holder);
}

TEST(LoopStoreBaseline, PicksNewestOnDevice) {
  std::vector<store::Run> runs = {run("x", 3, {kernel("k", "B", 1)}), run("x", 2, {kernel("k", "A", 1)}),
                                  run("y", 1, {kernel("k", "A", 1)})};
  EXPECT_EQ(pick_baseline(runs, "latest", "A")->recorded_at, 2);
  EXPECT_EQ(pick_baseline(runs, "y", "A")->recorded_at, 1);
  EXPECT_FALSE(pick_baseline(runs, "y", "B"));
}

}  // namespace
}  // namespace keet::store

namespace keet::store {
namespace {

// Calibration points live beside the runs, in both backends; a history made
// before they were kept (runs only) takes them on its first write.
TEST_P(LoopStore, CalibrationPointsRoundTripBesideRuns) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    auto none = store->calibration_points();
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());
    ASSERT_TRUE(store->record(run("main", 100, {kernel("a", "GPU0", 10)})));
    std::vector<compare::CalibrationPoint> points = {
        {"diff", "memory.uncoalesced_global", "8.6", "addConstDouble3", 1.75, 2.5, 100},
        {"tune", "occupancy.low", "9.0", "k", 1.2, 0.95, 101}};
    auto added = store->add_calibration(points);
    ASSERT_TRUE(added) << added.error().message;
    ASSERT_TRUE(store->add_calibration({}));
  }
  auto store = open();  // reopened: nothing was held in memory
  ASSERT_TRUE(store);
  auto back = store->calibration_points();
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].source, "diff");
  EXPECT_EQ((*back)[0].rule, "memory.uncoalesced_global");
  EXPECT_EQ((*back)[0].arch, "8.6");
  EXPECT_EQ((*back)[0].kernel, "addConstDouble3");
  EXPECT_DOUBLE_EQ((*back)[0].predicted, 1.75);
  EXPECT_DOUBLE_EQ((*back)[0].measured, 2.5);
  EXPECT_EQ((*back)[1].recorded_at, 101);
  auto runs = store->runs();
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), 1u);  // the runs are untouched
}

// The one SQL connection under the history and the job queue: typed values come
// back exactly (a double's 17 digits, NULL, int64's extremes, quotes), $N may
// repeat, a failed transaction leaves nothing, and errors name the database
// and the statement.
TEST_P(LoopStore, SqlConnectionKeepsValuesExactly) {
  auto conn = GetParam() == "sqlite"
                  ? open_sqlite_connection(url_.substr(7), {.label = "L", .open_error = "cannot open"})
                  : open_postgres_connection(pg_connect_url(url_), "L");
  ASSERT_TRUE(conn) << conn.error().message;
  auto& db = **conn;
  ASSERT_TRUE(db.exec("", "CREATE TABLE t (x DOUBLE PRECISION, s TEXT, n BIGINT)"));
  auto exists = db.table_exists("t");
  ASSERT_TRUE(exists);
  EXPECT_TRUE(*exists);
  auto absent = db.table_exists("no_such_table");
  ASSERT_TRUE(absent);
  EXPECT_FALSE(*absent);

  double third = 1.0 / 3, sum = 0.1 + 0.2;
  std::vector<std::vector<SqlValue>> rows = {{third, "it's \xc3\xa9", std::numeric_limits<int64_t>::max()},
                                             {sum, SqlValue(), std::numeric_limits<int64_t>::min()},
                                             {std::optional<double>(), "", int64_t{0}}};
  for (const auto& r : rows) ASSERT_TRUE(db.query("insert", "INSERT INTO t (x, s, n) VALUES ($1, $2, $3)", r));
  SqlValue n = std::numeric_limits<int64_t>::max();
  auto back = db.query("select", "SELECT x, s, n FROM t WHERE n = $1 OR n = $1 ORDER BY n", {&n, 1});
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(parse_number((*back)[0][0]), third);
  EXPECT_EQ((*back)[0][1], "it's \xc3\xa9");
  EXPECT_EQ((*back)[0][2], std::to_string(std::numeric_limits<int64_t>::max()));
  auto all = db.query("select", "SELECT x, s, n FROM t ORDER BY n");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(parse_number((*all)[0][0]), sum);
  EXPECT_EQ((*all)[0][1], "");  // NULL reads as empty text
  EXPECT_EQ((*all)[1][0], "");

  auto undone = db.in_transaction(GetParam() == "sqlite" ? "BEGIN IMMEDIATE" : "BEGIN", [&]() -> Result<void> {
    KEET_TRY_VOID(db.query("insert", "INSERT INTO t (x, s, n) VALUES (1, 'x', 7)"));
    return fail(ExitCode::Failed, "changed my mind");
  });
  ASSERT_FALSE(undone);
  EXPECT_EQ(undone.error().message, "changed my mind");
  auto count = db.query("count", "SELECT COUNT(*) FROM t");
  ASSERT_TRUE(count);
  EXPECT_EQ((*count)[0][0], "3");

  auto bad = db.query("read widgets", "SELECT * FROM widgets");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::Dependency);
  EXPECT_TRUE(bad.error().message.starts_with("L: read widgets: ")) << bad.error().message;
  EXPECT_NE(bad.error().message.find("widgets"), std::string::npos);
}

}  // namespace
}  // namespace keet::store
