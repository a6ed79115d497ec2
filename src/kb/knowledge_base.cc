#include "kb/knowledge_base.h"
#include "util/error.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace keet::kb {
namespace {

using json = nlohmann::json;

constexpr std::string_view kReferencesFile = "kb/references.json";
constexpr std::string_view kStopwordsFile = "kb/stopwords.json";
constexpr std::string_view kEntriesDir = "kb/entries/";
// Ways people prefix a stall reason: nvprof-style "stall_<r>", ncu's "stalled_<r>".
constexpr std::array<std::string_view, 3> kStallPrefixes = {"stall_", "stalled_", "warp_stall_"};

const std::array<std::pair<MatchKind, std::string_view>, 5> kMatchNames = {{
    {MatchKind::Id, "id"},
    {MatchKind::Alias, "alias"},
    {MatchKind::Metric, "metric"},
    {MatchKind::Related, "related"},
    {MatchKind::Text, "text"},
}};

// Free text is usually a question ("why are my loads slow"); a finding or a
// stall reason answers it better than the raw metric that measures it.
const std::array<std::pair<EntryKind, double>, 4> kSearchBoost = {{
    {EntryKind::Topic, 1.75},
    {EntryKind::Finding, 1.5},
    {EntryKind::Stall, 1.25},
    {EntryKind::Metric, 1.0},
}};

double boost_of(EntryKind k) {
  auto it = std::ranges::find(kSearchBoost, k, &std::pair<EntryKind, double>::first);
  return it == kSearchBoost.end() ? 1.0 : it->second;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

// "dram__throughput.avg.pct_of_peak_sustained_elapsed" -> "dram__throughput".
std::string metric_base(std::string_view metric) { return std::string(metric.substr(0, metric.find('.'))); }

// The spellings of `q` worth looking up in the key table, most literal first.
std::vector<std::string> candidate_keys(std::string_view query) {
  std::string q = to_lower(trim(query));
  std::vector<std::string> out{q};
  if (q.find("__") != std::string::npos && q.find('.') != std::string::npos) out.push_back(metric_base(q));
  for (auto prefix : kStallPrefixes)
    if (q.starts_with(prefix)) out.push_back(q.substr(prefix.size()));
  std::string underscored = q;
  std::ranges::replace(underscored, ' ', '_');
  if (underscored != q) out.push_back(underscored);
  return out;
}

FtsDocument document_of(const Entry& e) {
  std::string name(e.name());
  std::vector<std::string> metric_names = e.metrics;
  metric_names.insert(metric_names.end(), e.evidence.begin(), e.evidence.end());
  metric_names.insert(metric_names.end(), e.metric_prefixes.begin(), e.metric_prefixes.end());
  return {e.title,
          name + " " + join(e.aliases, " "),
          join(metric_names, " "),
          e.summary,
          e.how_to_read + "\n" + e.typical + "\n" + join(e.remedies, "\n"),
          boost_of(e.kind)};
}

Result<std::set<std::string, std::less<>>> parse_stopwords(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  std::set<std::string, std::less<>> words;
  if (j.is_discarded() || !j.is_object() || !j.contains("stopwords") || !j.at("stopwords").is_array())
    return fail(ExitCode::BadInput, std::string(kStopwordsFile) + ": expected {\"stopwords\": [words]}");
  for (const auto& w : j.at("stopwords"))
    if (w.is_string()) words.insert(to_lower(w.get<std::string>()));
  return words;
}

const EmbeddedFile* find_file(const std::vector<EmbeddedFile>& files, std::string_view path) {
  auto it = std::ranges::find(files, path, &EmbeddedFile::path);
  return it == files.end() ? nullptr : &*it;
}

}  // namespace

std::string_view match_name(MatchKind m) {
  auto it = std::ranges::find(kMatchNames, m, &std::pair<MatchKind, std::string_view>::first);
  return it == kMatchNames.end() ? "?" : it->second;
}

Result<KnowledgeBase> KnowledgeBase::load(const std::vector<EmbeddedFile>& files) {
  const auto* refs_file = find_file(files, kReferencesFile);
  if (!refs_file) return fail(ExitCode::BadInput, fmt::format("{}: missing", kReferencesFile));
  KEET_TRY(refs, parse_references(refs_file->content, std::string(kReferencesFile)));
  KnowledgeBase kb;
  if (const auto* stop = find_file(files, kStopwordsFile)) {
    KEET_TRY(words, parse_stopwords(stop->content));
    kb.stopwords_ = std::move(*words);
  }
  for (const auto& f : files)
    if (f.path.starts_with(kEntriesDir)) KEET_TRY_VOID(kb.add_file(f.path, f.content, *refs));
  KEET_TRY_VOID(kb.check_related());
  KEET_TRY_VOID(kb.build_index());
  return kb;
}

Result<KnowledgeBase> KnowledgeBase::load_builtin() { return load(embedded_files()); }

Result<void> KnowledgeBase::add_file(std::string_view path, std::string_view text, const ReferenceTable& refs) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail(ExitCode::BadInput, fmt::format("{}: not valid JSON", path));
  if (!j.is_object() || !j.contains("entries") || !j.at("entries").is_array())
    return fail(ExitCode::BadInput, fmt::format("{}: expected {{\"entries\": [...]}}", path));
  std::size_t i = 0;
  for (const auto& item : j.at("entries")) {
    std::string where = fmt::format("{}: entry {}", path, i++);
    KEET_TRY(e, parse_entry(item, refs, where));
    if (auto r = add_entry(std::move(*e), where); !r) return r;
  }
  return {};
}

