// Knowledge base: the built-in data (schema, coverage of the analysis
// contract, real documentation anchors) and lookup/search behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kb/fts_index.h"
#include "kb/knowledge_base.h"
#include "support/testing.h"
#include "util/pattern.h"

namespace keet::kb {
namespace {

// The finding ids and stall reasons of shared/docs/analysis-contract.md, kept
// here too so the check runs where ../shared is absent.
const std::vector<std::string> kContractFindings = {"memory.uncoalesced_global",
                                                    "memory.shared_bank_conflicts",
                                                    "memory.local_spills",
                                                    "memory.dram_bandwidth",
                                                    "memory.l1_l2_bandwidth",
                                                    "memory.poor_cache_reuse",
                                                    "memory.atomics",
                                                    "memory.remote_aperture",
                                                    "compute.pipe_saturated",
                                                    "compute.fp64",
                                                    "compute.unfused_fp",
                                                    "compute.tensor_cores_unused",
                                                    "latency.low_eligible_warps",
                                                    "occupancy.registers",
                                                    "occupancy.shared_memory",
                                                    "occupancy.block_size",
                                                    "occupancy.achieved_gap",
                                                    "launch.small_grid",
                                                    "launch.tail_effect",
                                                    "launch.block_size_granularity",
                                                    "launch.tiny_kernel",
                                                    "divergence.branch",
                                                    "divergence.predication"};
const std::vector<std::string> kContractStalls = {"long_scoreboard",
                                                  "short_scoreboard",
                                                  "barrier",
                                                  "membar",
                                                  "mio_throttle",
                                                  "lg_throttle",
                                                  "math_pipe_throttle",
                                                  "wait",
                                                  "branch_resolving",
                                                  "no_instruction",
                                                  "not_selected",
                                                  "dispatch_stall",
                                                  "tex_throttle",
                                                  "drain",
                                                  "sleeping"};
const std::vector<std::string> kOtherStalls = {"selected", "misc", "imc_miss"};

const KnowledgeBase& kb() {
  auto loaded = builtin();
  if (!loaded) ADD_FAILURE() << loaded.error().message;
  return **loaded;
}

std::vector<std::string> ids_of(const std::vector<Hit>& hits) {
  std::vector<std::string> ids;
  for (const auto& h : hits) ids.push_back(h.entry->id);
  return ids;
}

std::string top_id(std::string_view query, int n = 5) {
  auto hits = kb().search(query, n);
  EXPECT_TRUE(hits.has_value()) << query;
  return hits && !hits->empty() ? hits->front().entry->id : "";
}

bool in_top(std::string_view query, const std::string& id, int n) {
  auto hits = kb().search(query, n);
  if (!hits) return false;
  auto ids = ids_of(*hits);
  return std::ranges::find(ids, id) != ids.end();
}

TEST(KbData, BuiltinLoadsAndIsLarge) {
  auto loaded = builtin();
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  std::map<EntryKind, int> per_kind;
  for (const auto& e : (*loaded)->entries()) ++per_kind[e.kind];
  EXPECT_GE(per_kind[EntryKind::Metric], 80);
  EXPECT_GE(per_kind[EntryKind::Stall], 18);
  EXPECT_GE(per_kind[EntryKind::Finding], 38);
  EXPECT_GE(per_kind[EntryKind::Topic], 4);
}

TEST(KbData, IdsAreUnique) {
  std::set<std::string> seen;
  for (const auto& e : kb().entries()) EXPECT_TRUE(seen.insert(e.id).second) << "duplicate " << e.id;
}

TEST(KbData, EveryEntryIsComplete) {
  for (const auto& e : kb().entries()) {
    EXPECT_FALSE(e.title.empty()) << e.id;
    EXPECT_GE(e.summary.size(), 40u) << e.id;
    EXPECT_FALSE(e.how_to_read.empty()) << e.id;
    EXPECT_FALSE(e.typical.empty()) << e.id;
    EXPECT_FALSE(e.remedies.empty()) << e.id;
    ASSERT_FALSE(e.references.empty()) << e.id;
    for (const auto& r : e.references) EXPECT_TRUE(r.url.starts_with("https://docs.nvidia.com/")) << e.id;
  }
}

TEST(KbData, ContractFindingsHaveEntries) {
  for (const auto& id : kContractFindings) EXPECT_TRUE(kb().lookup("finding:" + id)) << id;
  for (const auto& r : kContractStalls) EXPECT_TRUE(kb().lookup("finding:latency.stall." + r)) << r;
}

TEST(KbData, StallReasonsHaveEntriesWithNcuMetrics) {
  auto all = kContractStalls;
  all.insert(all.end(), kOtherStalls.begin(), kOtherStalls.end());
  for (const auto& r : all) {
    auto e = kb().lookup("stall:" + r);
    ASSERT_TRUE(e) << r;
    const auto& m = (*e)->metrics;
    EXPECT_NE(std::ranges::find(m, "smsp__average_warp_latency_issue_stalled_" + r), m.end()) << r;
    // PC sampling spells one reason in the plural.
    std::string pc = r == "no_instruction" ? "no_instructions" : r;
    EXPECT_NE(std::ranges::find(m, "smsp__pcsamp_warps_issue_stalled_" + pc), m.end()) << r;
  }
}

// Reads the finding table of the real contract so a new id there fails here.
TEST(KbData, ContractDocumentIdsHaveEntries) {
  KEET_REQUIRE_SHARED();
  std::ifstream in(*testing::shared_dir() + "/docs/analysis-contract.md");
  ASSERT_TRUE(in) << "analysis-contract.md";
  auto row = Pattern::compile(R"(^\| `([a-z0-9_.]+(?:<reason>)?)` \|(.*)$)").value();
  auto reason = Pattern::compile("`([a-z_]+)`").value();
  int ids = 0;
  for (std::string line; std::getline(in, line);) {
    auto m = row.find(line);
    if (!m) continue;
    std::string id(m->groups[1]);
    if (!id.ends_with("<reason>")) {
      ++ids;
      EXPECT_TRUE(kb().lookup("finding:" + id)) << id;
      continue;
    }
    id.resize(id.size() - std::string_view("<reason>").size());
    std::string_view rest = m->groups[2];
    for (size_t from = 0; auto r = reason.find(rest, from);) {
      std::string stall(r->groups[1]);
      EXPECT_TRUE(kb().lookup("finding:" + id + stall)) << stall;
      EXPECT_TRUE(kb().lookup("stall:" + stall)) << stall;
      ++ids;
      from = r->pos + r->len;
    }
  }
  EXPECT_GE(ids, 35);
}

// Every Profiling Guide link must name an anchor that exists in the guide.
// The guide is the one in ../shared's ncu 2022.3 oracle, unpacked on first use
// (`--root`), so the test does not depend on another test having run first.
TEST(KbData, ProfilingGuideAnchorsExist) {
  auto shared = keet::testing::shared_dir();
  if (!shared) GTEST_SKIP() << "../shared is absent: the Profiling Guide comes from its ncu oracle";
  auto root = keet::testing::run_command(keet::testing::shell_quote(*shared + "/tools/ncu-oracle") + " --root");
  ASSERT_EQ(root.rc, 0) << root.err;
  std::string guide =
      root.out.substr(0, root.out.find('\n')) + "/usr/share/doc/nsight-compute/ProfilingGuide/index.html";
  std::ifstream in(guide);
  ASSERT_TRUE(in) << guide << ": the oracle holds no Profiling Guide";
  std::stringstream html;
  html << in.rdbuf();
  std::set<std::string> checked;
  for (const auto& e : kb().entries())
    for (const auto& r : e.references) {
      if (!r.url.contains("ProfilingGuide") || !checked.insert(r.url).second) continue;
      std::string anchor = r.url.substr(r.url.find('#') + 1);
      EXPECT_NE(html.str().find("id=\"" + anchor + "\""), std::string::npos) << r.url;
    }
  EXPECT_GE(checked.size(), 10u);
}

TEST(KbData, RelatedIdsResolve) {
  for (const auto& e : kb().entries())
    for (const auto& r : e.related) EXPECT_TRUE(kb().lookup(r)) << e.id << " -> " << r;
}

TEST(KbLookup, ExactIdOnly) {
  auto e = kb().lookup("stall:long_scoreboard");
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->kind, EntryKind::Stall);
  EXPECT_EQ((*e)->name(), "long_scoreboard");
  auto missing = kb().lookup("long_scoreboard");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("long_scoreboard"), std::string::npos);
  EXPECT_EQ(missing.error().message.find('\n'), std::string::npos);
}

