// PostgreSQL backend (libpq) for teams whose CI runners share one history.
// Each run is inserted in one transaction; the schema is created under an
// advisory lock because concurrent CREATE TABLE IF NOT EXISTS can still collide
// in PostgreSQL's catalog.

#include <map>

#include <fmt/format.h>

#include "store/libpq.h"
#include "store/sql_store.h"
#include "util/error.h"
#include "util/strings.h"

namespace keet::store {
namespace {

constexpr const char* kLock = "SELECT pg_advisory_xact_lock(7321001)";
constexpr const char* kPostgresSchema = R"sql(
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
)sql";
// Added after the first schema: histories created before it get it on their
// first calibration write.
constexpr const char* kCalibrationSchema = R"sql(
CREATE TABLE IF NOT EXISTS keet_calibration (
  id BIGSERIAL PRIMARY KEY,
  source TEXT NOT NULL, rule TEXT NOT NULL, arch TEXT NOT NULL, kernel TEXT NOT NULL,
  predicted DOUBLE PRECISION NOT NULL, measured DOUBLE PRECISION NOT NULL, recorded_at BIGINT NOT NULL);
)sql";

// A query result, cleared on scope exit.
struct PgResult {
  PGresult* res;
  explicit PgResult(PGresult* r) : res(r) {}
  ~PgResult() { pq().clear(res); }
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  bool ok() const {
    auto s = pq().result_status(res);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
  }
  int rows() const { return pq().ntuples(res); }
  std::string text(int row, int col) const { return pq().getvalue(res, row, col); }
  int64_t integer(int row, int col) const { return std::stoll(text(row, col)); }
};

std::string redact(const std::string& url) { return pg_display_url(url); }

// Statements of a dead or stuck server end, rather than hold a CI job.
constexpr const char* kSessionSettings = "SET statement_timeout = 120000";

class PgStore final : public SqlStore<PgStore> {
 public:
  static constexpr const char* kWriteBegin = "BEGIN";
  // Reads see one snapshot even while other writers commit.
  static constexpr const char* kReadBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ";

  PgStore(PGconn* conn, std::string url) : conn_(conn), url_(redact(url)) {}
  ~PgStore() override { pq().finish(conn_); }

  // Only the first writer creates the schema: CREATE INDEX IF NOT EXISTS takes
  // share locks even when the index exists, which deadlocks with concurrent
  // inserts, so existing tables are left untouched. The schema is looked for
  // before the lock is taken, so once it exists nobody (a reader least of
  // all) waits for a writer holding the lock.
  Result<void> init() {
    if (auto r = exec(kSessionSettings); !r) return r;
    KEET_TRY(exists, schema_exists());
    if (*exists) return {};
    return in_transaction([&]() -> Result<void> {
      if (auto r = exec(kLock); !r) return r;
      auto again = schema_exists();  // another process may have created it meanwhile
      if (!again) return std::unexpected(again.error());
      return *again ? Result<void>{} : exec(kPostgresSchema);
    });
  }

