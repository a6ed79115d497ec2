// The performance history on one SQL connection (store/sql.h), SQLite or
// PostgreSQL. A run and its kernels are written in one transaction, runs are
// read in one consistent snapshot, and the schema is created by the first
// writer only. The dialects differ in table names (histories already exist
// under both), column types and the BEGIN statements that give these
// guarantees; every statement is written once.
#include <map>

#include <fmt/format.h>

#include "store/history.h"
#include "store/sql.h"
#include "util/strings.h"

namespace keet::store {
namespace {

struct HistoryDialect {
  const char* runs;
  const char* kernels;
  const char* calibration;
  const char* schema;              // runs and kernels, for a new history
  const char* calibration_schema;  // made on the first calibration write
  const char* write_begin;
  const char* read_begin;
  const char* schema_lock;  // taken inside the transaction that creates tables; "" for none
  const char* session;      // run once after connecting; "" for none
};

// Writers take SQLite's lock up front, so two of them never deadlock upgrading;
// BEGIN IMMEDIATE also serialises first-time schema creation.
constexpr HistoryDialect kSqlite{
    .runs = "runs",
    .kernels = "kernels",
    .calibration = "calibration",
    .schema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  tag TEXT NOT NULL, commit_sha TEXT NOT NULL, recorded_at INTEGER NOT NULL, report_path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, name TEXT NOT NULL, device TEXT NOT NULL, duration_ns REAL, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS kernels_run ON kernels(run_id);
CREATE INDEX IF NOT EXISTS runs_tag ON runs(tag, recorded_at);
)sql",
    .calibration_schema = R"sql(
CREATE TABLE IF NOT EXISTS calibration (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL, rule TEXT NOT NULL, arch TEXT NOT NULL, kernel TEXT NOT NULL,
  predicted REAL NOT NULL, measured REAL NOT NULL, recorded_at INTEGER NOT NULL);
)sql",
    .write_begin = "BEGIN IMMEDIATE",
    .read_begin = "BEGIN",
    .schema_lock = "",
    .session = "",
};

// Concurrent CREATE TABLE IF NOT EXISTS can still collide in PostgreSQL's
// catalog, so the schema is made under an advisory lock. Reads see one
// snapshot even while other writers commit; statements of a dead or stuck
// server end rather than hold a CI job.
constexpr HistoryDialect kPostgres{
    .runs = "keet_runs",
    .kernels = "keet_kernels",
    .calibration = "keet_calibration",
    .schema = R"sql(
CREATE TABLE IF NOT EXISTS keet_runs (
  id BIGSERIAL PRIMARY KEY,
  tag TEXT NOT NULL, commit_sha TEXT NOT NULL, recorded_at BIGINT NOT NULL, report_path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keet_kernels (
  id BIGSERIAL PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES keet_runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, name TEXT NOT NULL, device TEXT NOT NULL,
  duration_ns DOUBLE PRECISION, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS keet_kernels_run ON keet_kernels(run_id);
CREATE INDEX IF NOT EXISTS keet_runs_tag ON keet_runs(tag, recorded_at);
)sql",
    .calibration_schema = R"sql(
CREATE TABLE IF NOT EXISTS keet_calibration (
  id BIGSERIAL PRIMARY KEY,
  source TEXT NOT NULL, rule TEXT NOT NULL, arch TEXT NOT NULL, kernel TEXT NOT NULL,
  predicted DOUBLE PRECISION NOT NULL, measured DOUBLE PRECISION NOT NULL, recorded_at BIGINT NOT NULL);
)sql",
    .write_begin = "BEGIN",
    .read_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ",
    .schema_lock = "SELECT pg_advisory_xact_lock(7321001)",
    .session = "SET statement_timeout = 120000",
};

int64_t integer_of(const std::string& text) { return static_cast<int64_t>(parse_number(text).value_or(0)); }

class SqlHistoryStore final : public HistoryStore {
 public:
  SqlHistoryStore(std::unique_ptr<SqlConnection> conn, const HistoryDialect& dialect)
      : conn_(std::move(conn)), d_(dialect) {}

