// SQLite backend. Parallel CI jobs on one machine share the file: WAL mode lets
// readers run beside a writer, the busy timeout makes writers wait for each
// other instead of failing, and every run is written in one IMMEDIATE
// transaction so a run is stored whole or not at all.
#include <sqlite3.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "store/sql_store.h"
#include "util/error.h"

namespace keet::store {
namespace {

constexpr int kBusyTimeoutMs = 60000;

constexpr const char* kSqliteSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  tag TEXT NOT NULL, commit_sha TEXT NOT NULL, recorded_at INTEGER NOT NULL, report_path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, name TEXT NOT NULL, device TEXT NOT NULL, duration_ns REAL, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS kernels_run ON kernels(run_id);
CREATE INDEX IF NOT EXISTS runs_tag ON runs(tag, recorded_at);
CREATE TABLE IF NOT EXISTS calibration (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL, rule TEXT NOT NULL, arch TEXT NOT NULL, kernel TEXT NOT NULL,
  predicted REAL NOT NULL, measured REAL NOT NULL, recorded_at INTEGER NOT NULL);
)sql";

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, const std::string& s) { sqlite3_bind_text(stmt_, i, s.c_str(), -1, SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::optional<double> v) { v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i); }
  int step() { return sqlite3_step(stmt_); }
  void reset() { sqlite3_reset(stmt_); }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    auto* p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

class SqliteStore final : public SqlStore<SqliteStore> {
 public:
  // Writers take the lock up front, so two of them never deadlock upgrading.
  static constexpr const char* kWriteBegin = "BEGIN IMMEDIATE";
  static constexpr const char* kReadBegin = "BEGIN";

  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  Result<void> init() {
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    // A database this user may not write (a shared, read-only history) still
    // serves `history` and `gate`; `record` fails on its first write.
    if (sqlite3_db_readonly(db_, "main") == 1) return {};
    if (auto r = enable_wal(); !r) return r;
    return in_transaction([&]() -> Result<void> { return exec(kSqliteSchema); });
  }

  std::string describe() const override { return "sqlite:" + path_; }

 private:
  friend class SqlStore<SqliteStore>;

