#include "service/mcp_tools.h"
#include "util/error.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "io/file.h"
#include "readers/nsys_export.h"
#include "readers/reader.h"
#include "render/diff_format.h"
#include "service/mcp_page.h"
#include "service/projection.h"
#include "service/schema_check.h"
#include "util/embedded_data.h"
#include "util/json.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::service {
namespace {

using nlohmann::json;

// ------------------------------------------------------------ the table

// j[key] when j is an object holding key, else null: a command's answer that
// lacks a member (it never should) must not reach nlohmann's assertion.
const json& at(const json& j, std::string_view key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The $defs a schema names, and those they name in turn.
void collect_refs(const json& schema, const json& defs, std::set<std::string>& out) {
  if (schema.is_object()) {
    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      std::string name = ref->get<std::string>().substr(std::string_view("#/$defs/").size());
      if (out.insert(name).second && defs.contains(name)) collect_refs(defs[name], defs, out);
    }
    for (const auto& [key, sub] : schema.items()) collect_refs(sub, defs, out);
  } else if (schema.is_array()) {
    for (const auto& sub : schema) collect_refs(sub, defs, out);
  }
}

// A schema that refers to the shared $defs gets a copy of those it uses, so
// each declaration stands alone (clients compile every outputSchema apart).
json self_contained(json schema, const json& defs) {
  std::set<std::string> used;
  collect_refs(schema, defs, used);
  if (used.empty()) return schema;
  json own = json::object();
  for (const auto& name : used)
    if (defs.contains(name)) own[name] = defs[name];
  schema["$defs"] = std::move(own);
  return schema;
}

// The embedded table is part of the build; a broken one is caught by the
// unit tests (McpTools.TableIsComplete), and here leaves no tool declared.
json load_table() {
  const json& doc = agent_tool_table();
  if (!doc.contains("tools")) return json::array();
  json tools = json::array();
  for (auto tool : at(doc, "tools")) {
    tool["inputSchema"] = self_contained(at(tool, "inputSchema"), at(doc, "$defs"));
    tool["outputSchema"] = self_contained(at(tool, "outputSchema"), at(doc, "$defs"));
    if (unchecked_keyword(at(tool, "inputSchema")) || unchecked_keyword(at(tool, "outputSchema"))) continue;
    tools.push_back(std::move(tool));
  }
  return tools;
}

// ------------------------------------------------------- small helpers

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
json strings(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : json::array();
}
int64_t integer(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// How keet diff made a pair: its contract's name, and the note keet diff
// prints for it (render::pairing_note). The two values of the shapes that
// are sentences, not members.
compare::PairedBy paired_by(const json& pair) {
  return compare::paired_by_from_name(str(pair, "paired_by")).value_or(compare::PairedBy::Name);
}
json pairing_note(const json& pair) {
  const json &before = at(pair, "before"), &after = at(pair, "after");
  return render::pairing_note(paired_by(pair), str(before, "name"), str(after, "name"),
                              static_cast<int>(integer(before, "index")), static_cast<int>(integer(after, "index")));
}

}  // namespace

const Projections& answer_shapes() {
  static const Projections table(
      at(agent_tool_table(), "shapes"),
      {{"paired_by", [](const json& p) { return json(compare::paired_by_name(paired_by(p))); }},
       {"pairing_note", pairing_note}});
  return table;
}

namespace {

// --------------------------------------------------------- one call

struct Call {
  const McpOptions& options;
  const ReportRoots& roots;
  const json& declaration;
  const json& args;

