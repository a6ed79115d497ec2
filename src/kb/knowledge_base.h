// The knowledge base: explanations of findings, warp stall reasons and ncu
// metrics, loaded from the data/kb/ files compiled into the binary and
// searchable by exact name or by free text (SQLite FTS5, bm25 ranking).
//
// Data layout (see docs/knowledge-base.md):
//   kb/references.json    documentation links entries cite by key
//   kb/stopwords.json     words free-text search ignores
//   kb/entries/*.json     {"entries": [ ...entry objects, schema in entry.cc... ]}
#pragma once
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kb/entry.h"
#include "kb/fts_index.h"
#include "util/embedded_data.h"
#include "util/error.h"

namespace keet::kb {

// How a search result was found, best first.
enum class MatchKind { Id, Alias, Metric, Related, Text };
std::string_view match_name(MatchKind m);

struct Hit {
  const Entry* entry = nullptr;
  MatchKind how = MatchKind::Text;
  double score = 0;  // bm25 for text hits (lower is better), 0 otherwise
};

class KnowledgeBase {
 public:
  // Loads every kb/ file among `files`; other paths are ignored.
  static Result<KnowledgeBase> load(const std::vector<EmbeddedFile>& files);
  static Result<KnowledgeBase> load_builtin();

  const std::vector<Entry>& entries() const { return entries_; }
  // The entry with exactly this id ("stall:long_scoreboard").
  Result<const Entry*> lookup(std::string_view id) const;
  // Exact names first: an id with or without its kind, an alias, an ncu metric
  // name (with or without its rollup suffix), a stall reason spelled
  // "stall_<r>"; those hits are followed by their related entries. Otherwise
  // the text is searched. An empty result is not an error.
  Result<std::vector<Hit>> search(std::string_view query, int n) const;

 private:
  struct Key {
    std::size_t entry;
    MatchKind how;
  };
  Result<void> add_file(std::string_view path, std::string_view text, const ReferenceTable& refs);
  Result<void> add_entry(Entry e, std::string where);
  Result<void> check_related() const;
  Result<void> build_index();
  void add_key(const std::string& key, std::size_t entry, MatchKind how);
  std::vector<Hit> exact_hits(std::string_view query) const;
  std::optional<Hit> family_hit(std::string_view query) const;
  std::vector<Hit> with_related(std::vector<Hit> hits, int n) const;

  std::vector<Entry> entries_;
  std::vector<std::string> origins_;                           // "<file>: entry <n>", for messages
  std::unordered_map<std::string, std::vector<Key>> keys_;     // lower-case name -> entries
  std::vector<std::pair<std::string, std::size_t>> prefixes_;  // metric families
  std::set<std::string, std::less<>> stopwords_;
  std::optional<FtsIndex> index_;  // built by load()
};

// The built-in knowledge base, loaded on first use and kept for the process.
Result<const KnowledgeBase*> builtin();

}  // namespace keet::kb
