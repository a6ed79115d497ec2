// keet explain TERM: what a metric, stall reason or finding means and what to do
// about it, from the built-in knowledge base.
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "kb/knowledge_base.h"
#include "render/kb_entry.h"
#include "util/json.h"
#include "util/strings.h"

namespace keet::app {
namespace {

struct ExplainArgs {
  std::vector<std::string> words;  // TERM, possibly unquoted free text
  std::string format;
  int n = 3;
};

std::string joined(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : std::string(sep)) + w;
  return out;
}

std::string hits_text(const std::vector<kb::Hit>& hits) {
  std::string out = render::kb_entry_text(*hits.front().entry);
  if (hits.size() > 1) out += "\nSee also:\n";
  for (std::size_t i = 1; i < hits.size(); ++i)
    out += fmt::format("  {}  {}  [{}]\n", hits[i].entry->id, hits[i].entry->title, kb::match_name(hits[i].how));
  return out;
}

nlohmann::json entry_json(const kb::Entry& e) {
  nlohmann::json refs = nlohmann::json::array();
  for (const auto& r : e.references) refs.push_back({{"title", r.title}, {"url", r.url}});
  return {{"id", e.id},
          {"kind", std::string(kb::kind_name(e.kind))},
          {"title", e.title},
          {"aliases", e.aliases},
          {"metrics", e.metrics},
          {"metric_prefixes", e.metric_prefixes},
          {"evidence", e.evidence},
          {"summary", e.summary},
          {"how_to_read", e.how_to_read},
          {"typical", e.typical},
          {"remedies", e.remedies},
          {"references", refs},
          {"related", e.related}};
}

nlohmann::json hits_json(const std::string& query, const std::vector<kb::Hit>& hits) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& h : hits) {
    auto j = entry_json(*h.entry);
    j["match"] = std::string(kb::match_name(h.how));
    arr.push_back(std::move(j));
  }
  return {{"query", query}, {"entries", arr}};
}

struct ExplainAnswer {
  std::string query;
  std::vector<kb::Hit> hits;
};
constexpr FormatWriter<ExplainAnswer> kExplainFormats[] = {
    {"text", [](const ExplainAnswer& f) { return hits_text(f.hits); }},
    {"json", [](const ExplainAnswer& f) { return json_text(hits_json(f.query, f.hits), 2) + "\n"; }},
};

ExitCode run_explain(Context& ctx, const ExplainArgs& a) {
  auto kb = kb::builtin();
  if (!kb) return report_error(ctx, kb.error());
  std::string query = joined(a.words, " ");
  auto hits = (*kb)->search(query, a.n);
  if (!hits) return report_error(ctx, hits.error());
  if (hits->empty())
    return report_error(ctx, {ExitCode::BadInput, fmt::format("nothing in the knowledge base matches '{}'", query)});
  ctx.out << write_format(kExplainFormats, a.format, ExplainAnswer{query, std::move(*hits)});
  return ExitCode::Ok;
}

}  // namespace

Command explain_command() {
  return {
      "explain", "explain a metric, stall reason or finding, or answer a question", [](CLI::App& sub, Action& action) {
        auto a = std::make_shared<ExplainArgs>();
        sub.add_option("term", a->words, "metric name or alias, finding id, stall reason, or a question in plain words")
            ->required();
        add_format(sub, a->format, format_names(kExplainFormats));
        sub.add_option("-n", a->n, "how many entries to show")->check(CLI::Range(1, 50))->capture_default_str();
        sub.callback([a, &action] { action = [a](Context& ctx) { return run_explain(ctx, *a); }; });
      }};
}

}  // namespace keet::app