  // The argument, or the default the declaration states.
  json arg(const char* key) const {
    if (args.contains(key)) return args[key];
    const auto& props = at(at(declaration, "inputSchema"), "properties");
    if (props.contains(key) && props[key].contains("default")) return at(props[key], "default");
    return nullptr;
  }
  std::string text(const char* key) const {
    auto v = arg(key);
    return v.is_string() ? v.get<std::string>() : std::string();
  }
  int64_t number(const char* key) const {
    auto v = arg(key);
    return v.is_number() ? v.get<int64_t>() : 0;
  }
  // A report path as the answer shows it: relative to its root; a chat's own
  // report as the chat gave it (its prompt scrubs that path).
  std::string shown(const std::string& path) const {
    bool own = std::ranges::find(options.own_reports, path) != options.own_reports.end();
    return own ? path : roots.shown(path);
  }
};

// A tool failure to hand back to the client as an isError result.
struct Failure {
  std::string message;
};
template <typename T>
using Outcome = std::expected<T, Failure>;

Outcome<std::string> report_path(const Call& c, const char* key) {
  if (std::ranges::find(c.options.own_reports, c.text(key)) != c.options.own_reports.end()) return c.text(key);
  auto path = c.roots.resolve(c.text(key), c.options.max_report_bytes);
  if (!path) return std::unexpected(Failure{path.error().message});
  return *path;
}

// keet's own last line on stderr ("keet: ..."), without the prefix; a
// command that ends on warnings only (a truncated report) gives its last one.
std::string error_line(const CommandOutput& r) {
  std::string last, last_warning;
  for (auto line : split(r.err, '\n')) {
    line = trim(line);
    if (line.starts_with("keet: warning: "))
      last_warning = line.substr(15);
    else if (!line.empty())
      last = line;
  }
  if (last.starts_with("keet: ")) last = last.substr(6);
  if (last.empty()) last = last_warning;
  return last.empty() ? fmt::format("keet exited with status {}", r.exit_code) : last;
}

// Runs the command and parses its JSON answer. `also_ok` is an exit status
// that still carries an answer (gate's 1: a regression was found).
Outcome<json> run_json(const Call& c, std::vector<std::string> args, int also_ok = 0) {
  if (!c.options.run) return std::unexpected(Failure{"this server has no command runner"});
  // Every command that reads a report names it first.
  if (c.options.own_reports_partial && args.size() > 1 &&
      std::ranges::find(c.options.own_reports, args[1]) != c.options.own_reports.end())
    args.push_back("--allow-partial");
  auto r = c.options.run(args);
  // keet's line names the report by the path it was given: a client sees it
  // relative to its root (a chat's own report keeps its path, which its
  // prompt scrubs).
  if (r.exit_code != 0 && r.exit_code != also_ok)
    return std::unexpected(Failure{c.options.own_reports.empty() ? c.roots.shown_in(error_line(r)) : error_line(r)});
  json doc = json::parse(r.out, nullptr, false);
  if (!doc.is_object()) return std::unexpected(Failure{fmt::format("keet {} did not answer with JSON", args.front())});
  if (r.exit_code != 0) doc["exit_code"] = r.exit_code;
  return doc;
}

void add_kernel_selector(const Call& c, std::vector<std::string>& args) {
  if (auto k = c.text("kernel"); !k.empty()) args.push_back("--kernel=" + k);
}

Outcome<json> first_kernel(const json& doc, const std::string& path) {
  const auto& ks = at(doc, "kernels");
  if (!ks.is_array() || ks.empty()) return std::unexpected(Failure{path + ": the report holds no kernel"});
  return ks[0];
}

// Each tool's page: offset and limit as the client gave them (or their defaults).
struct PageArgs {
  int64_t offset, limit;
};
PageArgs page_args(const Call& c, const char* limit_key) { return {c.number("offset"), c.number(limit_key)}; }

struct Answer {
  json structured;
  std::string text;
};

// ----------------------------------------------------------- list_kernels

// A row's time: the folded total, or its one launch's duration; -1 untimed.
double row_time(const json& row) {
  const json& d = row.contains("total_duration") ? at(row, "total_duration") : at(row, "duration");
  return d.is_object() ? at(d, "value").get<double>() : -1.0;
}

Outcome<Answer> list_kernels(const Call& c) {
  KEET_TRY(path, report_path(c, "report"));
  bool fold = c.text("launches") != "all", mangled = c.arg("mangled") == true;
  std::vector<std::string> args = {"list", *path, "--format=json"};
  add_kernel_selector(c, args);
  // Every launch: the rows themselves, or (folded) where the mangled names are.
  json launches = json::object();
  if (!fold || mangled) {
    KEET_TRY(doc, run_json(c, args));
    launches = std::move(*doc);
  }
  // One row per kernel, grid, block and device (keet list --print-summary
  // per-kernel folds them), or one per launch.
  ProjectionScope scope;
  json rows;
  if (fold) {
    args.push_back("--print-summary=per-kernel");
    KEET_TRY(groups, run_json(c, args));
    rows = answer_shapes().apply_each("kernel_group", at(*groups, "kernels"), scope);
  } else {
    rows = answer_shapes().apply_each("kernel_launch", at(launches, "kernels"), scope);
  }
  // mangled: true adds the names a row's short name stands for.
  if (mangled) {
    std::map<int64_t, const json*> by_index;
    for (const auto& k : at(launches, "kernels")) by_index[integer(k, "index")] = &k;
    for (auto& row : rows)
      if (auto it = by_index.find(at(row, "index").get<int64_t>()); it != by_index.end())
        row.update(answer_shapes().apply("launch_names", *it->second, scope));
  }
  if (c.text("sort") != "index")
    std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return row_time(a) > row_time(b); });
  int64_t launch_count = 0;
  for (const auto& row : rows) launch_count += at(row, "launches").get<int64_t>();
  auto page = page_args(c, "limit");
  json out = {
      {"report", c.shown(*path)}, {"launches", launch_count}, {"kernels", slice(rows, page.offset, page.limit)}};
  set_page(out, at(out, "kernels").size(), page.offset, static_cast<int64_t>(rows.size()));
  std::string text = fmt::format("{} kernel(s){} from {} launch(es) in {}", rows.size(),
                                 fold ? " (launches folded)" : "", launch_count, c.shown(*path));
  auto longest = std::ranges::max_element(rows, {}, row_time);
  if (longest != rows.end() && row_time(*longest) >= 0)
    text += fmt::format("; most time: #{} {} x{} ({})", at(*longest, "index").get<int64_t>(),
                        at(*longest, "name").get<std::string>(), at(*longest, "launches").get<int64_t>(),
                        render::format_duration(row_time(*longest)));
  return Answer{std::move(out), text};
}

