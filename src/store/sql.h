// The one SQL connection every table KEET keeps goes through: the performance
// history (store/sql_history.cc) and the job queue of keet serve
// (service/job_store.cc), on SQLite (one machine) or PostgreSQL (shared by
// many). Statements are written once with $1..$N parameters; values come back
// as text. Only this implementation touches libpq; SQLite goes through
// io/sqlite.h.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::store {

// A statement parameter: NULL, text, integer or real. Integers and reals are
// bound with their type, so SQLite stores the exact double and PostgreSQL
// reads the shortest text that gives it back.
struct SqlValue {
  enum class Kind { Null, Text, Integer, Real };
  Kind kind = Kind::Null;
  std::string text;
  int64_t integer = 0;
  double real = 0;

  SqlValue() = default;
  SqlValue(std::string s) : kind(Kind::Text), text(std::move(s)) {}
  SqlValue(const char* s) : SqlValue(std::string(s)) {}
  SqlValue(int64_t v) : kind(Kind::Integer), integer(v) {}
  SqlValue(double v) : kind(Kind::Real), real(v) {}
  SqlValue(std::optional<double> v) : kind(v ? Kind::Real : Kind::Null), real(v.value_or(0)) {}
};
// A result row: every column as text (NULL as ""; a real in its shortest
// round-trip form, so parse_number gives back the stored double).
using SqlRow = std::vector<std::string>;

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // One statement. `what` names it in the error ("insert run"); empty, the
  // error carries the database's message alone.
  virtual Result<std::vector<SqlRow>> query(std::string_view what, std::string_view sql,
                                            std::span<const SqlValue> params = {}) = 0;
  // Statements without parameters or rows (a schema may hold several).
  virtual Result<void> exec(std::string_view what, std::string_view sql) = 0;
  // Does `table` exist in the connection's schema?
  virtual Result<bool> table_exists(std::string_view table) = 0;

  // Runs `body` between `begin` and COMMIT; a failure rolls back and is returned.
  template <typename F>
  auto in_transaction(std::string_view begin, F&& body) -> decltype(body()) {
    KEET_TRY_VOID(exec("", begin));
    auto r = body();
    if (!r) {
      (void)exec("", "ROLLBACK");
      return r;
    }
    KEET_TRY_VOID(exec("", "COMMIT"));
    return r;
  }

  // The error a caller reports about this database (prefixed like the connection's own).
  virtual Error error(ExitCode code, std::string_view message) const = 0;
  virtual std::string describe() const = 0;  // "sqlite:/path" or a URL without its password
  virtual bool shared() const = 0;           // PostgreSQL: other machines may use it
  virtual bool read_only() const = 0;        // opened for reading only (a shared history copy)
  // The server dropped the connection (a restart, a failover); only a server connection can.
  virtual bool lost() const { return false; }
  // Connects again with the same parameters.
  virtual Result<void> reconnect() { return {}; }
};

struct SqliteOpen {
  // Prefix of every error ("PATH" or "sqlite:PATH").
  std::string label;
  // Prefix of the error when the file cannot be opened at all.
  std::string open_error;
  // A file this user may read but not write is opened read-only (a shared
  // CI copy of the history) instead of failing.
  bool read_only_if_unwritable = false;
};

// Opens (creating it and its folders) the SQLite file at `path` with a busy
// timeout and WAL journaling.
Result<std::unique_ptr<SqlConnection>> open_sqlite_connection(const std::string& path, const SqliteOpen& how);

// Connects to `conninfo` (notices silenced); errors and describe() show `label`.
Result<std::unique_ptr<SqlConnection>> open_postgres_connection(const std::string& conninfo, const std::string& label);

// A PostgreSQL URL as messages show it: no "user:password@", and the value of
// every password parameter replaced by "<redacted>".
std::string pg_display_url(const std::string& url);
// The URL keet connects with: the user's, plus connect_timeout (seconds) when
// it names none, so a server that accepts and never answers cannot hang keet.
std::string pg_connect_url(const std::string& url);
constexpr int kPgConnectTimeoutS = 10;
bool is_postgres_url(std::string_view url);

}  // namespace keet::store
