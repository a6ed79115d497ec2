// Response cache in SQLite, keyed by provider, model and a hash of the request
// (its whole URL, endpoint included, and body: never the headers, so never
// the API key). A hit costs no
// tokens.
#pragma once
#include <optional>
#include <string>

#include "io/sqlite.h"

namespace keet::llm {

class ResponseCache {
 public:
  // Opens (creating folders and the table); an unusable cache is disabled, never fatal.
  explicit ResponseCache(const std::string& path);
  ~ResponseCache();
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  bool ok() const { return db_.has_value(); }
  std::optional<std::string> get(const std::string& provider, const std::string& model, const std::string& hash);
  void put(const std::string& provider, const std::string& model, const std::string& hash, const std::string& body);

 private:
  std::optional<io::Sqlite> db_;
};

}  // namespace keet::llm