  // Only the first writer creates the schema: PostgreSQL's CREATE INDEX IF NOT
  // EXISTS takes share locks even when the index exists, which deadlocks with
  // concurrent inserts, so existing tables are left untouched. The schema is
  // looked for before the lock is taken, so once it exists nobody (a reader
  // least of all) waits for a writer holding the lock. A history this user
  // may not write (a shared copy) still serves `history` and `gate`; `record`
  // fails on its first write.
  Result<void> init() {
    if (conn_->read_only()) return {};
    if (*d_.session) KEET_TRY_VOID(conn_->exec("query failed", d_.session));
    KEET_TRY(exists, conn_->table_exists(d_.kernels));
    if (*exists) return {};
    return conn_->in_transaction(d_.write_begin, [&]() -> Result<void> {
      if (*d_.schema_lock) KEET_TRY_VOID(conn_->exec("query failed", d_.schema_lock));
      KEET_TRY(again, conn_->table_exists(d_.kernels));  // another process may have made it meanwhile
      if (*again) return {};
      return conn_->exec("query failed", d_.schema);
    });
  }

  Result<int64_t> record(const Run& run) override {
    return conn_->in_transaction(d_.write_begin, [&]() -> Result<int64_t> {
      KEET_TRY(id, insert_run(run));
      KEET_TRY_VOID(insert_kernels(*id, run.kernels));
      return *id;
    });
  }

  Result<std::vector<Run>> runs(size_t limit) override {
    return conn_->in_transaction(d_.read_begin, [&]() -> Result<std::vector<Run>> { return read_runs(limit); });
  }

  Result<std::optional<Run>> baseline(const std::string& tag, const std::string& device) override {
    KEET_TRY(all, runs(0));
    return pick_baseline(std::move(*all), tag, device);
  }

  Result<void> add_calibration(const std::vector<compare::CalibrationPoint>& points) override {
    if (points.empty()) return {};
    return conn_->in_transaction(d_.write_begin, [&]() -> Result<void> { return insert_calibration(points); });
  }

  Result<std::vector<compare::CalibrationPoint>> calibration_points() override {
    return conn_->in_transaction(
        d_.read_begin, [&]() -> Result<std::vector<compare::CalibrationPoint>> { return read_calibration(); });
  }

  std::string describe() const override { return conn_->describe(); }

 private:
  Result<int64_t> insert_run(const Run& run) {
    SqlValue row[] = {run.tag, run.commit, run.recorded_at, run.report_path};
    KEET_TRY(ids, conn_->query("insert run",
                               fmt::format("INSERT INTO {}(tag, commit_sha, recorded_at, report_path) "
                                           "VALUES($1,$2,$3,$4) RETURNING id",
                                           d_.runs),
                               row));
    if (ids->size() != 1 || (*ids)[0].empty())
      return std::unexpected(conn_->error(ExitCode::Dependency, "insert run: no id came back"));
    return integer_of((*ids)[0][0]);
  }