TEST(KbSearch, ExactNamesInEverySpelling) {
  EXPECT_EQ(top_id("achieved_occupancy"), "metric:sm__warps_active");
  EXPECT_EQ(top_id("sm__warps_active.avg.pct_of_peak_sustained_active"), "metric:sm__warps_active");
  EXPECT_EQ(top_id("dram__throughput.avg.pct_of_peak_sustained_elapsed"), "metric:dram__throughput");
  EXPECT_EQ(top_id("gld_efficiency"), "metric:smsp__sass_average_data_bytes_per_sector_mem_global_op_ld");
  EXPECT_TRUE(in_top("gld_efficiency", "finding:memory.uncoalesced_global", 2));
  EXPECT_EQ(top_id("memory.uncoalesced_global"), "finding:memory.uncoalesced_global");
  EXPECT_EQ(top_id("latency.stall.barrier"), "finding:latency.stall.barrier");
  for (auto q : {"long_scoreboard", "stall_long_scoreboard", "Long Scoreboard", "stall:long_scoreboard",
                 "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                 "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"})
    EXPECT_EQ(top_id(q), "stall:long_scoreboard") << q;
}

TEST(KbSearch, ExactHitsComeBeforeTheirRelatedEntries) {
  auto hits = kb().search("long_scoreboard", 4);
  ASSERT_TRUE(hits);
  ASSERT_GE(hits->size(), 2u);
  EXPECT_EQ(hits->front().how, MatchKind::Id);
  EXPECT_TRUE(in_top("long_scoreboard", "metric:l1tex__t_sector_hit_rate", 4));
  for (std::size_t i = 1; i < hits->size(); ++i) EXPECT_EQ((*hits)[i].how, MatchKind::Related);
  EXPECT_EQ(kb().search("long_scoreboard", 1)->size(), 1u);
}

// A bare topic finds the general entry, the narrow ones follow as related.
TEST(KbSearch, ABareTopicFindsItsGeneralEntryFirst) {
  for (std::string topic : {"occupancy", "stalls", "roofline", "waves"}) {
    auto hits = kb().search(topic, 4);
    ASSERT_TRUE(hits) << topic;
    ASSERT_GE(hits->size(), 2u) << topic;
    EXPECT_EQ(hits->front().entry->id, "topic:" + topic);
    EXPECT_EQ(hits->front().how, MatchKind::Id);
    EXPECT_NE((*hits)[1].how, MatchKind::Text) << topic;  // related entries (or, for waves, the metric so named)
  }
  EXPECT_TRUE(in_top("occupancy", "finding:occupancy.registers", 4));
}

TEST(KbSearch, MetricFamiliesMatchByPrefix) {
  auto hits = kb().search("sm__inst_executed_pipe_ipa.avg.pct_of_peak_sustained_active", 1);
  ASSERT_TRUE(hits);
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ(hits->front().entry->id, "metric:sm__inst_executed_pipe");
  EXPECT_EQ(hits->front().how, MatchKind::Metric);
  // A documented member of the family wins over the family entry.
  EXPECT_EQ(top_id("sm__inst_executed_pipe_fma.sum"), "metric:sm__inst_executed_pipe_fma");
}

TEST(KbSearch, FreeTextRanksTheObviousAnswerFirst) {
  EXPECT_EQ(top_id("shared memory bank conflict padding"), "finding:memory.shared_bank_conflicts");
  EXPECT_EQ(top_id("how do I use tensor cores for matrix multiply"), "finding:compute.tensor_cores_unused");
  EXPECT_EQ(top_id("register spill to local memory"), "finding:memory.local_spills");
  EXPECT_TRUE(in_top("why are my global loads slow", "finding:memory.uncoalesced_global", 3));
  EXPECT_TRUE(in_top("warps waiting at __syncthreads", "stall:barrier", 3));
  auto hits = kb().search("bandwidth of device memory dram", 3);
  ASSERT_TRUE(hits);
  for (const auto& h : *hits) EXPECT_EQ(h.how, MatchKind::Text);
  EXPECT_TRUE(in_top("bandwidth of device memory dram", "metric:dram__throughput", 3));
}

TEST(KbSearch, HostileQueriesAreSafe) {
  for (auto q : {"\"foo AND (", ") OR NEAR(a b", "title:x*", "'; DROP TABLE kb; --", "", "   ", "^^^ ***", "NOT",
                 "\"\"\"", "kb MATCH 'x'"}) {
    auto hits = kb().search(q, 5);
    ASSERT_TRUE(hits.has_value()) << q << ": " << hits.error().message;
  }
  std::string long_query(10000, 'x');
  for (int i = 0; i < 200; ++i) long_query += " word" + std::to_string(i);
  EXPECT_TRUE(kb().search(long_query, 5).has_value());
  EXPECT_TRUE(kb().search("nosuchwordanywhere", 5)->empty());
  EXPECT_TRUE(kb().search("dram", 0)->empty());
}

TEST(KbFtsQuery, QuotesWordsAndDropsSyntax) {
  std::set<std::string, std::less<>> stop = {"and", "the"};
  EXPECT_EQ(fts_query("\"foo AND (", stop), "\"foo\"");
  EXPECT_EQ(fts_query("Global loads, the L2!", stop), "\"global\" OR \"loads\" OR \"l2\"");
  EXPECT_EQ(fts_query("long_scoreboard long", stop), "\"long\" OR \"scoreboard\"");
  EXPECT_EQ(fts_query("() * : ^", stop), "");
}

// Loading hand-made files exercises the validator without the built-in data.
struct FileSet {
  std::vector<std::string> paths, texts;
  std::vector<EmbeddedFile> files() const {
    std::vector<EmbeddedFile> out;
    for (std::size_t i = 0; i < paths.size(); ++i) out.push_back({paths[i], texts[i]});
    return out;
  }
};

const char* kRefs = R"({"references": {"pg.x": {"title": "Guide", "url": "https://docs.nvidia.com/x#y"}}})";

std::string entry_json(const std::string& extra = "", const std::string& id = "metric:foo__bar") {
  return R"({"id": ")" + id + R"(", "kind": "metric", "title": "Foo bar", "metrics": ["foo__bar.sum"],
    "summary": "Counts the foo of every bar in the kernel.", "how_to_read": "Higher is worse.",
    "typical": "Zero.", "remedies": ["Stop fooing."], "references": ["pg.x"])" +
         extra + "}";
}

Result<KnowledgeBase> load_entries(const std::string& entries) {
  FileSet fs{{"kb/references.json", "kb/entries/t.json"}, {kRefs, R"({"entries": [)" + entries + "]}"}};
  return KnowledgeBase::load(fs.files());
}

TEST(KbSchema, AcceptsAValidEntry) {
  auto loaded = load_entries(entry_json());
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->entries().size(), 1u);
  EXPECT_EQ(loaded->entries()[0].references[0].url, "https://docs.nvidia.com/x#y");
  EXPECT_EQ(loaded->search("foo__bar.sum", 3)->front().entry->id, "metric:foo__bar");
  EXPECT_EQ(loaded->search("fooing", 3)->front().how, MatchKind::Text);
}