// --------------------------------------------------------- analyze_kernel

std::string analysis_text(const json& k) {
  std::string text = fmt::format("#{} {}: {}-bound", at(k, "index").get<int64_t>(), at(k, "name").get<std::string>(),
                                 at(at(k, "bottleneck"), "class").get<std::string>());
  if (const auto& b = at(at(k, "limiter"), "binding"); b.is_object())
    text += fmt::format(", binding unit {} at {:.1f}% ({})", at(b, "label").get<std::string>(),
                        at(at(b, "utilization"), "value").get<double>(),
                        at(at(b, "utilization"), "metric").get<std::string>());
  if (!at(k, "findings").empty()) text += "; first finding: " + at(at(k, "findings")[0], "title").get<std::string>();
  if (at(at(k, "data_quality"), "outcome") != "ok")
    text += fmt::format("; data quality {}", at(at(k, "data_quality"), "outcome").get<std::string>());
  return text;
}

// Every finding is asked for (--top=0) so that the page knows their total;
// top is the page's length (0: all that fit the budget).
Outcome<Answer> analyze_kernel(const Call& c) {
  KEET_TRY(path, report_path(c, "report"));
  std::vector<std::string> args = {"analyze", *path, "--format=json", "--launch-count=1", "--top=0"};
  add_kernel_selector(c, args);
  KEET_TRY(doc, run_json(c, args));
  KEET_TRY(k, first_kernel(*doc, c.shown(*path)));
  ProjectionScope scope{.vars = {{"mangled", c.arg("mangled") == true}}};
  json kernel = answer_shapes().apply("analysed_kernel", *k, scope);
  std::string text = analysis_text(kernel);
  json all = std::move(kernel["findings"]);
  int64_t top = c.number("top");
  auto page = PageArgs{c.number("offset"), top == 0 ? static_cast<int64_t>(all.size()) : top};
  kernel["findings"] = slice(all, page.offset, page.limit);
  json out = answer_shapes().apply("analysis_answer", *doc, scope);
  out.update({{"report", c.shown(*path)}, {"kernel", std::move(kernel)}});
  set_page(out, at(at(out, "kernel"), "findings").size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), text};
}

// ------------------------------------------------------------ get_metrics

