#include "kb/fts_index.h"
#include "util/error.h"

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

std::unexpected<Error> sqlite_error(std::string_view what, const std::string& message) {
  return fail(ExitCode::Failed, fmt::format("knowledge-base index: {}: {}", what, message));
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

Result<FtsIndex> FtsIndex::create() {
  auto db = io::Sqlite::in_memory();
  if (!db) return sqlite_error("open", db.error());
  if (auto r = db->exec(kSchemaSql); !r) return sqlite_error("create (is FTS5 built into this SQLite?)", r.error());
  return FtsIndex(std::move(*db));
}

Result<void> FtsIndex::add_all(const std::vector<FtsDocument>& docs) {
  auto stmt = db_.prepare(kInsertSql);
  if (!stmt) return sqlite_error("prepare", stmt.error());
  // One transaction: per-row commits would dominate the start-up time.
  (void)db_.exec("BEGIN");
  for (std::size_t i = 0; i < docs.size(); ++i)
    if (auto r = insert(*stmt, static_cast<std::int64_t>(i), docs[i]); !r) return r;
  if (auto r = db_.exec("COMMIT"); !r) return sqlite_error("commit", r.error());
  return {};
}

Result<void> FtsIndex::insert(io::SqliteStatement& stmt, std::int64_t doc, const FtsDocument& d) {
  stmt.reset();
  stmt.bind(1, doc);
  int column = 2;
  for (const auto* text : {&d.title, &d.aliases, &d.metrics, &d.summary, &d.body}) stmt.bind(column++, *text);
  stmt.bind(column, d.boost);
  if (stmt.step() != io::SqliteStatement::Step::Done) return sqlite_error("insert", db_.error());
  return {};
}

Result<std::vector<FtsHit>> FtsIndex::search(const std::string& match, int limit) const {
  std::vector<FtsHit> hits;
  if (match.empty()) return hits;
  auto stmt = db_.prepare(kSearchSql);
  if (!stmt) return sqlite_error("prepare", stmt.error());
  stmt->bind(1, std::string_view(match)).bind(2, int64_t{limit});
  io::SqliteStatement::Step step;
  while ((step = stmt->step()) == io::SqliteStatement::Step::Row) hits.push_back({stmt->i64(0), stmt->real(1)});
  if (step != io::SqliteStatement::Step::Done) return sqlite_error("search", db_.error());
  return hits;
}

}  // namespace keet::kb
