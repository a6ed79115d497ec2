#include "store/sql.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "io/sqlite.h"
#include "store/libpq.h"
#include "util/strings.h"

namespace keet::store {
namespace {

std::string without_trailing_space(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string real_text(double v) { return fmt::format("{}", v); }

// ------------------------------------------------------------------ SQLite

constexpr int kBusyTimeoutMs = 60000;

// One parameter, bound with its type.
void bind(io::SqliteStatement& st, int i, const SqlValue& v) {
  switch (v.kind) {
    case SqlValue::Kind::Text:
      st.bind(i, std::string_view(v.text));
      break;
    case SqlValue::Kind::Integer:
      st.bind(i, v.integer);
      break;
    case SqlValue::Kind::Real:
      st.bind(i, v.real);
      break;
    case SqlValue::Kind::Null:
      st.bind_null(i);
      break;
  }
}

SqlRow row_of(const io::SqliteStatement& st) {
  SqlRow out;
  for (int c = 0; c < st.columns(); ++c) {
    // SQLite's own text of a real keeps 15 digits; the stored double needs up to 17.
    if (st.is_real(c))
      out.push_back(real_text(st.real(c)));
    else
      out.emplace_back(st.text(c));
  }
  return out;
}

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(io::Sqlite db, std::string path, std::string label)
      : db_(std::move(db)), path_(std::move(path)), label_(std::move(label)) {}

  Result<std::vector<SqlRow>> query(std::string_view what, std::string_view sql,
                                    std::span<const SqlValue> params) override {
    // SQLite reads $N as a name; ?N is the numbered parameter PostgreSQL's $N means.
    std::string text(sql);
    for (auto& c : text)
      if (c == '$') c = '?';
    auto st = db_.prepare(text);
    if (!st) return std::unexpected(sqlite_error(what));
    for (size_t i = 0; i < params.size(); ++i) bind(*st, static_cast<int>(i + 1), params[i]);
    std::vector<SqlRow> rows;
    io::SqliteStatement::Step step;
    while ((step = st->step()) == io::SqliteStatement::Step::Row) rows.push_back(row_of(*st));
    // A corrupt page ends the loop with an error, not with SQLITE_DONE: rows
    // would go missing silently.
    if (step != io::SqliteStatement::Step::Done) return std::unexpected(sqlite_error(what));
    return rows;
  }

  Result<void> exec(std::string_view what, std::string_view sql) override {
    if (!db_.exec(sql)) return std::unexpected(sqlite_error(what));
    return {};
  }

  Result<bool> table_exists(std::string_view table) override {
    SqlValue name{std::string(table)};
    KEET_TRY(rows, query("schema check", "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1", {&name, 1}));
    return !rows->empty();
  }

  // Switching to WAL needs a moment alone with the file; a writer that opens the
  // database at the same instant can make it report busy despite the timeout.
  Result<void> enable_wal() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (db_.exec("PRAGMA journal_mode=WAL")) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + attempt * 5));
    }
    return std::unexpected(sqlite_error("cannot enable WAL mode"));
  }

  Error error(ExitCode code, std::string_view message) const override {
    return {code, fmt::format("{}: {}", label_, message)};
  }
  std::string describe() const override { return "sqlite:" + path_; }
  bool shared() const override { return false; }
  bool read_only() const override { return db_.read_only(); }

 private:
  // A damaged file is bad input; anything else (locked, disk full) is the
  // database failing.
  Error sqlite_error(std::string_view what) const {
    std::string message = what.empty() ? db_.error() : fmt::format("{}: {}", what, db_.error());
    return error(db_.damaged() ? ExitCode::BadInput : ExitCode::Dependency, message);
  }

  io::Sqlite db_;
  std::string path_, label_;
};

// Read-only WAL needs its -shm file; when that can be neither found nor
// created (a read-only folder), the file is read as immutable, without locks:
// a writer in WAL mode (keet's) would have made that -shm file beside it.
std::optional<io::Sqlite> open_read_only(const std::string& path) {
  for (bool immutable : {false, true}) {
    auto db = io::Sqlite::open(path, {.read_only = true, .immutable = immutable, .busy_timeout_ms = kBusyTimeoutMs});
    if (db && db->exec("SELECT count(*) FROM sqlite_master")) return std::move(*db);
  }
  return std::nullopt;
}

bool readable_not_writable(const std::string& path) {
  return access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0 && access(path.c_str(), R_OK) == 0;
}

// --------------------------------------------------------------- PostgreSQL

// A query result, cleared on scope exit.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : res_(r) {}
  ~PgResult() { pq().clear(res_); }
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  bool ok() const {
    auto s = pq().result_status(res_);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
  }
  std::vector<SqlRow> rows() const {
    std::vector<SqlRow> out;
    int columns = pq().nfields(res_);
    for (int r = 0; r < pq().ntuples(res_); ++r) {
      SqlRow row;
      for (int c = 0; c < columns; ++c) row.emplace_back(pq().getvalue(res_, r, c));
      out.push_back(std::move(row));
    }
    return out;
  }

 private:
  PGresult* res_;
};