bool is_zero(const json& v) { return v.is_number() && v.get<double>() == 0; }

Outcome<Answer> get_metrics(const Call& c) {
  KEET_TRY(path, report_path(c, "report"));
  std::vector<std::string> args = {"metrics", *path, "--format=json", "--launch-count=1"};
  add_kernel_selector(c, args);
  if (auto p = c.text("pattern"); !p.empty()) {
    if (auto re = Pattern::compile(p, {.case_insensitive = true}); !re)
      return std::unexpected(Failure{fmt::format("pattern {}: invalid regular expression: {}", p, re.error())});
    args.push_back("--grep=" + p);
  }
  KEET_TRY(doc, run_json(c, args));
  KEET_TRY(k, first_kernel(*doc, c.shown(*path)));
  std::set<std::string> names;
  for (const auto& n : c.arg("names").is_array() ? c.arg("names") : json::array()) names.insert(n.get<std::string>());
  // A metric asked for by name is an answer even when 0; in a listing, zeros
  // crowd out what was measured (and are counted, not hidden).
  bool keep_zeros = !names.empty() || c.arg("zeros") == true;
  json matched = json::array();
  int64_t zeros = 0;
  ProjectionScope scope;
  for (const auto& [name, m] : at((*k), "metrics").items()) {
    if (!names.empty() && !names.contains(name)) continue;
    if (!keep_zeros && is_zero(at(m, "value"))) {
      ++zeros;
      continue;
    }
    json named = m.is_object() ? m : json::object();
    named["metric"] = name;
    matched.push_back(answer_shapes().apply("metric_value", named, scope));
  }
  json missing = json::array();
  for (const auto& n : names)
    if (!at((*k), "metrics").contains(n)) missing.push_back(n);
  json kernel = answer_shapes().apply("kernel_ref", *k, scope);
  auto page = page_args(c, "limit");
  json out = {{"report", c.shown(*path)}, {"kernel", kernel}, {"metrics", slice(matched, page.offset, page.limit)}};
  set_page(out, at(out, "metrics").size(), page.offset, static_cast<int64_t>(matched.size()));
  out["zeros_omitted"] = zeros;
  out["missing"] = missing;
  std::string text =
      fmt::format("{} metric(s) of #{} {}{}{}", matched.size(), at(kernel, "index").get<int64_t>(),
                  at(kernel, "name").get<std::string>(),
                  zeros ? fmt::format(" ({} more are 0: zeros: true shows them)", zeros) : "",
                  missing.empty() ? "" : fmt::format("; {} asked for but not in the report", missing.size()));
  return Answer{std::move(out), text};
}

// -------------------------------------------------------- source_hotspots

// keet source gives the costliest rows first; a page from offset asks it for
// offset + top rows and keeps the last top.
Outcome<Answer> source_hotspots(const Call& c) {
  KEET_TRY(path, report_path(c, "report"));
  auto page = page_args(c, "top");
  std::vector<std::string> args = {"source", *path, "--format=json", "--launch-count=1",
                                   fmt::format("--top={}", page.offset + page.limit)};
  add_kernel_selector(c, args);
  if (auto by = c.text("by"); !by.empty()) args.push_back("--by=" + by);
  KEET_TRY(doc, run_json(c, args));
  KEET_TRY(k, first_kernel(*doc, c.shown(*path)));
  std::string sorted_by = str(*k, "sorted_by");
  ProjectionScope scope{.vars = {{"sorted_by", sorted_by}}};
  json lines = answer_shapes().apply_each("hotspot_line", slice(at((*k), "lines"), page.offset, page.limit), scope);
  json totals = answer_shapes().apply("hotspot_totals", *k, scope);
  json kernel = answer_shapes().apply("kernel_ref", *k, scope);
  std::string text = fmt::format("#{} {}", at(kernel, "index").get<int64_t>(), at(kernel, "name").get<std::string>());
  if (str(*k, "level") != "none")
    text += fmt::format(": {} {} row(s) by {}", integer(*k, "row_count"), str(*k, "level"),
                        sorted_by.empty() ? "-" : sorted_by);
  if (!lines.empty() && page.offset == 0) {
    const json& top = lines[0];
    std::string where = integer(top, "line") == 0  // a SASS instruction
                            ? fmt::format("SASS +{:#x}{}", integer(top, "offset"),
                                          str(top, "sass").empty() ? "" : " " + str(top, "sass"))
                            : fmt::format("{}:{}", at(top, "file").get<std::string>(), at(top, "line").get<int64_t>());
    text += fmt::format("; hottest {} ({:.1f}%)", where, 100 * at(at(top, "share"), "value").get<double>());
  }
  for (const auto& n : strings(*k, "notes")) text += "; " + n.get<std::string>();
  json out = {{"report", c.shown(*path)},
              {"kernel", kernel},
              {"level", str(*k, "level")},
              {"sorted_by", sorted_by},
              {"notes", strings(*k, "notes")},
              {"totals", totals},
              {"lines", lines}};
  set_page(out, lines.size(), page.offset, integer(*k, "row_count"));
  out["zeros_omitted"] = scope.zeros;
  return Answer{std::move(out), text};
}