  // A plain query on pg_class, not to_regclass(): the relation cache would keep
  // the answer of the check made before the lock (an advisory lock does not
  // refresh it), and a second writer would then run the DDL, whose CREATE
  // INDEX deadlocks with other writers' inserts.
  Result<bool> schema_exists(std::string_view table = "keet_kernels") {
    std::string sql = fmt::format(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relname = '{}' AND n.nspname = current_schema())",
        table);
    PgResult exists(pq().exec(conn_, sql.c_str()));
    if (!exists.ok()) return std::unexpected(error("schema check"));
    return exists.rows() == 1 && exists.text(0, 0) == "t";
  }

  std::string describe() const override { return url_; }

 private:
  friend class SqlStore<PgStore>;

  Error error(std::string_view what) const {
    std::string msg = pq().error_message(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return {ExitCode::Dependency, fmt::format("{}: {}: {}", url_, what, msg)};
  }

  Result<void> exec(const char* sql) {
    PgResult r(pq().exec(conn_, sql));
    if (!r.ok()) return std::unexpected(error("query failed"));
    return {};
  }

  // Parameters travel as text; std::nullopt becomes SQL NULL.
  PgResult query(const char* sql, const std::vector<std::optional<std::string>>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return PgResult(
        pq().exec_params(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
  }

  Result<int64_t> insert_run(const Run& run) {
    auto r = query("INSERT INTO keet_runs(tag, commit_sha, recorded_at, report_path) VALUES($1,$2,$3,$4) RETURNING id",
                   {run.tag, run.commit, std::to_string(run.recorded_at), run.report_path});
    if (!r.ok() || r.rows() != 1) return std::unexpected(error("insert run"));
    return r.integer(0, 0);
  }

  Result<void> insert_kernels(int64_t run_id, const std::vector<compare::KernelSnapshot>& kernels) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      std::optional<std::string> duration;
      if (k.duration_ns) duration = fmt::format("{}", *k.duration_ns);
      auto r = query(
          "INSERT INTO keet_kernels(run_id, ordinal, name, device, duration_ns, payload) "
          "VALUES($1,$2,$3,$4,$5,$6)",
          {std::to_string(run_id), std::to_string(i), k.display, k.device, duration, kernel_payload(k)});
      if (!r.ok()) return std::unexpected(error("insert kernel"));
    }
    return {};
  }

  Result<void> read_runs(size_t limit, std::vector<Run>& out) {
    std::string lim = limit == 0 ? "ALL" : std::to_string(limit);
    std::string sql =
        "SELECT id, tag, commit_sha, recorded_at, report_path FROM keet_runs "
        "ORDER BY recorded_at DESC, id DESC LIMIT " +
        lim;
    PgResult r(pq().exec(conn_, sql.c_str()));
    if (!r.ok()) return std::unexpected(error("read runs"));
    for (int i = 0; i < r.rows(); ++i)
      out.push_back(Run{r.integer(i, 0), r.text(i, 1), r.text(i, 2), r.integer(i, 3), r.text(i, 4), {}});
    return read_kernels(out);
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
    std::string sql = "SELECT run_id, payload FROM keet_kernels WHERE run_id IN (" + ids + ") ORDER BY run_id, ordinal";
    PgResult r(pq().exec(conn_, sql.c_str()));
    if (!r.ok()) return std::unexpected(error("read kernels"));
    for (int i = 0; i < r.rows(); ++i) {
      auto k = kernel_from_payload(r.text(i, 1));
      if (!k)
        return fail(ExitCode::BadInput, fmt::format("{}: run #{} holds a damaged kernel record", url_, r.text(i, 0)));
      by_id[r.integer(i, 0)]->kernels.push_back(std::move(*k));
    }
    return {};
  }

  // Runs inside the caller's transaction: the table is created under the
  // schema lock, re-checked once the lock is held.
  Result<void> insert_calibration(const std::vector<compare::CalibrationPoint>& points) {
    KEET_TRY(exists, schema_exists("keet_calibration"));
    if (!*exists) {
      if (auto r = exec(kLock); !r) return r;
      KEET_TRY(again, schema_exists("keet_calibration"));
      if (!*again)
        if (auto r = exec(kCalibrationSchema); !r) return r;
    }
    for (const auto& p : points) {
      auto r = query(
          "INSERT INTO keet_calibration(source, rule, arch, kernel, predicted, measured, recorded_at) "
          "VALUES($1,$2,$3,$4,$5,$6,$7)",
          {p.source, p.rule, p.arch, p.kernel, fmt::format("{}", p.predicted), fmt::format("{}", p.measured),
           std::to_string(p.recorded_at)});
      if (!r.ok()) return std::unexpected(error("insert calibration"));
    }
    return {};
  }

  Result<void> read_calibration(std::vector<compare::CalibrationPoint>& out) {
    KEET_TRY(exists, schema_exists("keet_calibration"));
    if (!*exists) return {};
    PgResult r(pq().exec(conn_,
                         "SELECT source, rule, arch, kernel, predicted, measured, recorded_at "
                         "FROM keet_calibration ORDER BY id"));
    if (!r.ok()) return std::unexpected(error("read calibration"));
    for (int i = 0; i < r.rows(); ++i)
      out.push_back({r.text(i, 0), r.text(i, 1), r.text(i, 2), r.text(i, 3), parse_number(r.text(i, 4)).value_or(0),
                     parse_number(r.text(i, 5)).value_or(0), r.integer(i, 6)});
    return {};
  }

  PGconn* conn_;
  std::string url_;
};

}  // namespace

std::string pg_display_url(const std::string& url) {
  std::string out = url;
  auto scheme = out.find("://");
  auto at = out.find('@');
  auto query = out.find('?');
  if (scheme != std::string::npos && at != std::string::npos && (query == std::string::npos || at < query))
    out = out.substr(0, scheme + 3) + out.substr(at + 1);
  query = out.find('?');
  if (query == std::string::npos) return out;
  std::string shown = out.substr(0, query + 1);
  bool first = true;
  for (auto param : split(std::string_view(out).substr(query + 1), '&')) {
    if (!first) shown += '&';
    first = false;
    auto eq = param.find('=');
    std::string key = to_lower(param.substr(0, eq));
    if (eq != std::string_view::npos && (key == "password" || key == "passfile" || key == "sslpassword"))
      shown += std::string(param.substr(0, eq)) + "=<redacted>";
    else
      shown += std::string(param);
  }
  return shown;
}

std::string pg_connect_url(const std::string& url) {
  auto query = url.find('?');
  if (query != std::string::npos)
    for (auto param : split(std::string_view(url).substr(query + 1), '&'))
      if (to_lower(param.substr(0, param.find('='))) == "connect_timeout") return url;
  return url + (query == std::string::npos ? "?" : "&") + "connect_timeout=" + std::to_string(kPgConnectTimeoutS);
}

Result<std::unique_ptr<HistoryStore>> open_postgres(const std::string& url) {
  KEET_TRY_VOID(load_libpq());
  std::string conninfo = pg_connect_url(url);
  PGconn* conn = pq().connectdb(conninfo.c_str());
  if (!conn || pq().status(conn) != CONNECTION_OK) {
    std::string msg = conn ? pq().error_message(conn) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    pq().finish(conn);
    return fail(ExitCode::Dependency, fmt::format("{}: cannot connect: {}", redact(conninfo), msg));
  }
  // Notices ("relation already exists, skipping") would go to stderr otherwise.
  pq().set_notice_processor(
      conn, [](void*, const char*) {}, nullptr);
  auto store = std::make_unique<PgStore>(conn, conninfo);
  KEET_TRY_VOID(store->init());
  return store;
}

}  // namespace keet::store
