#include "llm/cache.h"

#include <fmt/format.h>

#include "io/clock.h"

namespace keet::llm {

ResponseCache::ResponseCache(const std::string& path) {
  auto db = io::Sqlite::open(path, {.create = true, .busy_timeout_ms = 2000});
  if (!db) return;
  const char* ddl =
      "CREATE TABLE IF NOT EXISTS llm_cache (provider TEXT, model TEXT, hash TEXT, response TEXT, "
      "created INTEGER, PRIMARY KEY (provider, model, hash))";
  if (db->exec(ddl)) db_ = std::move(*db);
}

ResponseCache::~ResponseCache() = default;

std::optional<std::string> ResponseCache::get(const std::string& provider, const std::string& model,
                                              const std::string& hash) {
  if (!db_) return std::nullopt;
  auto st = db_->prepare("SELECT response FROM llm_cache WHERE provider=? AND model=? AND hash=?");
  if (!st) return std::nullopt;
  st->bind(1, std::string_view(provider)).bind(2, std::string_view(model)).bind(3, std::string_view(hash));
  if (st->step() != io::SqliteStatement::Step::Row) return std::nullopt;
  return std::string(st->text(0));
}

void ResponseCache::put(const std::string& provider, const std::string& model, const std::string& hash,
                        const std::string& body) {
  if (!db_) return;
  auto st = db_->prepare("INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?)");
  if (!st) return;
  st->bind(1, std::string_view(provider)).bind(2, std::string_view(model)).bind(3, std::string_view(hash));
  st->bind(4, std::string_view(body)).bind(5, static_cast<int64_t>(io::system_unix_ms() / 1000));
  (void)st->step();
}

}  // namespace keet::llm