// ----------------------------------------------------------- explain_term

// One entry more than the page is asked for: whether there are more is then known.
Outcome<Answer> explain_term(const Call& c) {
  auto page = page_args(c, "count");
  // "--" first: a term that starts with '-' is a term, not a flag.
  KEET_TRY(doc, run_json(c, {"explain", "--format=json", "-n", std::to_string(page.offset + page.limit + 1), "--",
                             c.text("term")}));
  ProjectionScope scope;
  json found = answer_shapes().apply_each("knowledge_entry", at(*doc, "entries"), scope);
  json entries = slice(found, page.offset, page.limit);
  std::string text = entries.empty() ? std::string("no entry")
                                     : fmt::format("{} ({}): {}", at(entries[0], "title").get<std::string>(),
                                                   at(entries[0], "id").get<std::string>(),
                                                   at(entries[0], "summary").get<std::string>());
  json out = {{"query", str(*doc, "query")}, {"entries", entries}};
  set_page(out, entries.size(), page.offset, static_cast<int64_t>(found.size()));
  return Answer{std::move(out), text};
}

// ---------------------------------------------------- diff, history, gate

Outcome<Answer> diff_reports(const Call& c) {
  KEET_TRY(before, report_path(c, "before"));
  KEET_TRY(after, report_path(c, "after"));
  std::vector<std::string> args = {"diff",
                                   *before,
                                   *after,
                                   "--format=json",
                                   "--threshold=" + c.text("threshold"),
                                   "--min-delta=" + c.text("min_delta")};
  // The declaration bounds each pair to two indices of 0..999999999 (what --pair reads).
  if (json forced = c.arg("pairs"); forced.is_array())
    for (const auto& p : forced)
      args.push_back(fmt::format("--pair={}:{}", p.at(0).get<int64_t>(), p.at(1).get<int64_t>()));
  KEET_TRY(doc, run_json(c, args));
  auto page = page_args(c, "limit");
  // Without detail, a pair's snapshots are brief and its metrics only those
  // that moved; the kernels left unpaired are named, not paged (shape unpaired).
  ProjectionScope scope{.vars = {{"detail", c.arg("detail") == true}}};
  const json& all = at((*doc), "pairs");
  json pairs = answer_shapes().apply_each("kernel_pair", slice(all, page.offset, page.limit), scope);
  size_t not_by_name = std::ranges::count_if(all, [](const json& p) { return str(p, "paired_by") != "name"; });
  json suggested = json::array();
  for (const auto& p : at((*doc), "suggested_pairs"))
    if (p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer()) suggested.push_back(p);
  json out = answer_shapes().apply("diff_answer", *doc, scope);
  const json& summary = at(out, "summary");
  std::string text = fmt::format("{} pair(s): {} faster, {} slower, {} unchanged, {} unknown; {} missing, {} new",
                                 at(summary, "pairs").get<int64_t>(), at(summary, "faster").get<int64_t>(),
                                 at(summary, "slower").get<int64_t>(), at(summary, "unchanged").get<int64_t>(),
                                 at(summary, "unknown").get<int64_t>(), at(summary, "missing").get<int64_t>(),
                                 at(summary, "new").get<int64_t>());
  if (not_by_name > 0) text += fmt::format("; {} pair(s) not made by name (see paired_by)", not_by_name);
  if (!suggested.empty()) text += "; to pair unpaired kernels, try pairs " + suggested.dump();
  out.update({{"before", c.shown(*before)},
              {"after", c.shown(*after)},
              {"pairs", pairs},
              {"missing", answer_shapes().apply("unpaired", at(*doc, "unmatched_before"), scope)},
              {"new", answer_shapes().apply("unpaired", at(*doc, "unmatched_after"), scope)},
              {"suggested_pairs", suggested}});
  set_page(out, pairs.size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), text};
}

