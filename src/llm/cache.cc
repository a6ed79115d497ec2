#include "llm/cache.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "io/clock.h"

namespace keet::llm {

ResponseCache::ResponseCache(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    return;
  }
  sqlite3_busy_timeout(db_, 2000);
  const char* ddl =
      "CREATE TABLE IF NOT EXISTS llm_cache (provider TEXT, model TEXT, hash TEXT, response TEXT, "
      "created INTEGER, PRIMARY KEY (provider, model, hash))";
  if (sqlite3_exec(db_, ddl, nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
}

ResponseCache::~ResponseCache() { sqlite3_close(db_); }

std::optional<std::string> ResponseCache::get(const std::string& provider, const std::string& model,
                                              const std::string& hash) {
  if (!db_) return std::nullopt;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT response FROM llm_cache WHERE provider=? AND model=? AND hash=?", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, provider.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, model.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, hash.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<std::string> out;
  if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return out;
}

void ResponseCache::put(const std::string& provider, const std::string& model, const std::string& hash,
                        const std::string& body) {
  if (!db_) return;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?)", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, provider.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, model.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, hash.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, body.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 5, static_cast<sqlite3_int64>(io::system_unix_ms() / 1000));
  sqlite3_step(st);
  sqlite3_finalize(st);
}

}  // namespace keet::llm
