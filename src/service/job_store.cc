// One job store over the one SQL connection (store/sql.h), SQLite or
// PostgreSQL. Every statement is written once; the only dialect difference is
// how a claim skips rows another process is claiming: PostgreSQL locks the row
// (FOR UPDATE SKIP LOCKED), SQLite serialises writers on the file.
#include "service/job_store.h"
#include "util/error.h"

#include <chrono>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "render/diff.h"
#include "store/history.h"
#include "store/sql.h"
#include "util/strings.h"

namespace keet::service {

std::string_view kind_name(JobKind k) {
  switch (k) {
    case JobKind::Diff:
      return "diff";
    case JobKind::Timeline:
      return "timeline";
    case JobKind::Analyze:
      break;
  }
  return "analyze";
}

namespace {

// An unknown kind (a newer keet's, in a shared store) reads as an analysis,
// as the jobs of a keet that told no kinds apart did.
JobKind parse_kind(const std::string& name) {
  if (name == "diff") return JobKind::Diff;
  if (name == "timeline") return JobKind::Timeline;
  return JobKind::Analyze;
}

}  // namespace

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

using store::SqlConnection;
using Row = store::SqlRow;
using Params = std::vector<store::SqlValue>;

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
  j.kind = parse_kind(r[1]);
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
  explicit SqlJobStore(std::unique_ptr<SqlConnection> conn) : conn_(std::move(conn)) {}

  Result<void> init() {
    std::lock_guard lock(mu_);
    auto create = [&]() -> Result<void> {
      // Concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL's
      // catalog, so processes starting together take turns.
      if (conn_->shared()) KEET_TRY_VOID(run("SELECT pg_advisory_xact_lock(7321014)", {}));
      for (const char* sql : kSchema) KEET_TRY_VOID(run(sql, {}));
      return add_pairs_column();
    };
    return conn_->shared() ? conn_->in_transaction("BEGIN", create) : create();
  }