TEST(KbSchema, RejectsBadEntriesWithOneLineMessages) {
  struct Case {
    std::string entries, expect;
  };
  std::vector<Case> cases = {
      {entry_json(", \"colour\": \"red\""), "unknown field 'colour'"},
      {R"({"id": "metric:x", "kind": "metric"})", "missing 'title'"},
      {entry_json(", \"related\": [\"metric:nope\"]"), "related id 'metric:nope' is unknown"},
      {entry_json("", "stall:foo"), "must start with 'metric:'"},
      {entry_json("", "metric:Foo Bar"), "outside [a-z0-9_.-]"},
      {entry_json() + "," + entry_json(), "duplicate id 'metric:foo__bar'"},
      {entry_json(", \"aliases\": \"x\""), "'aliases' must be an array"},
      {entry_json(", \"aliases\": [\"\"]"), "non-empty string"},
      {"42", "must be a JSON object"},
  };
  for (const auto& c : cases) {
    auto loaded = load_entries(c.entries);
    ASSERT_FALSE(loaded) << c.expect;
    EXPECT_NE(loaded.error().message.find(c.expect), std::string::npos) << loaded.error().message;
    EXPECT_NE(loaded.error().message.find("kb/"), std::string::npos) << loaded.error().message;
    EXPECT_EQ(loaded.error().message.find('\n'), std::string::npos);
  }
}

TEST(KbSchema, RejectsBadFiles) {
  FileSet no_refs{{"kb/entries/t.json"}, {R"({"entries": []})"}};
  EXPECT_FALSE(KnowledgeBase::load(no_refs.files()));
  FileSet bad_json{{"kb/references.json", "kb/entries/t.json"}, {kRefs, "{\"entries\": ["}};
  auto r = KnowledgeBase::load(bad_json.files());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("kb/entries/t.json: not valid JSON"), std::string::npos);
  auto unknown_ref = load_entries(entry_json(", \"references\": [\"pg.nope\"]"));
  EXPECT_FALSE(unknown_ref);
  FileSet http{{"kb/references.json"}, {R"({"references": {"a": {"title": "t", "url": "http://x"}}})"}};
  EXPECT_FALSE(KnowledgeBase::load(http.files()));
}

}  // namespace
}  // namespace keet::kb
