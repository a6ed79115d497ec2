#include "kb/fts_index.h"
#include "util/error.h"

#include <sqlite3.h>

#include <cctype>

#include <fmt/format.h>

namespace keet::kb {
namespace {

// Porter stemming lets "loads" find "load"; unicode61 splits on '_' and '.',
// so metric names are searchable by their parts too.
constexpr const char* kSchemaSql =
    "CREATE VIRTUAL TABLE kb USING fts5(title, aliases, metrics, summary, body, boost UNINDEXED, "
    "tokenize = 'porter unicode61 remove_diacritics 2')";
// bm25 column weights, in column order: a hit in the title or an alias says far
// more about relevance than one in the long body text. bm25 is negative (more
// negative is better), so a boost above 1 ranks a document higher.
constexpr const char* kSearchSql =
    "SELECT rowid, bm25(kb, 10.0, 8.0, 4.0, 3.0, 1.0, 0.0) * boost AS score FROM kb "
    "WHERE kb MATCH ?1 ORDER BY score LIMIT ?2";
constexpr const char* kInsertSql =
    "INSERT INTO kb(rowid, title, aliases, metrics, summary, body, boost) VALUES (?,?,?,?,?,?,?)";
constexpr std::size_t kMaxTerms = 32;

struct Finalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

std::unexpected<Error> sqlite_error(sqlite3* db, std::string_view what) {
  return fail(ExitCode::Failed, fmt::format("knowledge-base index: {}: {}", what, sqlite3_errmsg(db)));
}

Result<Statement> prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) return sqlite_error(db, "prepare");
  return Statement(raw);
}

void bind_text(sqlite3_stmt* s, int index, const std::string& text) {
  sqlite3_bind_text(s, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// Words are runs of ASCII letters and digits; everything else separates them.
std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.back().empty())
      out.emplace_back();
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

}  // namespace

std::string fts_query(std::string_view text, const std::set<std::string, std::less<>>& stopwords) {
  std::set<std::string> seen;
  std::string query;
  for (auto& w : words(text)) {
    if (stopwords.contains(w) || !seen.insert(w).second) continue;
    if (seen.size() > kMaxTerms) break;
    query += (query.empty() ? "\"" : " OR \"") + w + "\"";
  }
  return query;
}

void FtsIndex::Close::operator()(sqlite3* db) const { sqlite3_close(db); }

Result<FtsIndex> FtsIndex::create() {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  FtsIndex index;
  index.db_.reset(raw);
  if (rc != SQLITE_OK) return sqlite_error(raw, "open");
  if (sqlite3_exec(raw, kSchemaSql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(raw, "create (is FTS5 built into this SQLite?)");
  return index;
}

Result<void> FtsIndex::add_all(const std::vector<FtsDocument>& docs) {
  KEET_TRY(stmt, prepare(db_.get(), kInsertSql));
  // One transaction: per-row commits would dominate the start-up time.
  sqlite3_exec(db_.get(), "BEGIN", nullptr, nullptr, nullptr);
  for (std::size_t i = 0; i < docs.size(); ++i)
    if (auto r = insert(stmt->get(), static_cast<std::int64_t>(i), docs[i]); !r) return r;
  if (sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(db_.get(), "commit");
  return {};
}

Result<void> FtsIndex::insert(sqlite3_stmt* stmt, std::int64_t doc, const FtsDocument& d) {
  sqlite3_reset(stmt);
  sqlite3_bind_int64(stmt, 1, doc);
  int column = 2;
  for (const auto* text : {&d.title, &d.aliases, &d.metrics, &d.summary, &d.body}) bind_text(stmt, column++, *text);
  sqlite3_bind_double(stmt, column, d.boost);
  if (sqlite3_step(stmt) != SQLITE_DONE) return sqlite_error(db_.get(), "insert");
  return {};
}

Result<std::vector<FtsHit>> FtsIndex::search(const std::string& match, int limit) const {
  std::vector<FtsHit> hits;
  if (match.empty()) return hits;
  KEET_TRY(stmt, prepare(db_.get(), kSearchSql));
  bind_text(stmt->get(), 1, match);
  sqlite3_bind_int(stmt->get(), 2, limit);
  int rc;
  while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW)
    hits.push_back({sqlite3_column_int64(stmt->get(), 0), sqlite3_column_double(stmt->get(), 1)});
  if (rc != SQLITE_DONE) return sqlite_error(db_.get(), "search");
  return hits;
}

}  // namespace keet::kb