  Result<void> add(const Job& j) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<void> {
      KEET_TRY(r, run(fmt::format("INSERT INTO keet_jobs ({}) VALUES "
                                  "($1,$2,$3,$4,$5,$6,$7,$8,0,0,0,'','',0,0,'',0,'',$9,$10)",
                                  kColumns),
                      {j.id, std::string(kind_name(j.kind)), "queued", j.name, j.report, j.report2, j.baseline,
                       str(j.created_at), str(j.size), pairs_text(j.pairs)}));
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
                         {str(static_cast<int64_t>(limit))}));
      std::vector<Job> out;
      for (const auto& r : *rows) out.push_back(job_from(r));
      return out;
    });
  }

  Result<int64_t> waiting() override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<int64_t> {
      KEET_TRY(rows, run("SELECT COUNT(*) FROM keet_jobs WHERE state = 'queued'", {}));
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
                            {str(now), str(stale_before), str(kMaxAttempts)}));
      return one(
          fmt::format(
              "UPDATE keet_jobs SET state = 'running', worker = $1, claim = $2, heartbeat_at = $3, started_at = $3,"
              " attempts = attempts + 1, progress = 0, stage = 'starting'"
              " WHERE id = (SELECT id FROM keet_jobs WHERE state = 'queued' OR (state = 'running' AND heartbeat_at < "
              "$4)"
              " ORDER BY created_at, id LIMIT 1{}) RETURNING {}",
              skip_locked(), kColumns),
          {worker, token, str(now), str(stale_before)});
    });
  }

  Result<std::optional<bool>> beat(const Job& j, int64_t now, double progress, const std::string& stage) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<bool>> {
      KEET_TRY(rows, run("UPDATE keet_jobs SET heartbeat_at = $1, progress = $2, stage = $3"
                         " WHERE id = $4 AND claim = $5 AND state = 'running' RETURNING cancel",
                         {str(now), fmt::format("{:.4f}", progress), stage, j.id, j.claim}));
      if (rows->empty()) return std::optional<bool>();
      return std::optional<bool>(to_int((*rows)[0][0]) != 0);
    });
  }

  Result<bool> finish(const Job& j, JobState state, const std::string& error, int64_t now,
                      const std::map<std::string, std::string>& results) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY_VOID(run(begin(), {}));
      auto done = finish_in_transaction(j, state, error, now, results);
      if (!done || !*done) {
        (void)run("ROLLBACK", {});
        return done;
      }
      KEET_TRY_VOID(run("COMMIT", {}));
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
              {j.id, j.claim}));
      return {};
    });
  }

  Result<bool> cancel(const std::string& id, int64_t now) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY(queued, run("UPDATE keet_jobs SET state = 'cancelled', finished_at = $1, error = 'cancelled'"
                           " WHERE id = $2 AND state = 'queued' RETURNING id",
                           {str(now), id}));
      if (!queued->empty()) return true;
      KEET_TRY(running, run("UPDATE keet_jobs SET cancel = 1 WHERE id = $1 AND state = 'running' RETURNING id", {id}));
      return !running->empty();
    });
  }

  Result<bool> remove(const std::string& id) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<bool> {
      KEET_TRY_VOID(run("DELETE FROM keet_job_results WHERE job_id = $1", {id}));
      KEET_TRY(rows, run("DELETE FROM keet_jobs WHERE id = $1 RETURNING id", {id}));
      return !rows->empty();
    });
  }

  Result<int64_t> uses(const std::string& address) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<int64_t> {
      KEET_TRY(rows, run("SELECT COUNT(*) FROM keet_jobs WHERE report = $1 OR report2 = $1", {address}));
      return rows->empty() ? 0 : to_int((*rows)[0][0]);
    });
  }

  Result<std::optional<std::string>> result(const std::string& id, const std::string& format) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::optional<std::string>> {
      KEET_TRY(rows, run("SELECT body FROM keet_job_results WHERE job_id = $1 AND format = $2", {id, format}));
      if (rows->empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::move((*rows)[0][0]));
    });
  }

  Result<std::vector<std::string>> formats(const std::string& id) override {
    std::lock_guard lock(mu_);
    return again_if_lost([&]() -> Result<std::vector<std::string>> {
      KEET_TRY(rows, run("SELECT format FROM keet_job_results WHERE job_id = $1 ORDER BY format", {id}));
      std::vector<std::string> out;
      for (const auto& r : *rows) out.push_back(r[0]);
      return out;
    });
  }

  Result<void> ping() override {
    std::lock_guard lock(mu_);
    KEET_TRY_VOID(again_if_lost([&] { return run("SELECT 1", {}); }));
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
      KEET_TRY(r, run("ALTER TABLE keet_jobs ADD COLUMN IF NOT EXISTS pairs TEXT NOT NULL DEFAULT ''", {}));
      return {};
    }
    return conn_->in_transaction(begin(), [&]() -> Result<void> {
      KEET_TRY(has, run("SELECT COUNT(*) FROM pragma_table_info('keet_jobs') WHERE name = 'pairs'", {}));
      if (!has->empty() && to_int((*has)[0][0]) == 0)
        KEET_TRY_VOID(run("ALTER TABLE keet_jobs ADD COLUMN pairs TEXT NOT NULL DEFAULT ''", {}));
      return {};
    });
  }

  Result<bool> finish_in_transaction(const Job& j, JobState state, const std::string& error, int64_t now,
                                     const std::map<std::string, std::string>& results) {
    KEET_TRY(rows, run("UPDATE keet_jobs SET state = $1, error = $2, finished_at = $3, progress = $4, stage = ''"
                       " WHERE id = $5 AND claim = $6 AND state = 'running' RETURNING id",
                       {std::string(state_name(state)), error, str(now),
                        state == JobState::Done ? "1" : fmt::format("{:.4f}", j.progress), j.id, j.claim}));
    if (rows->empty()) return false;
    for (const auto& [format, body] : results) {
      KEET_TRY(r, run("INSERT INTO keet_job_results (job_id, format, body) VALUES ($1, $2, $3)", {j.id, format, body}));
    }
    return true;
  }

  Result<std::vector<Row>> run(const std::string& sql, const Params& params) { return conn_->query("", sql, params); }

  // A write transaction: SQLite takes the file's lock up front; PostgreSQL
  // locks rows, and a claim skips those another process is claiming.
  const char* begin() const { return conn_->shared() ? "BEGIN" : "BEGIN IMMEDIATE"; }
  const char* skip_locked() const { return conn_->shared() ? " FOR UPDATE SKIP LOCKED" : ""; }

  Result<std::optional<Job>> one(const std::string& sql, const Params& params) {
    KEET_TRY(rows, run(sql, params));
    if (rows->empty()) return std::optional<Job>();
    return std::optional<Job>(job_from((*rows)[0]));
  }

  std::mutex mu_;  // one connection per process, shared by HTTP and worker threads
  std::unique_ptr<SqlConnection> conn_;
  std::chrono::steady_clock::time_point last_reconnect_{};
};

// WAL with NORMAL sync survives a killed process (what the queue must
// survive); FULL would fsync every heartbeat and every upload's row.
Result<std::unique_ptr<SqlConnection>> open_sqlite_conn(const std::string& path) {
  KEET_TRY(conn, store::open_sqlite_connection(path, {.label = "sqlite:" + path, .open_error = "job store " + path}));
  KEET_TRY_VOID((*conn)->exec("", "PRAGMA synchronous=NORMAL"));
  return std::move(*conn);
}

Result<std::unique_ptr<SqlConnection>> open_pg_conn(const std::string& url) {
  return store::open_postgres_connection(store::pg_connect_url(url), store::pg_display_url(url));
}

}  // namespace

Result<std::unique_ptr<JobStore>> open_job_store(const std::string& url) {
  bool pg = store::is_postgres_url(url);
  std::string path = starts_with_ci(url, "sqlite:") ? url.substr(7) : url;
  if (!pg && path.empty()) return fail(ExitCode::BadInput, "job store: empty path");
  KEET_TRY(conn, pg ? open_pg_conn(url) : open_sqlite_conn(path));
  auto store = std::make_unique<SqlJobStore>(std::move(*conn));
  KEET_TRY_VOID(store->init());
  return store;
}

}  // namespace keet::service