// The history store is the server's, never the client's to choose.
void add_store(const Call& c, std::vector<std::string>& args) {
  if (!c.options.store.empty()) args.push_back("--db=" + c.options.store);
}

Outcome<Answer> history(const Call& c) {
  std::vector<std::string> args = {"history", "--format=json", fmt::format("--limit={}", c.number("runs"))};
  add_store(c, args);
  add_kernel_selector(c, args);
  if (auto tag = c.text("tag"); !tag.empty()) args.push_back("--tag=" + tag);
  KEET_TRY(doc, run_json(c, args));
  auto page = page_args(c, "limit");
  ProjectionScope scope{.vars = {{"detail", c.arg("detail") == true}}};
  const json& all = at((*doc), "kernels");
  size_t points_total = 0;
  for (const auto& k : all) points_total += at(k, "points").size();
  json kernels = answer_shapes().apply_each("kernel_history", slice(all, page.offset, page.limit), scope);
  json out = {{"kernels", kernels}};
  set_page(out, kernels.size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), fmt::format("{} kernel(s), {} recorded point(s)", all.size(), points_total)};
}

// What needs attention first: regressions, then kernels gone or new.
int status_rank(const json& k) {
  std::string s = str(k, "status");
  return s == "regression" ? 0 : s == "missing" ? 1 : s == "new" ? 2 : 3;
}

Outcome<Answer> gate(const Call& c) {
  KEET_TRY(path, report_path(c, "report"));
  std::vector<std::string> args = {"gate",
                                   *path,
                                   "--format=json",
                                   "--baseline=" + c.text("baseline"),
                                   "--max-slowdown=" + c.text("max_slowdown"),
                                   "--min-delta=" + c.text("min_delta")};
  add_store(c, args);
  add_kernel_selector(c, args);
  KEET_TRY(doc, run_json(c, args, /*also_ok=*/1));
  auto page = page_args(c, "limit");
  ProjectionScope scope{.vars = {{"detail", c.arg("detail") == true}}};
  json all = at((*doc), "kernels").is_array() ? at((*doc), "kernels") : json::array();
  std::stable_sort(all.begin(), all.end(),
                   [](const json& a, const json& b) { return status_rank(a) < status_rank(b); });
  json kernels = answer_shapes().apply_each("gate_kernel", slice(all, page.offset, page.limit), scope);
  bool passed = at((*doc), "passed") == true;
  json out = answer_shapes().apply("gate_answer", *doc, scope);
  std::string text = fmt::format("{} against {}: {} regression(s), {} missing, {} new", passed ? "PASSED" : "FAILED",
                                 at(out, "baseline").get<std::string>(), at(out, "regressions").get<int64_t>(),
                                 at(out, "missing").get<int64_t>(), at(out, "new").get<int64_t>());
  out.update({{"report", c.shown(*path)}, {"passed", passed}, {"kernels", kernels}});
  set_page(out, kernels.size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), text};
}

// ----------------------------------------------------------- list_reports