// Parameters travel as text; SQL NULL as a null pointer.
std::optional<std::string> pg_text(const SqlValue& v) {
  switch (v.kind) {
    case SqlValue::Kind::Text:
      return v.text;
    case SqlValue::Kind::Integer:
      return std::to_string(v.integer);
    case SqlValue::Kind::Real:
      return real_text(v.real);
    case SqlValue::Kind::Null:
      break;
  }
  return std::nullopt;
}

class PgConnection final : public SqlConnection {
 public:
  PgConnection(PGconn* conn, std::string label) : conn_(conn), label_(std::move(label)) {}
  ~PgConnection() override { pq().finish(conn_); }

  Result<std::vector<SqlRow>> query(std::string_view what, std::string_view sql,
                                    std::span<const SqlValue> params) override {
    std::vector<std::optional<std::string>> texts;
    for (const auto& p : params) texts.push_back(pg_text(p));
    std::vector<const char*> values;
    for (const auto& t : texts) values.push_back(t ? t->c_str() : nullptr);
    PgResult r(pq().exec_params(conn_, std::string(sql).c_str(), static_cast<int>(values.size()), nullptr,
                                values.data(), nullptr, nullptr, 0));
    if (!r.ok()) return std::unexpected(pg_error(what));
    return r.rows();
  }

  Result<void> exec(std::string_view what, std::string_view sql) override {
    PgResult r(pq().exec(conn_, std::string(sql).c_str()));
    if (!r.ok()) return std::unexpected(pg_error(what));
    return {};
  }

  // A plain query on pg_class, not to_regclass(): the relation cache would keep
  // the answer of a check made before a lock was taken (an advisory lock does
  // not refresh it), and a second writer would then run the DDL.
  Result<bool> table_exists(std::string_view table) override {
    SqlValue name{std::string(table)};
    KEET_TRY(rows, query("schema check",
                         "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                         "ON n.oid = c.relnamespace WHERE c.relname = $1 AND n.nspname = current_schema())",
                         {&name, 1}));
    return rows->size() == 1 && !(*rows)[0].empty() && (*rows)[0][0] == "t";
  }

  Error error(ExitCode code, std::string_view message) const override {
    return {code, fmt::format("{}: {}", label_, message)};
  }
  std::string describe() const override { return label_; }
  bool shared() const override { return true; }
  bool read_only() const override { return false; }
  bool lost() const override { return pq().status(conn_) == CONNECTION_BAD; }
  // PQreset connects again with the same parameters (and notice processor).
  Result<void> reconnect() override {
    pq().reset(conn_);
    if (pq().status(conn_) == CONNECTION_OK) return {};
    return std::unexpected(error(ExitCode::Dependency, fmt::format("connection lost, cannot connect again: {}",
                                                                   without_trailing_space(pq().error_message(conn_)))));
  }

 private:
  Error pg_error(std::string_view what) const {
    std::string msg = without_trailing_space(pq().error_message(conn_));
    return error(ExitCode::Dependency, what.empty() ? msg : fmt::format("{}: {}", what, msg));
  }

  PGconn* conn_;
  std::string label_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> open_sqlite_connection(const std::string& path, const SqliteOpen& how) {
  if (how.read_only_if_unwritable && readable_not_writable(path))
    if (auto db = open_read_only(path)) return std::make_unique<SqliteConnection>(std::move(*db), path, how.label);
  // One connection may serve several threads (keet serve's HTTP and worker threads).
  auto db = io::Sqlite::open(path, {.create = true, .busy_timeout_ms = kBusyTimeoutMs, .serialized = true});
  if (!db) return fail(ExitCode::BadInput, fmt::format("{}: {}", how.open_error, db.error()));
  auto conn = std::make_unique<SqliteConnection>(std::move(*db), path, how.label);
  KEET_TRY_VOID(conn->enable_wal());
  return conn;
}

Result<std::unique_ptr<SqlConnection>> open_postgres_connection(const std::string& conninfo, const std::string& label) {
  KEET_TRY_VOID(load_libpq());
  PGconn* conn = pq().connectdb(conninfo.c_str());
  if (!conn || pq().status(conn) != CONNECTION_OK) {
    std::string msg = conn ? without_trailing_space(pq().error_message(conn)) : "out of memory";
    pq().finish(conn);
    return fail(ExitCode::Dependency, fmt::format("{}: cannot connect: {}", label, msg));
  }
  // Notices ("relation already exists, skipping") would go to stderr otherwise.
  pq().set_notice_processor(
      conn, [](void*, const char*) {}, nullptr);
  return std::make_unique<PgConnection>(conn, label);
}

bool is_postgres_url(std::string_view url) {
  return starts_with_ci(url, "postgresql://") || starts_with_ci(url, "postgres://");
}

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

}  // namespace keet::store
