// A full-text index over knowledge-base entries: an in-memory SQLite FTS5 table
// ranked by bm25, with the title and aliases weighted above the body text.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/sqlite.h"
#include "util/error.h"

namespace keet::kb {

// The searchable text of one document, one field per FTS5 column.
struct FtsDocument {
  std::string title;
  std::string aliases;
  std::string metrics;
  std::string summary;
  std::string body;
  double boost = 1.0;  // multiplies the bm25 score; > 1 ranks the document higher
};

struct FtsHit {
  std::int64_t doc = 0;  // position in the vector given to add_all()
  double score = 0;      // bm25: lower is better
};

// Turns a user's free text into a safe FTS5 query: each word becomes a quoted
// term and terms are OR-ed, so no FTS5 operator or syntax from the user ever
// reaches SQLite. Returns "" when nothing searchable is left.
std::string fts_query(std::string_view text, const std::set<std::string, std::less<>>& stopwords);

class FtsIndex {
 public:
  static Result<FtsIndex> create();
  // Indexes `docs`; a hit's `doc` is the document's position in the vector.
  Result<void> add_all(const std::vector<FtsDocument>& docs);
  // `match` must come from fts_query(); it is bound as a parameter, never spliced.
  Result<std::vector<FtsHit>> search(const std::string& match, int limit) const;

 private:
  explicit FtsIndex(io::Sqlite db) : db_(std::move(db)) {}
  Result<void> insert(io::SqliteStatement& stmt, std::int64_t doc, const FtsDocument& d);
  io::Sqlite db_;
};

}  // namespace keet::kb
