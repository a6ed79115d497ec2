// One job store over two SQL connections. Every statement is written once with
// $N parameters (SQLite reads them as ?N); the only dialect difference is how
// a claim skips rows another process is claiming: PostgreSQL locks the row
// (FOR UPDATE SKIP LOCKED), SQLite serialises writers on the file.
#include "service/job_store.h"
#include "util/error.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "render/diff.h"
#include "store/history.h"
#include "store/libpq.h"
#include "util/strings.h"

namespace keet::service {

std::string_view kind_name(JobKind k) { return k == JobKind::Diff ? "diff" : "analyze"; }

std::string_view state_name(JobState s) {
  switch (s) {
    case JobState::Queued:
      return "queued";
    case JobState::Running:
      return "running";
    case JobState::Done:
      return "done";
    case JobState::Failed:
      return "failed";
    case JobState::Cancelled:
      return "cancelled";
  }
  return "queued";
}

bool terminal(JobState s) { return s == JobState::Done || s == JobState::Failed || s == JobState::Cancelled; }

namespace {

JobState parse_state(const std::string& s) {
  for (auto st : {JobState::Queued, JobState::Running, JobState::Done, JobState::Failed, JobState::Cancelled})
    if (state_name(st) == s) return st;
  return JobState::Failed;
}

using Row = std::vector<std::string>;
using Params = std::vector<std::string>;

// A connection that runs one statement with text parameters and text results.
class SqlConn {
 public:
  virtual ~SqlConn() = default;
  virtual Result<std::vector<Row>> query(const std::string& sql, const Params& params) = 0;
  virtual const char* begin() const = 0;  // a write transaction
  virtual const char* skip_locked() const = 0;
  virtual std::string describe() const = 0;
  virtual bool shared() const = 0;
  // The database dropped the connection (only a server connection can).
  virtual bool lost() const { return false; }
  virtual Result<void> reconnect() { return {}; }
};

class SqliteConn final : public SqlConn {
 public:
  SqliteConn(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConn() override { sqlite3_close(db_); }

  Result<std::vector<Row>> query(const std::string& sql, const Params& params) override {
    std::string text = sql;
    for (auto& c : text)
      if (c == '$') c = '?';
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, text.c_str(), -1, &st, nullptr) != SQLITE_OK) return error();
    for (size_t i = 0; i < params.size(); ++i)
      sqlite3_bind_text(st, static_cast<int>(i + 1), params[i].data(), static_cast<int>(params[i].size()),
                        SQLITE_TRANSIENT);
    std::vector<Row> rows;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      Row row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        auto p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        row.emplace_back(p ? std::string(p, sqlite3_column_bytes(st, c)) : "");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return error();
    return rows;
  }
  const char* begin() const override { return "BEGIN IMMEDIATE"; }
  const char* skip_locked() const override { return ""; }
  std::string describe() const override { return "sqlite:" + path_; }
  bool shared() const override { return false; }

 private:
  std::unexpected<Error> error() const {
    return fail(ExitCode::Dependency, fmt::format("{}: {}", describe(), sqlite3_errmsg(db_)));
  }
  sqlite3* db_;
  std::string path_;
};

class PgConn final : public SqlConn {
 public:
  PgConn(PGconn* conn, std::string url) : conn_(conn), url_(std::move(url)) {}
  ~PgConn() override { store::pq().finish(conn_); }