// What a file is, by its first bytes (as keet reads it, never by its name):
// {kind, format}, or nullopt for a file KEET does not read.
std::optional<std::pair<std::string, std::string>> report_kind(const std::filesystem::path& file) {
  std::string head = io::read_prefix(file.string(), 4096);
  if (head.empty()) return std::nullopt;
  // JSON or gzip may be a Kineto trace whose events come after a long
  // header: those alone are read as far as the sniff wants.
  bool json_or_gzip = head.front() == '{' || head.starts_with("\x1f\x8b");
  if (json_or_gzip && head.size() == 4096) head = io::read_prefix(file.string(), readers::kTimelineHead);
  switch (readers::sniff_timeline(head)) {
    case readers::TimelineFile::NsysExport:
      return std::pair{"nsys", "nsys-sqlite"};
    case readers::TimelineFile::NsysReport:
      return std::pair{"nsys", "nsys-rep"};
    case readers::TimelineFile::Kineto:
      return std::pair{"kineto", "kineto"};
    case readers::TimelineFile::Other:
      break;
  }
  if (const auto* reader = readers::find_reader(head)) return std::pair{"ncu", std::string(reader->name)};
  return std::nullopt;
}

constexpr size_t kMaxWalked = 20000;  // files looked at per call, over every root

// One root's readable files, relative to it; `walked` counts files over all roots.
void walk_root(const std::string& root, size_t index, const std::optional<Pattern>& pattern, const std::string& kind,
               json& rows, size_t& walked) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end && walked < kMaxWalked; it.increment(ec)) {
    const auto& entry = *it;
    std::string name = entry.path().filename().string();
    if (name.starts_with(".")) {  // hidden files and folders (.git, caches)
      if (entry.is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec)) continue;
    ++walked;
    std::string relative = entry.path().lexically_relative(root).string();
    if (pattern && !pattern->search(relative)) continue;
    auto what = report_kind(entry.path());
    if (!what || (!kind.empty() && what->first != kind)) continue;
    auto size = entry.file_size(ec);
    rows.push_back({{"path", relative},
                    {"root", index},
                    {"kind", what->first},
                    {"format", what->second},
                    {"size", {{"metric", "file_size"}, {"value", ec ? 0 : size}, {"unit", "bytes"}}}});
  }
}

Outcome<Answer> list_reports_tool(const Call& c) {
  std::optional<Pattern> pattern;
  if (auto p = c.text("pattern"); !p.empty()) {
    auto re = Pattern::compile(p, {.case_insensitive = true});
    if (!re) return std::unexpected(Failure{fmt::format("pattern {}: invalid regular expression: {}", p, re.error())});
    pattern = std::move(*re);
  }
  json rows = json::array();
  size_t walked = 0;
  for (size_t i = 0; i < c.roots.roots().size(); ++i)
    walk_root(c.roots.roots()[i], i, pattern, c.text("kind"), rows, walked);
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return std::tie(a["root"], a["path"]) < std::tie(b["root"], b["path"]);
  });
  std::map<std::string, int> by_format;
  for (const auto& r : rows) ++by_format[r["format"].get<std::string>()];
  auto page = page_args(c, "limit");
  json out = {{"roots", c.roots.roots().size()}, {"reports", slice(rows, page.offset, page.limit)}};
  set_page(out, at(out, "reports").size(), page.offset, static_cast<int64_t>(rows.size()));
  out["walk_cut"] = walked >= kMaxWalked;
  std::string text = fmt::format("{} report(s) under {} root(s)", rows.size(), c.roots.roots().size());
  std::string counts;
  for (const auto& [format, n] : by_format) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, format);
  if (!counts.empty()) text += ": " + counts;
  if (walked >= kMaxWalked) text += fmt::format("; the walk stopped after {} files (narrow it with pattern)", walked);
  return Answer{std::move(out), text};
}

// --------------------------------------------------------------- timeline

// "GPU busy 52.6% of 1.078 s; 3 verdict(s)", then each verdict's title on a
// line, then the kernel with the most GPU time: the answer, read as text.
std::string timeline_answer_text(const json& doc, const json& out) {
  double span = at(at(doc, "span"), "duration_ns").is_number() ? at(at(doc, "span"), "duration_ns").get<double>() : 0;
  double busy = at(doc, "gpu_busy_ns").is_number() ? at(doc, "gpu_busy_ns").get<double>() : 0;
  std::string text = fmt::format("{} run", str(doc, "source"));
  if (span > 0) text += fmt::format(" of {}: GPU busy {:.1f}%", render::format_duration(span), 100 * busy / span);
  const json& verdicts = at(out, "verdicts");
  text += fmt::format("; {} verdict(s)", verdicts.size());
  for (size_t i = 0; i < verdicts.size() && i < 5; ++i) text += "\n- " + str(verdicts[i], "title");
  const json& kernels = at(doc, "kernels");
  if (kernels.is_array() && !kernels.empty() && at(kernels[0], "busy_share").is_number())
    text += fmt::format("\nmost GPU time: {} ({:.1f}% of the busy time)", str(kernels[0], "short_name"),
                        100 * at(kernels[0], "busy_share").get<double>());
  return text;
}

