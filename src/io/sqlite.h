// SQLite, behind one narrow interface: a database handle and its prepared
// statements, both closed by their destructors, with typed binds and column
// reads. Every part of KEET that opens a SQLite file of its own goes through
// here (the Nsight Systems export reader, the knowledge-base index, the LLM
// response cache, store::SqlConnection's SQLite side). No other file
// includes <sqlite3.h> (scripts/check-layers checks it).
#pragma once
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace keet::io {

class SqliteStatement;

// Errors are SQLite's own message; the caller says which file and step.
template <typename T>
using SqliteResult = std::expected<T, std::string>;

struct SqliteOpen {
  // Read-only opens neither create nor write the file.
  bool read_only = false;
  // The file never changes while it is open (a finished export): SQLite
  // skips locking and change detection.
  bool immutable = false;
  // Creates the file and its missing folders (writable opens only).
  bool create = false;
  // Waits this long for another process's lock before SQLITE_BUSY.
  int busy_timeout_ms = 0;
  // Several threads use the one connection (keet serve's HTTP and workers):
  // SQLite serialises them.
  bool serialized = false;
};

class Sqlite {
 public:
  // Opens `path` (a plain file path; characters SQLite's URIs treat
  // specially are escaped here).
  static SqliteResult<Sqlite> open(const std::string& path, const SqliteOpen& how);
  // A private database in memory (the knowledge-base index).
  static SqliteResult<Sqlite> in_memory();
  // Read-only over `bytes`, which the caller owns and keeps unchanged while
  // the database is open: SQLite neither copies nor frees them.
  static SqliteResult<Sqlite> over_bytes(std::string_view bytes);

  Sqlite(Sqlite&&) noexcept = default;
  Sqlite& operator=(Sqlite&&) noexcept = default;
  ~Sqlite();

  // For a file from an untrusted source: nothing in it runs (triggers,
  // views), strings and statements are bounded, nothing may be attached,
  // and a damaged b-tree page is an error instead of undefined reads.
  void harden();

  // Statements without parameters or rows (several may be separated by ';').
  SqliteResult<void> exec(std::string_view sql);
  // Const: preparing reads the schema and changes no data.
  SqliteResult<SqliteStatement> prepare(std::string_view sql) const;

  std::string error() const;  // the last error's message
  // The last error says the file is damaged or not a database (bad input,
  // where a lock or a full disk is the database failing).
  bool damaged() const;
  bool read_only() const;

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  explicit Sqlite(sqlite3* db) : db_(db) {}
  std::unique_ptr<sqlite3, Close> db_;
};

class SqliteStatement {
 public:
  enum class Step { Row, Done, Error };

  SqliteStatement(SqliteStatement&&) noexcept = default;
  SqliteStatement& operator=(SqliteStatement&&) noexcept = default;
  ~SqliteStatement();

  // Parameters count from 1, as in SQL's ?1. Text is copied.
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind(int index, double value);
  SqliteStatement& bind(int index, std::string_view text);
  SqliteStatement& bind_null(int index);

  Step step();
  // Ready to step again from the first row; bindings stay.
  void reset();

  // Columns count from 0 and are valid until the next step or reset.
  int columns() const;
  bool is_null(int column) const;
  bool is_real(int column) const;  // stored as a floating-point value
  int64_t i64(int column) const;
  double real(int column) const;
  std::string_view text(int column) const;

 private:
  friend class Sqlite;
  struct Finalize {
    void operator()(sqlite3_stmt* s) const;
  };
  explicit SqliteStatement(sqlite3_stmt* s) : stmt_(s) {}
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

}  // namespace keet::io