  Result<std::vector<Row>> query(const std::string& sql, const Params& params) override {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* res = store::pq().exec_params(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                            nullptr, nullptr, 0);
    auto status = store::pq().result_status(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string msg = store::pq().error_message(conn_);
      store::pq().clear(res);
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      return fail(ExitCode::Dependency, fmt::format("{}: {}", url_, msg));
    }
    std::vector<Row> rows;
    for (int r = 0; r < store::pq().ntuples(res); ++r) {
      Row row;
      for (int c = 0; c < columns_; ++c) row.emplace_back(store::pq().getvalue(res, r, c));
      rows.push_back(std::move(row));
    }
    store::pq().clear(res);
    return rows;
  }
  // Every query names its columns; the caller says how many it reads.
  void expect_columns(int n) { columns_ = n; }
  const char* begin() const override { return "BEGIN"; }
  const char* skip_locked() const override { return " FOR UPDATE SKIP LOCKED"; }
  std::string describe() const override { return url_; }
  bool shared() const override { return true; }
  bool lost() const override { return store::pq().status(conn_) == CONNECTION_BAD; }
  // PQreset connects again with the same parameters (and notice processor).
  Result<void> reconnect() override {
    store::pq().reset(conn_);
    if (store::pq().status(conn_) == CONNECTION_OK) return {};
    std::string msg = store::pq().error_message(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return fail(ExitCode::Dependency, fmt::format("{}: connection lost, cannot connect again: {}", url_, msg));
  }

 private:
  PGconn* conn_;
  std::string url_;
  int columns_ = 0;
};

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS keet_jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,"
    " name TEXT NOT NULL, report TEXT NOT NULL, report2 TEXT NOT NULL, baseline TEXT NOT NULL,"
    " created_at BIGINT NOT NULL, started_at BIGINT NOT NULL, finished_at BIGINT NOT NULL, heartbeat_at BIGINT NOT "
    "NULL,"
    " worker TEXT NOT NULL, claim TEXT NOT NULL, attempts INTEGER NOT NULL, progress DOUBLE PRECISION NOT NULL,"
    " stage TEXT NOT NULL, cancel INTEGER NOT NULL, error TEXT NOT NULL, size BIGINT NOT NULL,"
    " pairs TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS keet_job_results (job_id TEXT NOT NULL, format TEXT NOT NULL, body TEXT NOT NULL,"
    " PRIMARY KEY (job_id, format))",
    "CREATE INDEX IF NOT EXISTS keet_jobs_queue ON keet_jobs (state, created_at)",
};

constexpr const char* kColumns =
    "id, kind, state, name, report, report2, baseline, created_at, started_at, finished_at, heartbeat_at, worker,"
    " claim, attempts, progress, stage, cancel, error, size, pairs";
constexpr int kColumnCount = 20;

// A diff's pairs as the column keeps them: "1:0 0:1" (what --pair takes).
std::string pairs_text(const std::vector<std::pair<int, int>>& pairs) {
  std::string out;
  for (auto [i, j] : pairs) out += fmt::format("{}{}:{}", out.empty() ? "" : " ", i, j);
  return out;
}

std::vector<std::pair<int, int>> pairs_from(const std::string& text) {
  std::vector<std::pair<int, int>> out;
  for (auto word : split(text, ' '))
    if (auto p = compare::parse_pair(word)) out.push_back(*p);
  return out;
}

int64_t to_int(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (...) {
    return 0;
  }
}

Job job_from(const Row& r) {
  Job j;
  j.id = r[0];
  j.kind = r[1] == "diff" ? JobKind::Diff : JobKind::Analyze;
  j.state = parse_state(r[2]);
  j.name = r[3];
  j.report = r[4];
  j.report2 = r[5];
  j.baseline = r[6];
  j.created_at = to_int(r[7]);
  j.started_at = to_int(r[8]);
  j.finished_at = to_int(r[9]);
  j.heartbeat_at = to_int(r[10]);
  j.worker = r[11];
  j.claim = r[12];
  j.attempts = static_cast<int>(to_int(r[13]));
  try {
    j.progress = r[14].empty() ? 0 : std::stod(r[14]);
  } catch (...) {
  }
  j.stage = r[15];
  j.cancel_requested = to_int(r[16]) != 0;
  j.error = r[17];
  j.size = to_int(r[18]);
  j.pairs = pairs_from(r[19]);
  return j;
}

std::string str(int64_t v) { return std::to_string(v); }

class SqlJobStore final : public JobStore {
 public:
  explicit SqlJobStore(std::unique_ptr<SqlConn> conn) : conn_(std::move(conn)) {}