  Result<void> insert_kernels(int64_t run_id, const std::vector<compare::KernelSnapshot>& kernels) {
    std::string sql = fmt::format(
        "INSERT INTO {}(run_id, ordinal, name, device, duration_ns, payload) VALUES($1,$2,$3,$4,$5,$6)", d_.kernels);
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      SqlValue row[] = {run_id, static_cast<int64_t>(i), k.display, k.device, k.duration_ns, kernel_payload(k)};
      KEET_TRY_VOID(conn_->query("insert kernel", sql, row));
    }
    return {};
  }

  Result<std::vector<Run>> read_runs(size_t limit) {
    std::string sql = fmt::format(
        "SELECT id, tag, commit_sha, recorded_at, report_path FROM {} ORDER BY recorded_at DESC, id DESC", d_.runs);
    if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
    KEET_TRY(rows, conn_->query("read runs", sql));
    std::vector<Run> out;
    for (const auto& r : *rows) out.push_back(Run{integer_of(r[0]), r[1], r[2], integer_of(r[3]), r[4], {}});
    KEET_TRY_VOID(read_kernels(out));
    return out;
  }

  // One query for all kernels of the listed runs, then grouped by run.
  Result<void> read_kernels(std::vector<Run>& runs) {
    if (runs.empty()) return {};
    std::map<int64_t, Run*> by_id;
    std::string ids;
    for (auto& run : runs) {
      by_id[run.id] = &run;
      ids += (ids.empty() ? "" : ",") + std::to_string(run.id);
    }
    KEET_TRY(rows,
             conn_->query("read kernels",
                          fmt::format("SELECT run_id, payload FROM {} WHERE run_id IN ({}) ORDER BY run_id, ordinal",
                                      d_.kernels, ids)));
    for (const auto& r : *rows) {
      auto k = kernel_from_payload(r[1]);
      if (!k)
        return std::unexpected(
            conn_->error(ExitCode::BadInput, fmt::format("run #{} holds a damaged kernel record", r[0])));
      if (auto it = by_id.find(integer_of(r[0])); it != by_id.end()) it->second->kernels.push_back(std::move(*k));
    }
    return {};
  }

  // Inside the caller's transaction: a history made before calibration points
  // were kept gets the table, made under the schema lock and re-checked once
  // the lock is held.
  Result<void> insert_calibration(const std::vector<compare::CalibrationPoint>& points) {
    KEET_TRY(exists, conn_->table_exists(d_.calibration));
    if (!*exists) {
      if (*d_.schema_lock) KEET_TRY_VOID(conn_->exec("query failed", d_.schema_lock));
      KEET_TRY(again, conn_->table_exists(d_.calibration));
      if (!*again) KEET_TRY_VOID(conn_->exec("query failed", d_.calibration_schema));
    }
    std::string sql = fmt::format(
        "INSERT INTO {}(source, rule, arch, kernel, predicted, measured, recorded_at) VALUES($1,$2,$3,$4,$5,$6,$7)",
        d_.calibration);
    for (const auto& p : points) {
      SqlValue row[] = {p.source, p.rule, p.arch, p.kernel, p.predicted, p.measured, p.recorded_at};
      KEET_TRY_VOID(conn_->query("insert calibration", sql, row));
    }
    return {};
  }

  // A history written before calibration was kept has no table: no points.
  Result<std::vector<compare::CalibrationPoint>> read_calibration() {
    std::vector<compare::CalibrationPoint> out;
    KEET_TRY(exists, conn_->table_exists(d_.calibration));
    if (!*exists) return out;
    KEET_TRY(rows, conn_->query("read calibration",
                                fmt::format("SELECT source, rule, arch, kernel, predicted, measured, recorded_at "
                                            "FROM {} ORDER BY id",
                                            d_.calibration)));
    for (const auto& r : *rows)
      out.push_back(
          {r[0], r[1], r[2], r[3], parse_number(r[4]).value_or(0), parse_number(r[5]).value_or(0), integer_of(r[6])});
    return out;
  }

  std::unique_ptr<SqlConnection> conn_;
  const HistoryDialect& d_;
};

Result<std::unique_ptr<HistoryStore>> open_history(Result<std::unique_ptr<SqlConnection>> opened,
                                                   const HistoryDialect& dialect) {
  KEET_TRY(conn, std::move(opened));
  auto store = std::make_unique<SqlHistoryStore>(std::move(*conn), dialect);
  KEET_TRY_VOID(store->init());
  return store;
}

}  // namespace

Result<std::unique_ptr<HistoryStore>> open_sqlite(const std::string& path) {
  return open_history(open_sqlite_connection(path, {.label = path,
                                                    .open_error = path + ": cannot open history database",
                                                    .read_only_if_unwritable = true}),
                      kSqlite);
}

Result<std::unique_ptr<HistoryStore>> open_postgres(const std::string& url) {
  std::string conninfo = pg_connect_url(url);
  return open_history(open_postgres_connection(conninfo, pg_display_url(conninfo)), kPostgres);
}

}  // namespace keet::store