  // A damaged file is bad input; anything else (locked, disk full) is the
  // database failing.
  Error error(std::string_view what) const {
    int rc = sqlite3_errcode(db_);
    bool damaged = rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
    return {damaged ? ExitCode::BadInput : ExitCode::Dependency,
            fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_))};
  }

  Result<void> exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return std::unexpected(error("sqlite"));
    return {};
  }

  // Switching to WAL needs a moment alone with the file; a writer that opens the
  // database at the same instant can make it report busy despite the timeout.
  Result<void> enable_wal() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_OK) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + attempt * 5));
    }
    return std::unexpected(error("cannot enable WAL mode"));
  }

  Result<int64_t> insert_run(const Run& run) {
    Statement s(db_, "INSERT INTO runs(tag, commit_sha, recorded_at, report_path) VALUES(?,?,?,?)");
    if (!s.ok()) return std::unexpected(error("prepare"));
    s.bind(1, run.tag);
    s.bind(2, run.commit);
    s.bind(3, run.recorded_at);
    s.bind(4, run.report_path);
    if (s.step() != SQLITE_DONE) return std::unexpected(error("insert run"));
    return sqlite3_last_insert_rowid(db_);
  }

  Result<void> insert_kernels(int64_t run_id, const std::vector<compare::KernelSnapshot>& kernels) {
    Statement s(db_, "INSERT INTO kernels(run_id, ordinal, name, device, duration_ns, payload) VALUES(?,?,?,?,?,?)");
    if (!s.ok()) return std::unexpected(error("prepare"));
    for (size_t i = 0; i < kernels.size(); ++i) {
      s.bind(1, run_id);
      s.bind(2, static_cast<int64_t>(i));
      s.bind(3, kernels[i].display);
      s.bind(4, kernels[i].device);
      s.bind(5, kernels[i].duration_ns);
      s.bind(6, kernel_payload(kernels[i]));
      if (s.step() != SQLITE_DONE) return std::unexpected(error("insert kernel"));
      s.reset();
    }
    return {};
  }

  Result<void> read_runs(size_t limit, std::vector<Run>& out) {
    Statement s(db_,
                "SELECT id, tag, commit_sha, recorded_at, report_path FROM runs "
                "ORDER BY recorded_at DESC, id DESC LIMIT ?");
    if (!s.ok()) return std::unexpected(error("prepare"));
    s.bind(1, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
      out.push_back(Run{s.integer(0), s.text(1), s.text(2), s.integer(3), s.text(4), {}});
    // A corrupt page ends the loop with an error, not with SQLITE_DONE: rows
    // would go missing silently.
    if (rc != SQLITE_DONE) return std::unexpected(error("read runs"));
    for (auto& run : out)
      if (auto r = read_kernels(run); !r) return r;
    return {};
  }

  Result<void> read_kernels(Run& run) {
    Statement s(db_, "SELECT payload FROM kernels WHERE run_id = ? ORDER BY ordinal");
    if (!s.ok()) return std::unexpected(error("prepare"));
    s.bind(1, run.id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      auto k = kernel_from_payload(s.text(0));
      if (!k) return fail(ExitCode::BadInput, fmt::format("{}: run #{} holds a damaged kernel record", path_, run.id));
      run.kernels.push_back(std::move(*k));
    }
    if (rc != SQLITE_DONE) return std::unexpected(error("read kernels"));
    return {};
  }

  Result<void> insert_calibration(const std::vector<compare::CalibrationPoint>& points) {
    Statement s(db_,
                "INSERT INTO calibration(source, rule, arch, kernel, predicted, measured, recorded_at) "
                "VALUES(?,?,?,?,?,?,?)");
    if (!s.ok()) return std::unexpected(error("prepare"));
    for (const auto& p : points) {
      s.bind(1, p.source);
      s.bind(2, p.rule);
      s.bind(3, p.arch);
      s.bind(4, p.kernel);
      s.bind(5, p.predicted);
      s.bind(6, p.measured);
      s.bind(7, p.recorded_at);
      if (s.step() != SQLITE_DONE) return std::unexpected(error("insert calibration"));
      s.reset();
    }
    return {};
  }

  // A read-only history written before calibration was kept has no table: no points.
  Result<void> read_calibration(std::vector<compare::CalibrationPoint>& out) {
    Statement exists(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'calibration'");
    if (!exists.ok()) return std::unexpected(error("prepare"));
    if (exists.step() != SQLITE_ROW) return {};
    Statement s(db_,
                "SELECT source, rule, arch, kernel, predicted, measured, recorded_at FROM calibration ORDER BY id");
    if (!s.ok()) return std::unexpected(error("prepare"));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
      out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.real(4), s.real(5), s.integer(6)});
    if (rc != SQLITE_DONE) return std::unexpected(error("read calibration"));
    return {};
  }

  sqlite3* db_;
  std::string path_;
};

}  // namespace

namespace {

// "file:" URI of a path: '%', '?' and '#' would otherwise end or change it.
std::string file_uri(const std::string& path, const char* query) {
  std::string out = "file:";
  for (char c : path) out += c == '%' ? "%25" : c == '?' ? "%3f" : c == '#' ? "%23" : std::string(1, c);
  return out + "?" + query;
}

// A history this user may read but not write (a shared CI copy). Read-only
// WAL needs its -shm file; when that can be neither found nor created (a
// read-only folder), the file is read as immutable, without locks: a writer
// in WAL mode (keet's) would have made that -shm file beside it.
sqlite3* open_read_only(const std::string& path) {
  for (const char* query : {"mode=ro", "immutable=1"}) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file_uri(path, query).c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) ==
            SQLITE_OK &&
        sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) == SQLITE_OK)
      return db;
    sqlite3_close_v2(db);
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<HistoryStore>> open_sqlite(const std::string& path) {
  if (access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0 && access(path.c_str(), R_OK) == 0)
    if (sqlite3* db = open_read_only(path)) {
      auto store = std::make_unique<SqliteStore>(db, path);
      KEET_TRY_VOID(store->init());
      return store;
    }
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return fail(ExitCode::BadInput, fmt::format("{}: cannot open history database: {}", path, msg));
  }
  auto store = std::make_unique<SqliteStore>(db, path);
  KEET_TRY_VOID(store->init());
  return store;
}

}  // namespace keet::store