Result<void> KnowledgeBase::add_entry(Entry e, std::string where) {
  if (std::ranges::any_of(entries_, [&](const Entry& x) { return x.id == e.id; }))
    return fail(ExitCode::BadInput, fmt::format("{}: duplicate id '{}'", where, e.id));
  std::size_t at = entries_.size();
  add_key(e.id, at, MatchKind::Id);
  add_key(std::string(e.name()), at, MatchKind::Id);
  for (const auto& a : e.aliases) add_key(a, at, MatchKind::Alias);
  for (const auto& m : e.metrics) {
    add_key(m, at, MatchKind::Metric);
    add_key(metric_base(m), at, MatchKind::Metric);
  }
  for (const auto& p : e.metric_prefixes) prefixes_.emplace_back(to_lower(p), at);
  entries_.push_back(std::move(e));
  origins_.push_back(std::move(where));
  return {};
}

void KnowledgeBase::add_key(const std::string& key, std::size_t entry, MatchKind how) {
  auto& list = keys_[to_lower(key)];
  if (std::ranges::none_of(list, [&](const Key& k) { return k.entry == entry; })) list.push_back({entry, how});
}

Result<void> KnowledgeBase::check_related() const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    for (const auto& r : entries_[i].related)
      if (!lookup(r))
        return fail(ExitCode::BadInput,
                    fmt::format("{} ({}): related id '{}' is unknown", origins_[i], entries_[i].id, r));
  return {};
}

Result<void> KnowledgeBase::build_index() {
  KEET_TRY(index, FtsIndex::create());
  index_ = std::move(*index);
  std::vector<FtsDocument> docs;
  for (const auto& e : entries_) docs.push_back(document_of(e));
  return index_->add_all(docs);
}

Result<const Entry*> KnowledgeBase::lookup(std::string_view id) const {
  auto it = std::ranges::find(entries_, id, &Entry::id);
  if (it == entries_.end()) return fail(ExitCode::BadInput, fmt::format("no knowledge-base entry '{}'", id));
  return &*it;
}

std::vector<Hit> KnowledgeBase::exact_hits(std::string_view query) const {
  std::vector<Hit> hits;
  for (const auto& key : candidate_keys(query)) {
    auto it = keys_.find(key);
    if (it == keys_.end()) continue;
    for (const auto& k : it->second) hits.push_back({&entries_[k.entry], k.how, 0});
    std::ranges::stable_sort(hits, {}, &Hit::how);
    return hits;
  }
  if (auto family = family_hit(query)) hits.push_back(*family);
  return hits;
}

// A metric of a documented family ("sm__inst_executed_pipe_uniform") gets the
// entry with the longest matching prefix.
std::optional<Hit> KnowledgeBase::family_hit(std::string_view query) const {
  std::string q = metric_base(to_lower(trim(query)));
  const std::pair<std::string, std::size_t>* best = nullptr;
  for (const auto& p : prefixes_)
    if (q.starts_with(p.first) && (!best || p.first.size() > best->first.size())) best = &p;
  if (!best) return std::nullopt;
  return Hit{&entries_[best->second], MatchKind::Metric, 0};
}

std::vector<Hit> KnowledgeBase::with_related(std::vector<Hit> hits, int n) const {
  auto present = [&](const Entry* e) { return std::ranges::any_of(hits, [&](const Hit& h) { return h.entry == e; }); };
  for (std::size_t i = 0; i < hits.size() && hits.size() < static_cast<std::size_t>(n); ++i)
    for (const auto& id : hits[i].entry->related)
      if (auto e = lookup(id); e && !present(*e) && hits.size() < static_cast<std::size_t>(n))
        hits.push_back({*e, MatchKind::Related, 0});
  if (hits.size() > static_cast<std::size_t>(n)) hits.resize(n);
  return hits;
}

Result<std::vector<Hit>> KnowledgeBase::search(std::string_view query, int n) const {
  if (n <= 0) return std::vector<Hit>{};
  if (auto exact = exact_hits(query); !exact.empty()) return with_related(std::move(exact), n);
  KEET_TRY(found, index_->search(fts_query(query, stopwords_), n));
  std::vector<Hit> hits;
  for (const auto& f : *found) hits.push_back({&entries_[static_cast<std::size_t>(f.doc)], MatchKind::Text, f.score});
  return hits;
}

Result<const KnowledgeBase*> builtin() {
  static const Result<KnowledgeBase> kb = KnowledgeBase::load_builtin();
  if (!kb) return std::unexpected(kb.error());
  return &*kb;
}

}  // namespace keet::kb