Outcome<Answer> timeline_tool(const Call& c) {
  KEET_TRY(path, report_path(c, "trace"));
  KEET_TRY(doc, run_json(c, {"timeline", *path, "--format=json"}));
  ProjectionScope scope;
  json out = answer_shapes().apply("timeline_answer", *doc, scope);
  auto page = page_args(c, "top");
  const json& all = at(*doc, "kernels");
  out["kernels"] = answer_shapes().apply_each("timeline_kernel", slice(all, page.offset, page.limit), scope);
  out["trace"] = c.shown(*path);
  set_page(out, at(out, "kernels").size(), page.offset, all.is_array() ? static_cast<int64_t>(all.size()) : 0);
  std::string text = timeline_answer_text(*doc, out);
  return Answer{std::move(out), std::move(text)};
}

using Handler = Outcome<Answer> (*)(const Call&);
const std::map<std::string, Handler, std::less<>>& handlers() {
  static const std::map<std::string, Handler, std::less<>> table = {{"list_kernels", list_kernels},
                                                                    {"analyze_kernel", analyze_kernel},
                                                                    {"get_metrics", get_metrics},
                                                                    {"source_hotspots", source_hotspots},
                                                                    {"explain_term", explain_term},
                                                                    {"diff_reports", diff_reports},
                                                                    {"history", history},
                                                                    {"gate", gate},
                                                                    {"list_reports", list_reports_tool},
                                                                    {"timeline", timeline_tool}};
  return table;
}

}  // namespace

const json& agent_tool_table() {
  static const json doc = [] {
    auto text = embedded_file("mcp/tools.json");
    json parsed = text ? json::parse(*text, nullptr, false) : json();
    return parsed.is_object() ? parsed : json::object();
  }();
  return doc;
}

const json& tool_declarations() {
  static const json table = load_table();
  return table;
}

const json* find_tool(std::string_view name) {
  for (const auto& t : tool_declarations())
    if (at(t, "name") == name) return &t;
  return nullptr;
}

Tools::Tools(const McpOptions& options, Result<ReportRoots> roots) : options_(options), roots_(std::move(roots)) {}

ToolOutcome Tools::call(std::string_view name, const json& arguments) const {
  using Kind = ToolOutcome::Kind;
  const json* declaration = find_tool(name);
  auto handler = handlers().find(name);
  if (!declaration || handler == handlers().end())
    return {Kind::UnknownTool, nullptr, fmt::format("unknown tool: {}", name)};
  const json& schema = at((*declaration), "inputSchema");
  if (auto bad = schema_violation(schema, arguments, schema))
    return {Kind::BadArguments, nullptr, fmt::format("invalid arguments for {}: {}", name, *bad)};
  if (!roots_) return {Kind::ToolError, nullptr, roots_.error().message};
  try {
    auto answer = handler->second(Call{options_, *roots_, *declaration, arguments});
    if (!answer) return {Kind::ToolError, nullptr, answer.error().message};
    // The declared outputSchema is a promise to the client: an answer that
    // breaks it (a contract this code misread) is a failure, not a result.
    // The declared size budget, kept by shortening the page (mcp_page.h).
    fit_budget(budget_of(*declaration), answer->structured, answer->text);
    const json& out = at((*declaration), "outputSchema");
    if (auto bad = schema_violation(out, answer->structured, out))
      return {Kind::ToolError, nullptr,
              fmt::format("{}: internal error: answer does not fit its schema ({})", name, *bad)};
    return {Kind::Ok, std::move(answer->structured), std::move(answer->text)};
  } catch (const json::exception& e) {  // a command's JSON not shaped as its contract says
    return {Kind::ToolError, nullptr, fmt::format("{}: internal error: {}", name, e.what())};
  }
}

}  // namespace keet::service
