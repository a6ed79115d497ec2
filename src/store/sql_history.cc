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
  // Of every table and index name: histories already exist under both.
  const char* prefix;
  // Column types: an auto-numbered 64-bit key, a 64-bit integer, a double.
  const char* id;
  const char* bigint;
  const char* real;
  const char* write_begin;
  const char* read_begin;
  const char* schema_lock;  // taken inside the transaction that creates tables; "" for none
  const char* session;      // run once after connecting; "" for none
};

// Writers take SQLite's lock up front, so two of them never deadlock upgrading;
// BEGIN IMMEDIATE also serialises first-time schema creation.
constexpr HistoryDialect kSqlite{
    .prefix = "",
    .id = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .bigint = "INTEGER",
    .real = "REAL",
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
    .prefix = "keet_",
    .id = "BIGSERIAL PRIMARY KEY",
    .bigint = "BIGINT",
    .real = "DOUBLE PRECISION",
    .write_begin = "BEGIN",
    .read_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ",
    .schema_lock = "SELECT pg_advisory_xact_lock(7321001)",
    .session = "SET statement_timeout = 120000",
};

// Runs and kernels, for a new history, in either dialect ({p}: the prefix).
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS {p}runs (
  id {id},
  tag TEXT NOT NULL, commit_sha TEXT NOT NULL, recorded_at {bigint} NOT NULL, report_path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {p}kernels (
  id {id},
  run_id {bigint} NOT NULL REFERENCES {p}runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, name TEXT NOT NULL, device TEXT NOT NULL, duration_ns {real}, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS {p}kernels_run ON {p}kernels(run_id);
CREATE INDEX IF NOT EXISTS {p}runs_tag ON {p}runs(tag, recorded_at);
)sql";
// Made on the first calibration write (histories older than it lack it).
constexpr const char* kCalibrationSchema = R"sql(
CREATE TABLE IF NOT EXISTS {p}calibration (
  id {id},
  source TEXT NOT NULL, rule TEXT NOT NULL, arch TEXT NOT NULL, kernel TEXT NOT NULL,
  predicted {real} NOT NULL, measured {real} NOT NULL, recorded_at {bigint} NOT NULL);
)sql";

std::string in_dialect(const char* ddl, const HistoryDialect& d) {
  return fmt::format(fmt::runtime(ddl), fmt::arg("p", d.prefix), fmt::arg("id", d.id), fmt::arg("bigint", d.bigint),
                     fmt::arg("real", d.real));
}

int64_t integer_of(const std::string& text) { return static_cast<int64_t>(parse_number(text).value_or(0)); }

class SqlHistoryStore final : public HistoryStore {
 public:
  SqlHistoryStore(std::unique_ptr<SqlConnection> conn, const HistoryDialect& dialect)
      : conn_(std::move(conn)),
        d_(dialect),
        runs_(std::string(dialect.prefix) + "runs"),
        kernels_(std::string(dialect.prefix) + "kernels"),
        calibration_(std::string(dialect.prefix) + "calibration") {}

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
    KEET_TRY(exists, conn_->table_exists(kernels_));
    if (*exists) return {};
    return conn_->in_transaction(d_.write_begin, [&]() -> Result<void> {
      if (*d_.schema_lock) KEET_TRY_VOID(conn_->exec("query failed", d_.schema_lock));
      KEET_TRY(again, conn_->table_exists(kernels_));  // another process may have made it meanwhile
      if (*again) return {};
      return conn_->exec("query failed", in_dialect(kSchema, d_));
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
                                           runs_),
                               row));
    if (ids->size() != 1 || (*ids)[0].empty())
      return std::unexpected(conn_->error(ExitCode::Dependency, "insert run: no id came back"));
    return integer_of((*ids)[0][0]);
  }

  Result<void> insert_kernels(int64_t run_id, const std::vector<compare::KernelSnapshot>& kernels) {
    std::string sql = fmt::format(
        "INSERT INTO {}(run_id, ordinal, name, device, duration_ns, payload) VALUES($1,$2,$3,$4,$5,$6)", kernels_);
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      SqlValue row[] = {run_id, static_cast<int64_t>(i), k.display, k.device, k.duration_ns, kernel_payload(k)};
      KEET_TRY_VOID(conn_->query("insert kernel", sql, row));
    }
    return {};
  }

  Result<std::vector<Run>> read_runs(size_t limit) {
    std::string sql = fmt::format(
        "SELECT id, tag, commit_sha, recorded_at, report_path FROM {} ORDER BY recorded_at DESC, id DESC", runs_);
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
                                      kernels_, ids)));
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
    KEET_TRY(exists, conn_->table_exists(calibration_));
    if (!*exists) {
      if (*d_.schema_lock) KEET_TRY_VOID(conn_->exec("query failed", d_.schema_lock));
      KEET_TRY(again, conn_->table_exists(calibration_));
      if (!*again) KEET_TRY_VOID(conn_->exec("query failed", in_dialect(kCalibrationSchema, d_)));
    }
    std::string sql = fmt::format(
        "INSERT INTO {}(source, rule, arch, kernel, predicted, measured, recorded_at) VALUES($1,$2,$3,$4,$5,$6,$7)",
        calibration_);
    for (const auto& p : points) {
      SqlValue row[] = {p.source, p.rule, p.arch, p.kernel, p.predicted, p.measured, p.recorded_at};
      KEET_TRY_VOID(conn_->query("insert calibration", sql, row));
    }
    return {};
  }

  // A history written before calibration was kept has no table: no points.
  Result<std::vector<compare::CalibrationPoint>> read_calibration() {
    std::vector<compare::CalibrationPoint> out;
    KEET_TRY(exists, conn_->table_exists(calibration_));
    if (!*exists) return out;
    KEET_TRY(rows, conn_->query("read calibration",
                                fmt::format("SELECT source, rule, arch, kernel, predicted, measured, recorded_at "
                                            "FROM {} ORDER BY id",
                                            calibration_)));
    for (const auto& r : *rows)
      out.push_back(
          {r[0], r[1], r[2], r[3], parse_number(r[4]).value_or(0), parse_number(r[5]).value_or(0), integer_of(r[6])});
    return out;
  }

  std::unique_ptr<SqlConnection> conn_;
  const HistoryDialect& d_;
  const std::string runs_, kernels_, calibration_;
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