  Result<void> init() {
    std::lock_guard lock(mu_);
    // Concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL's
    // catalog, so processes starting together take turns.
    if (conn_->shared()) {
      KEET_TRY_VOID(run("BEGIN", {}, 0));
      KEET_TRY_VOID(run("SELECT pg_advisory_xact_lock(7321014)", {}, 0));
    }
    for (const char* sql : kSchema)
      if (auto r = run(sql, {}, 0); !r) {
        if (conn_->shared()) (void)run("ROLLBACK", {}, 0);
        return std::unexpected(r.error());
      }
    if (auto r = add_pairs_column(); !r) {
      if (conn_->shared()) (void)run("ROLLBACK", {}, 0);
      return std::unexpected(r.error());
    }
    if (conn_->shared()) KEET_TRY_VOID(run("COMMIT", {}, 0));
    return {};
  }

  Result<void> add(const Job& j) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<void> {
      KEET_TRY(r, run(fmt::format("INSERT INTO keet_jobs ({}) VALUES "
                                  "($1,$2,$3,$4,$5,$6,$7,$8,0,0,0,'','',0,0,'',0,'',$9,$10)",
                                  kColumns),
                      {j.id, std::string(kind_name(j.kind)), "queued", j.name, j.report, j.report2, j.baseline,
                       str(j.created_at), str(j.size), pairs_text(j.pairs)},
                      0));
      return {};
    });
  }

  Result<std::optional<Job>> get(const std::string& id) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<Job>> {
      return one(fmt::format("SELECT {} FROM keet_jobs WHERE id = $1", kColumns), {id});
    });
  }

  Result<std::vector<Job>> list(size_t limit) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::vector<Job>> {
      KEET_TRY(rows, run(fmt::format("SELECT {} FROM keet_jobs ORDER BY created_at DESC, id LIMIT $1", kColumns),
                         {str(static_cast<int64_t>(limit))}, kColumnCount));
      std::vector<Job> out;
      for (const auto& r : *rows) out.push_back(job_from(r));
      return out;
    });
  }

  Result<int64_t> waiting() override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<int64_t> {
      KEET_TRY(rows, run("SELECT COUNT(*) FROM keet_jobs WHERE state = 'queued'", {}, 1));
      return rows->empty() ? 0 : to_int((*rows)[0][0]);
    });
  }

  Result<std::optional<Job>> claim(const std::string& worker, const std::string& token, int64_t now,
                                   int64_t stale_before) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<Job>> {
      // A job whose workers stopped kMaxAttempts times is not tried again.
      KEET_TRY(gave_up, run("UPDATE keet_jobs SET state = 'failed', finished_at = $1, claim = '',"
                            " error = 'the worker running this job stopped (' || attempts || ' attempts)'"
                            " WHERE state = 'running' AND heartbeat_at < $2 AND attempts >= $3",
                            {str(now), str(stale_before), str(kMaxAttempts)}, 0));
      return one(
          fmt::format(
              "UPDATE keet_jobs SET state = 'running', worker = $1, claim = $2, heartbeat_at = $3, started_at = $3,"
              " attempts = attempts + 1, progress = 0, stage = 'starting'"
              " WHERE id = (SELECT id FROM keet_jobs WHERE state = 'queued' OR (state = 'running' AND heartbeat_at < "
              "$4)"
              " ORDER BY created_at, id LIMIT 1{}) RETURNING {}",
              conn_->skip_locked(), kColumns),
          {worker, token, str(now), str(stale_before)});
    });
  }

  Result<std::optional<bool>> beat(const Job& j, int64_t now, double progress, const std::string& stage) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<bool>> {
      KEET_TRY(rows, run("UPDATE keet_jobs SET heartbeat_at = $1, progress = $2, stage = $3"
                         " WHERE id = $4 AND claim = $5 AND state = 'running' RETURNING cancel",
                         {str(now), fmt::format("{:.4f}", progress), stage, j.id, j.claim}, 1));
      if (rows->empty()) return std::optional<bool>();
      return std::optional<bool>(to_int((*rows)[0][0]) != 0);
    });
  }

  Result<bool> finish(const Job& j, JobState state, const std::string& error, int64_t now,
                      const std::map<std::string, std::string>& results) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY_VOID(run(conn_->begin(), {}, 0));
      auto done = finish_in_transaction(j, state, error, now, results);
      if (!done || !*done) {
        (void)run("ROLLBACK", {}, 0);
        return done;
      }
      KEET_TRY_VOID(run("COMMIT", {}, 0));
      return true;
    });
  }

  Result<void> release(const Job& j) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<void> {
      KEET_TRY(
          r,
          run("UPDATE keet_jobs SET state = 'queued', claim = '', worker = '', attempts = attempts - 1, progress = 0,"
              " stage = '' WHERE id = $1 AND claim = $2 AND state = 'running'",
              {j.id, j.claim}, 0));
      return {};
    });
  }

  Result<bool> cancel(const std::string& id, int64_t now) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY(queued, run("UPDATE keet_jobs SET state = 'cancelled', finished_at = $1, error = 'cancelled'"
                           " WHERE id = $2 AND state = 'queued' RETURNING id",
                           {str(now), id}, 1));
      if (!queued->empty()) return true;
      KEET_TRY(running,
               run("UPDATE keet_jobs SET cancel = 1 WHERE id = $1 AND state = 'running' RETURNING id", {id}, 1));
      return !running->empty();
    });
  }

  Result<bool> remove(const std::string& id) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY_VOID(run("DELETE FROM keet_job_results WHERE job_id = $1", {id}, 0));
      KEET_TRY(rows, run("DELETE FROM keet_jobs WHERE id = $1 RETURNING id", {id}, 1));
      return !rows->empty();
    });
  }

  Result<int64_t> uses(const std::string& address) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<int64_t> {
      KEET_TRY(rows, run("SELECT COUNT(*) FROM keet_jobs WHERE report = $1 OR report2 = $1", {address}, 1));
      return rows->empty() ? 0 : to_int((*rows)[0][0]);
    });
  }

  Result<std::optional<std::string>> result(const std::string& id, const std::string& format) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<std::string>> {
      KEET_TRY(rows, run("SELECT body FROM keet_job_results WHERE job_id = $1 AND format = $2", {id, format}, 1));
      if (rows->empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::move((*rows)[0][0]));
    });
  }

  Result<std::vector<std::string>> formats(const std::string& id) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::vector<std::string>> {
      KEET_TRY(rows, run("SELECT format FROM keet_job_results WHERE job_id = $1 ORDER BY format", {id}, 1));
      std::vector<std::string> out;
      for (const auto& r : *rows) out.push_back(r[0]);
      return out;
    });
  }

  Result<void> ping() override {
    std::lock_guard lock(mu_);
    auto r = again_if_lost([&] { return run("SELECT 1", {}, 1); });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  std::string describe() const override { return conn_->describe(); }
  bool shared() const override { return conn_->shared(); }

 private:
  // Runs `body` (one statement, or one whole transaction) and, when it failed
  // because the database dropped the connection, connects again and runs it
  // once more: the transaction the dead connection held was rolled back by
  // the server, so running the whole body again is the same request.
  // Reconnecting is tried at most once a second, so a database that stays
  // down costs callers an immediate error, not a connect timeout each.
  template <typename F>
  auto again_if_lost(F&& body) -> decltype(body()) {
    auto r = body();
    if (r || !conn_->lost()) return r;
    auto now = std::chrono::steady_clock::now();
    if (now - last_reconnect_ < std::chrono::seconds(1)) return r;
    last_reconnect_ = now;
    KEET_TRY_VOID(conn_->reconnect());
    return body();
  }

  // A store made before diff jobs kept their pairs gets the column (empty:
  // no pairs). PostgreSQL says IF NOT EXISTS, under init's advisory lock;
  // SQLite cannot, so it looks first, inside a write transaction so that two
  // processes starting together do not both add it.
  Result<void> add_pairs_column() {
    if (conn_->shared()) {
      KEET_TRY(r, run("ALTER TABLE keet_jobs ADD COLUMN IF NOT EXISTS pairs TEXT NOT NULL DEFAULT ''", {}, 0));
      return {};
    }
    KEET_TRY_VOID(run(conn_->begin(), {}, 0));
    auto has = run("SELECT COUNT(*) FROM pragma_table_info('keet_jobs') WHERE name = 'pairs'", {}, 1);
    if (has && !has->empty() && to_int((*has)[0][0]) == 0)
      has = run("ALTER TABLE keet_jobs ADD COLUMN pairs TEXT NOT NULL DEFAULT ''", {}, 0);
    if (!has) {
      (void)run("ROLLBACK", {}, 0);
      return std::unexpected(has.error());
    }
    KEET_TRY_VOID(run("COMMIT", {}, 0));
    return {};
  }

  Result<bool> finish_in_transaction(const Job& j, JobState state, const std::string& error, int64_t now,
                                     const std::map<std::string, std::string>& results) {
    KEET_TRY(rows, run("UPDATE keet_jobs SET state = $1, error = $2, finished_at = $3, progress = $4, stage = ''"
                       " WHERE id = $5 AND claim = $6 AND state = 'running' RETURNING id",
                       {std::string(state_name(state)), error, str(now),
                        state == JobState::Done ? "1" : fmt::format("{:.4f}", j.progress), j.id, j.claim},
                       1));
    if (rows->empty()) return false;
    for (const auto& [format, body] : results) {
      KEET_TRY(r,
               run("INSERT INTO keet_job_results (job_id, format, body) VALUES ($1, $2, $3)", {j.id, format, body}, 0));
    }
    return true;
  }

  Result<std::vector<Row>> run(const std::string& sql, const Params& params, int columns) {
    if (auto* pg = dynamic_cast<PgConn*>(conn_.get())) pg->expect_columns(columns);
    return conn_->query(sql, params);
  }

  Result<std::optional<Job>> one(const std::string& sql, const Params& params) {
    KEET_TRY(rows, run(sql, params, kColumnCount));
    if (rows->empty()) return std::optional<Job>();
    return std::optional<Job>(job_from((*rows)[0]));
  }

  std::mutex mu_;  // one connection per process, shared by HTTP and worker threads
  std::unique_ptr<SqlConn> conn_;
  std::chrono::steady_clock::time_point last_reconnect_{};
};

