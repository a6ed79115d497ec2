#include "io/sqlite.h"

#include <sqlite3.h>

#include <filesystem>

namespace keet::io {
namespace {

std::string message_of(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

// A file: URI for `path`, with the characters a URI gives meaning escaped.
std::string file_uri(const std::string& path, std::string_view query) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%')
      out += "%25";
    else if (c == '?')
      out += "%3f";
    else if (c == '#')
      out += "%23";
    else
      out += c;
  }
  return out + "?" + std::string(query);
}

}  // namespace

void Sqlite::Close::operator()(sqlite3* db) const { sqlite3_close_v2(db); }
void SqliteStatement::Finalize::operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }

Sqlite::~Sqlite() = default;
SqliteStatement::~SqliteStatement() = default;

SqliteResult<Sqlite> Sqlite::open(const std::string& path, const SqliteOpen& how) {
  int flags = SQLITE_OPEN_URI;
  std::string query;
  if (how.read_only) {
    flags |= SQLITE_OPEN_READONLY;
    query = how.immutable ? "mode=ro&immutable=1" : "mode=ro";
  } else {
    flags |= SQLITE_OPEN_READWRITE;
    if (how.create) {
      flags |= SQLITE_OPEN_CREATE;
      std::error_code ec;
      auto parent = std::filesystem::path(path).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    }
    query = "mode=" + std::string(how.create ? "rwc" : "rw");
  }
  if (how.serialized) flags |= SQLITE_OPEN_FULLMUTEX;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(file_uri(path, query).c_str(), &raw, flags, nullptr);
  Sqlite db(raw);
  if (rc != SQLITE_OK) return std::unexpected(message_of(raw));
  if (how.busy_timeout_ms > 0) sqlite3_busy_timeout(raw, how.busy_timeout_ms);
  return db;
}

SqliteResult<Sqlite> Sqlite::in_memory() {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Sqlite db(raw);
  if (rc != SQLITE_OK) return std::unexpected(message_of(raw));
  return db;
}

SqliteResult<Sqlite> Sqlite::over_bytes(std::string_view bytes) {
  auto db = in_memory();
  if (!db) return db;
  auto* data = reinterpret_cast<unsigned char*>(const_cast<char*>(bytes.data()));
  auto n = static_cast<sqlite3_int64>(bytes.size());
  if (sqlite3_deserialize(db->db_.get(), "main", data, n, n, SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
    return std::unexpected(db->error());
  return db;
}

void Sqlite::harden() {
  sqlite3* db = db_.get();
  int off = 0;
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &off);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, &off);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 24);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_exec(db, "PRAGMA cell_size_check=ON; PRAGMA mmap_size=0; PRAGMA cache_size=-8192", nullptr, nullptr, nullptr);
}

SqliteResult<void> Sqlite::exec(std::string_view sql) {
  if (sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return std::unexpected(error());
  return {};
}

SqliteResult<SqliteStatement> Sqlite::prepare(std::string_view sql) const {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  SqliteStatement statement(raw);
  if (rc != SQLITE_OK) return std::unexpected(error());
  if (!raw) return std::unexpected(std::string("no statement in the SQL text"));
  return statement;
}

std::string Sqlite::error() const { return message_of(db_.get()); }
bool Sqlite::damaged() const {
  int rc = sqlite3_errcode(db_.get());
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}
bool Sqlite::read_only() const { return sqlite3_db_readonly(db_.get(), "main") == 1; }

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_.get(), index, value);
  return *this;
}
SqliteStatement& SqliteStatement::bind(int index, double value) {
  sqlite3_bind_double(stmt_.get(), index, value);
  return *this;
}
SqliteStatement& SqliteStatement::bind(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_.get(), index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}
SqliteStatement& SqliteStatement::bind_null(int index) {
  sqlite3_bind_null(stmt_.get(), index);
  return *this;
}

SqliteStatement::Step SqliteStatement::step() {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return Step::Row;
  if (rc == SQLITE_DONE) return Step::Done;
  return Step::Error;
}

void SqliteStatement::reset() { sqlite3_reset(stmt_.get()); }

int SqliteStatement::columns() const { return sqlite3_column_count(stmt_.get()); }
bool SqliteStatement::is_null(int column) const { return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL; }
bool SqliteStatement::is_real(int column) const { return sqlite3_column_type(stmt_.get(), column) == SQLITE_FLOAT; }
int64_t SqliteStatement::i64(int column) const { return sqlite3_column_int64(stmt_.get(), column); }
double SqliteStatement::real(int column) const { return sqlite3_column_double(stmt_.get(), column); }
std::string_view SqliteStatement::text(int column) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), column));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), column))) : std::string_view();
}

}  // namespace keet::io