Result<std::unique_ptr<SqlConn>> open_sqlite_conn(const std::string& path) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return fail(ExitCode::BadInput, fmt::format("job store {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db, 60000);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  // WAL with NORMAL sync survives a killed process (what the queue must
  // survive); FULL would fsync every heartbeat and every upload's row.
  sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  return std::make_unique<SqliteConn>(db, path);
}

Result<std::unique_ptr<SqlConn>> open_pg_conn(const std::string& url) {
  KEET_TRY_VOID(store::load_libpq());
  std::string conninfo = store::pg_connect_url(url);
  PGconn* conn = store::pq().connectdb(conninfo.c_str());
  if (!conn || store::pq().status(conn) != CONNECTION_OK) {
    std::string msg = conn ? store::pq().error_message(conn) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    store::pq().finish(conn);
    return fail(ExitCode::Dependency, fmt::format("{}: cannot connect: {}", store::pg_display_url(url), msg));
  }
  store::pq().set_notice_processor(
      conn, [](void*, const char*) {}, nullptr);
  return std::make_unique<PgConn>(conn, store::pg_display_url(url));
}

}  // namespace

Result<std::unique_ptr<JobStore>> open_job_store(const std::string& url) {
  bool pg = starts_with_ci(url, "postgresql://") || starts_with_ci(url, "postgres://");
  std::string path = starts_with_ci(url, "sqlite:") ? url.substr(7) : url;
  if (!pg && path.empty()) return fail(ExitCode::BadInput, "job store: empty path");
  KEET_TRY(conn, pg ? open_pg_conn(url) : open_sqlite_conn(path));
  auto store = std::make_unique<SqlJobStore>(std::move(*conn));
  KEET_TRY_VOID(store->init());
  return store;
}

}  // namespace keet::service
