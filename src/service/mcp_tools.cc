#include "service/mcp_tools.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "render/diff_format.h"
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
  auto text = embedded_file("mcp/tools.json");
  if (!text) return json::array();
  json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("tools")) return json::array();
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

json measure(std::string metric, double value, std::string unit) {
  return {{"metric", std::move(metric)}, {"value", value}, {"unit", std::move(unit)}};
}
json optional_measure(const json& v, std::string metric, std::string unit) {
  return v.is_number() ? measure(std::move(metric), v.get<double>(), std::move(unit)) : json(nullptr);
}
// A metric of the report, with the unit ncu gives it.
json metric_measure(const std::string& metric, double value) { return measure(metric, value, model::unit_of(metric)); }

json measures_of(const json& map) {
  json out = json::array();
  if (map.is_object())
    for (const auto& [name, v] : map.items())
      if (v.is_number()) out.push_back(metric_measure(name, v.get<double>()));
  return out;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
json strings(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : json::array();
}
json optional_string(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? *it : json(nullptr);
}
json dim3(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_array() && it->size() == 3 ? *it : json::array({0, 0, 0});
}
int64_t integer(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string duration_text(const json& m) {
  return m.is_object() ? render::format_duration(at(m, "value").get<double>()) : std::string("no duration");
}

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
};

// A tool failure to hand back to the client as an isError result.
struct Failure {
  std::string message;
};
template <typename T>
using Outcome = std::expected<T, Failure>;

Outcome<std::string> report_path(const Call& c, const char* key) {
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
    if (line.starts_with("keet: warning: ")) last_warning = line.substr(15);
    else if (!line.empty()) last = line;
  }
  if (last.starts_with("keet: ")) last = last.substr(6);
  if (last.empty()) last = last_warning;
  return last.empty() ? fmt::format("keet exited with status {}", r.exit_code) : last;
}

// Runs the command and parses its JSON answer. `also_ok` is an exit status
// that still carries an answer (gate's 1: a regression was found).
Outcome<json> run_json(const Call& c, const std::vector<std::string>& args, int also_ok = 0) {
  if (!c.options.run) return std::unexpected(Failure{"this server has no command runner"});
  auto r = c.options.run(args);
  if (r.exit_code != 0 && r.exit_code != also_ok) return std::unexpected(Failure{error_line(r)});
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

struct Answer {
  json structured;
  std::string text;
};

// ----------------------------------------------------------- list_kernels

json listed_kernel(const json& k) {
  return {{"index", integer(k, "index")},   {"name", str(k, "name")},          {"mangled", str(k, "mangled")},
          {"device", str(k, "device")},     {"grid", dim3(k, "grid")},         {"block", dim3(k, "block")},
          {"invocations", integer(k, "invocations")}, {"duration", optional_measure(at(k, "duration_ns"), "duration_ns", "ns")}};
}

Outcome<Answer> list_kernels(const Call& c) {
  auto path = report_path(c, "report");
  if (!path) return std::unexpected(path.error());
  int64_t limit = c.number("limit");
  std::vector<std::string> args = {"list", *path, "--format=json", fmt::format("--launch-count={}", limit + 1)};
  add_kernel_selector(c, args);
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  json kernels = json::array();
  for (const auto& k : at((*doc), "kernels"))
    if (static_cast<int64_t>(kernels.size()) < limit) kernels.push_back(listed_kernel(k));
  bool truncated = static_cast<int64_t>(at((*doc), "kernels").size()) > limit;
  std::string text = fmt::format("{} kernel(s) in {}{}", kernels.size(), *path, truncated ? " (more not shown)" : "");
  if (!kernels.empty()) {
    auto slowest = std::ranges::max_element(kernels, {}, [](const json& k) {
      return at(k, "duration").is_object() ? at(at(k, "duration"), "value").get<double>() : -1.0;
    });
    if (at((*slowest), "duration").is_object())
      text += fmt::format("; longest: #{} {} ({})", at((*slowest), "index").get<int64_t>(),
                          at((*slowest), "name").get<std::string>(), duration_text(at((*slowest), "duration")));
  }
  return Answer{{{"report", *path}, {"kernels", kernels}, {"count", kernels.size()}, {"truncated", truncated}}, text};
}

// --------------------------------------------------------- analyze_kernel

json evidence_of(const json& list) {
  json out = json::array();
  for (const auto& e : list) {
    if (!e.contains("value") || !at(e, "value").is_number()) continue;
    json m = measure(str(e, "metric"), at(e, "value").get<double>(), str(e, "unit"));
    for (const char* extra : {"threshold", "formula"})
      if (e.contains(extra) && e[extra].is_string()) m[extra] = e[extra];
    out.push_back(std::move(m));
  }
  return out;
}

json unit_load(const json& u) {
  if (!u.is_object()) return nullptr;
  std::string metric = str(u, "metric");
  if (metric.empty()) metric = str(u, "unit") + "_utilization";
  return {{"unit", str(u, "unit")}, {"label", str(u, "label")}, {"kind", str(u, "kind")},
          {"utilization", measure(metric, at(u, "pct").get<double>(), "%")}};
}

json limiter_of(const json& l) {
  json units = json::array();
  for (const auto& u : at(l, "units")) units.push_back(unit_load(u));
  return {{"binding", unit_load(at(l, "binding"))}, {"next", unit_load(at(l, "next"))}, {"units", units}};
}

json data_quality_of(const json& q) {
  json out = json::object();
  out["outcome"] = str(q, "outcome");
  for (const char* key : {"sections_present", "sections_missing", "collect", "missing", "below_floor", "problems", "ncu_errors"})
    out[key] = strings(q, key);
  json invalid = json::array();
  for (const auto& i : at(q, "invalid"))
    invalid.push_back({{"metric", str(i, "metric")}, {"value", at(i, "value").is_number() ? at(i, "value") : json(nullptr)},
                       {"why", str(i, "why")}});
  out["invalid"] = std::move(invalid);
  return out;
}

json finding_of(const json& f) {
  json speedup = optional_measure(at(f, "estimated_speedup"), "estimated_speedup", "x");
  if (speedup.is_object() && !str(f, "speedup_formula").empty()) speedup["formula"] = str(f, "speedup_formula");
  json source = json::array();
  for (const auto& s : at(f, "source"))
    source.push_back({{"file", str(s, "file")}, {"line", integer(s, "line")}, {"text", str(s, "text")},
                      {"offset", integer(s, "offset")}, {"sass", str(s, "sass")},
                      {"share", measure("finding_cost_share", at(s, "share").get<double>(), "fraction")}});
  return {{"id", str(f, "id")},
          {"severity", str(f, "severity")},
          {"title", str(f, "title")},
          {"explanation", str(f, "explanation")},
          {"relieves", strings(f, "relieves")},
          {"evidence", evidence_of(at(f, "evidence"))},
          {"estimated_speedup", speedup},
          {"advice", strings(f, "advice")},
          {"source", source},
          {"references", strings(f, "references")},
          {"ncu_rules", strings(f, "ncu_rules")}};
}

json analysed_kernel(const json& k) {
  const auto& b = at(k, "bottleneck");
  json findings = json::array();
  for (const auto& f : at(k, "findings")) findings.push_back(finding_of(f));
  return {{"index", integer(k, "index")},
          {"name", str(k, "name")},
          {"demangled", str(k, "demangled")},
          {"device", str(at(k, "device"), "name")},
          {"compute_capability", str(at(k, "device"), "compute_capability")},
          {"grid", dim3(k, "grid")},
          {"block", dim3(k, "block")},
          {"duration", optional_measure(at(k, "duration_ns"), "duration_ns", "ns")},
          {"library", optional_string(k, "library")},
          {"bottleneck",
           {{"class", str(b, "class")},
            {"confidence", measure("confidence", at(b, "confidence").get<double>(), "fraction")},
            {"summary", str(b, "summary")},
            {"evidence", evidence_of(at(b, "evidence"))}}},
          {"limiter", limiter_of(at(k, "limiter"))},
          {"data_quality", data_quality_of(at(k, "data_quality"))},
          {"findings", findings},
          {"notes", strings(k, "notes")}};
}

std::string analysis_text(const json& k) {
  std::string text = fmt::format("#{} {}: {}-bound", at(k, "index").get<int64_t>(), at(k, "name").get<std::string>(),
                                 at(at(k, "bottleneck"), "class").get<std::string>());
  if (const auto& b = at(at(k, "limiter"), "binding"); b.is_object())
    text += fmt::format(", binding unit {} at {:.1f}% ({})", at(b, "label").get<std::string>(),
                        at(at(b, "utilization"), "value").get<double>(), at(at(b, "utilization"), "metric").get<std::string>());
  text += fmt::format("; {} finding(s)", at(k, "findings").size());
  if (!at(k, "findings").empty()) text += ", first: " + at(at(k, "findings")[0], "title").get<std::string>();
  if (at(at(k, "data_quality"), "outcome") != "ok")
    text += fmt::format("; data quality {}", at(at(k, "data_quality"), "outcome").get<std::string>());
  return text;
}

Outcome<Answer> analyze_kernel(const Call& c) {
  auto path = report_path(c, "report");
  if (!path) return std::unexpected(path.error());
  std::vector<std::string> args = {"analyze", *path, "--format=json", "--launch-count=1",
                                   fmt::format("--top={}", c.number("top"))};
  add_kernel_selector(c, args);
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  auto k = first_kernel(*doc, *path);
  if (!k) return std::unexpected(k.error());
  const auto& report = at((*doc), "report");
  json kernel = analysed_kernel(*k);
  std::string text = analysis_text(kernel);
  return Answer{{{"report", *path},
                 {"format", str(report, "format")},
                 {"ncu_version", optional_string(report, "ncu_version")},
                 {"kernel", std::move(kernel)}},
                text};
}

// ------------------------------------------------------------ get_metrics

Outcome<Answer> get_metrics(const Call& c) {
  auto path = report_path(c, "report");
  if (!path) return std::unexpected(path.error());
  std::vector<std::string> args = {"metrics", *path, "--format=json", "--launch-count=1"};
  add_kernel_selector(c, args);
  if (auto p = c.text("pattern"); !p.empty()) {
    if (auto re = Pattern::compile(p, {.case_insensitive = true}); !re)
      return std::unexpected(Failure{fmt::format("pattern {}: invalid regular expression: {}", p, re.error())});
    args.push_back("--grep=" + p);
  }
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  auto k = first_kernel(*doc, *path);
  if (!k) return std::unexpected(k.error());
  std::set<std::string> names;
  for (const auto& n : c.arg("names").is_array() ? c.arg("names") : json::array()) names.insert(n.get<std::string>());
  int64_t limit = c.number("limit");
  json metrics = json::array();
  int64_t matched = 0;
  for (const auto& [name, m] : at((*k), "metrics").items()) {
    if (!names.empty() && !names.contains(name)) continue;
    if (matched++ < limit) metrics.push_back({{"metric", name}, {"value", at(m, "value")}, {"unit", str(m, "unit")}});
  }
  json missing = json::array();
  for (const auto& n : names)
    if (!at((*k), "metrics").contains(n)) missing.push_back(n);
  json kernel = {{"index", integer(*k, "index")}, {"name", str(*k, "name")}};
  std::string text = fmt::format("{} metric(s) of #{} {}{}{}", matched, at(kernel, "index").get<int64_t>(),
                                 at(kernel, "name").get<std::string>(), matched > limit ? fmt::format(", first {} shown", limit) : "",
                                 missing.empty() ? "" : fmt::format("; {} asked for but not in the report", missing.size()));
  return Answer{{{"report", *path}, {"kernel", kernel}, {"metrics", metrics}, {"matched", matched},
                 {"truncated", matched > limit}, {"missing", missing}},
                text};
}

// -------------------------------------------------------- source_hotspots

json hotspot_line(const json& l, const std::string& sorted_by) {
  json stalls = json::array();
  if (at(l, "stalls").is_object())
    for (const auto& [reason, v] : at(l, "stalls").items())
      if (v.is_number()) stalls.push_back(measure(reason, v.get<double>(), "samples"));
  return {{"file", str(l, "file")},
          {"line", integer(l, "line")},
          {"offset", integer(l, "offset")},
          {"text", str(l, "text")},
          {"sass", str(l, "sass")},
          {"share", measure(sorted_by.empty() ? "share" : sorted_by, at(l, "share").get<double>(), "fraction of the kernel's total")},
          {"values", measures_of(at(l, "metrics"))},
          {"stalls", stalls}};
}

Outcome<Answer> source_hotspots(const Call& c) {
  auto path = report_path(c, "report");
  if (!path) return std::unexpected(path.error());
  std::vector<std::string> args = {"source", *path, "--format=json", "--launch-count=1",
                                   fmt::format("--top={}", c.number("top"))};
  add_kernel_selector(c, args);
  if (auto by = c.text("by"); !by.empty()) args.push_back("--by=" + by);
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  auto k = first_kernel(*doc, *path);
  if (!k) return std::unexpected(k.error());
  std::string sorted_by = str(*k, "sorted_by");
  json lines = json::array();
  for (const auto& l : at((*k), "lines")) lines.push_back(hotspot_line(l, sorted_by));
  json kernel = {{"index", integer(*k, "index")}, {"name", str(*k, "name")}};
  std::string text = fmt::format("#{} {}: {} of {} {} row(s) by {}", at(kernel, "index").get<int64_t>(),
                                 at(kernel, "name").get<std::string>(), lines.size(), integer(*k, "row_count"),
                                 str(*k, "level"), sorted_by.empty() ? "-" : sorted_by);
  if (!lines.empty()) {
    const json& top = lines[0];
    std::string where = integer(top, "line") == 0  // a SASS instruction
        ? fmt::format("SASS +{:#x}{}", integer(top, "offset"),
                      str(top, "sass").empty() ? "" : " " + str(top, "sass"))
        : fmt::format("{}:{}", at(top, "file").get<std::string>(), at(top, "line").get<int64_t>());
    text += fmt::format("; hottest {} ({:.1f}%)", where, 100 * at(at(top, "share"), "value").get<double>());
  }
  for (const auto& n : strings(*k, "notes")) text += "; " + n.get<std::string>();
  return Answer{{{"report", *path},
                 {"kernel", kernel},
                 {"level", str(*k, "level")},
                 {"sorted_by", sorted_by},
                 {"rows_total", integer(*k, "row_count")},
                 {"notes", strings(*k, "notes")},
                 {"totals", measures_of(at((*k), "totals"))},
                 {"lines", lines}},
                text};
}

// ----------------------------------------------------------- explain_term

Outcome<Answer> explain_term(const Call& c) {
  // "--" first: a term that starts with '-' is a term, not a flag.
  auto doc = run_json(c, {"explain", "--format=json", "-n", std::to_string(c.number("count")), "--", c.text("term")});
  if (!doc) return std::unexpected(doc.error());
  json entries = json::array();
  for (const auto& e : at((*doc), "entries")) {
    json refs = json::array();
    for (const auto& r : at(e, "references")) refs.push_back({{"title", str(r, "title")}, {"url", str(r, "url")}});
    entries.push_back({{"id", str(e, "id")}, {"kind", str(e, "kind")}, {"title", str(e, "title")},
                       {"match", str(e, "match")}, {"aliases", strings(e, "aliases")}, {"metrics", strings(e, "metrics")},
                       {"summary", str(e, "summary")}, {"how_to_read", str(e, "how_to_read")},
                       {"typical", str(e, "typical")}, {"remedies", strings(e, "remedies")}, {"references", refs},
                       {"related", strings(e, "related")}});
  }
  std::string text = entries.empty() ? std::string("no entry")
                                     : fmt::format("{} ({}): {}", at(entries[0], "title").get<std::string>(),
                                                   at(entries[0], "id").get<std::string>(), at(entries[0], "summary").get<std::string>());
  return Answer{{{"query", str(*doc, "query")}, {"entries", entries}}, text};
}

// ---------------------------------------------------- diff, history, gate

json snapshot_of(const json& s) {
  if (!s.is_object()) return nullptr;
  json findings = json::array();
  for (const auto& f : at(s, "findings"))
    findings.push_back({{"id", str(f, "id")}, {"title", str(f, "title")}, {"severity", str(f, "severity")},
                        {"estimated_speedup", optional_measure(at(f, "estimated_speedup"), "estimated_speedup", "x")}});
  return {{"index", integer(s, "index")},   {"name", str(s, "name")},         {"device", str(s, "device")},
          {"grid", dim3(s, "grid")},        {"block", dim3(s, "block")},
          {"duration", optional_measure(at(s, "duration_ns"), "duration_ns", "ns")},
          {"bottleneck", optional_string(s, "bottleneck")}, {"metrics", measures_of(at(s, "metrics"))},
          {"findings", findings}};
}

json metric_delta(const json& m) {
  std::string metric = str(m, "metric"), unit = str(m, "unit");
  return {{"label", str(m, "label")},
          {"before", measure(metric, at(m, "before").get<double>(), unit)},
          {"after", measure(metric, at(m, "after").get<double>(), unit)},
          {"change", optional_measure(at(m, "change"), metric, "relative change")}};
}

// How keet diff made the pair, in its words (render::pairing_note).
std::string pairing_text(const json& p, render::PairedBy by) {
  const json &before = at(p, "before"), &after = at(p, "after");
  return render::pairing_note(by, str(before, "name"), str(after, "name"), static_cast<int>(integer(before, "index")),
                              static_cast<int>(integer(after, "index")));
}

json pair_of(const json& p) {
  json metrics = json::array();
  for (const auto& m : at(p, "metrics")) metrics.push_back(metric_delta(m));
  auto by = render::paired_by_from_name(str(p, "paired_by")).value_or(render::PairedBy::Name);
  return {{"verdict", str(p, "verdict")},
          {"paired_by", render::paired_by_name(by)},
          {"pairing", pairing_text(p, by)},
          {"before", snapshot_of(at(p, "before"))},
          {"after", snapshot_of(at(p, "after"))},
          {"speedup", optional_measure(at(p, "speedup"), "duration_ns", "speedup (before / after)")},
          {"change", optional_measure(at(p, "change"), "duration_ns", "relative change")},
          {"bottleneck_before", str(at(p, "bottleneck"), "before")},
          {"bottleneck_after", str(at(p, "bottleneck"), "after")},
          {"resolved", strings(p, "resolved")},
          {"introduced", strings(p, "introduced")},
          {"persisting", strings(p, "persisting")},
          {"metrics", metrics}};
}

json snapshots_of(const json& list) {
  json out = json::array();
  for (const auto& s : list) out.push_back(snapshot_of(s));
  return out;
}

Outcome<Answer> diff_reports(const Call& c) {
  auto before = report_path(c, "before");
  if (!before) return std::unexpected(before.error());
  auto after = report_path(c, "after");
  if (!after) return std::unexpected(after.error());
  std::vector<std::string> args = {"diff", *before, *after, "--format=json", "--threshold=" + c.text("threshold"),
                                   "--min-delta=" + c.text("min_delta")};
  // The declaration bounds each pair to two indices of 0..999999999 (what --pair reads).
  if (json forced = c.arg("pairs"); forced.is_array())
    for (const auto& p : forced)
      args.push_back(fmt::format("--pair={}:{}", p.at(0).get<int64_t>(), p.at(1).get<int64_t>()));
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  int64_t limit = c.number("limit");
  json pairs = json::array();
  size_t not_by_name = 0;
  for (const auto& p : at((*doc), "pairs")) {
    if (str(p, "paired_by") != "name") ++not_by_name;
    if (static_cast<int64_t>(pairs.size()) < limit) pairs.push_back(pair_of(p));
  }
  json suggested = json::array();
  for (const auto& p : at((*doc), "suggested_pairs"))
    if (p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer()) suggested.push_back(p);
  json summary = json::object();
  for (const char* key : {"pairs", "missing", "new", "faster", "slower", "unchanged", "unknown"})
    summary[key] = integer(at((*doc), "summary"), key);
  std::string text = fmt::format("{} pair(s): {} faster, {} slower, {} unchanged, {} unknown; {} missing, {} new",
                                 at(summary, "pairs").get<int64_t>(), at(summary, "faster").get<int64_t>(),
                                 at(summary, "slower").get<int64_t>(), at(summary, "unchanged").get<int64_t>(),
                                 at(summary, "unknown").get<int64_t>(), at(summary, "missing").get<int64_t>(),
                                 at(summary, "new").get<int64_t>());
  if (not_by_name > 0) text += fmt::format("; {} pair(s) not made by name (see paired_by)", not_by_name);
  if (!suggested.empty()) text += "; to pair unpaired kernels, try pairs " + suggested.dump();
  return Answer{{{"before", *before},
                 {"after", *after},
                 {"threshold", measure("threshold", at((*doc), "threshold").get<double>(), "fraction")},
                 {"min_delta", measure("min_delta_ns", at((*doc), "min_delta_ns").get<double>(), "ns")},
                 {"summary", summary},
                 {"pairs", pairs},
                 {"truncated", at((*doc), "pairs").size() > pairs.size()},
                 {"missing", snapshots_of(at((*doc), "unmatched_before"))},
                 {"new", snapshots_of(at((*doc), "unmatched_after"))},
                 {"suggested_pairs", suggested}},
                text};
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
  auto doc = run_json(c, args);
  if (!doc) return std::unexpected(doc.error());
  json kernels = json::array();
  size_t points_total = 0;
  for (const auto& k : at((*doc), "kernels")) {
    json points = json::array();
    for (const auto& p : at(k, "points"))
      points.push_back({{"run", integer(p, "run")}, {"tag", str(p, "tag")}, {"commit", str(p, "commit")},
                        {"recorded_at", integer(p, "recorded_at")}, {"snapshot", snapshot_of(at(p, "kernel"))}});
    points_total += points.size();
    kernels.push_back({{"kernel", str(k, "kernel")}, {"points", points}});
  }
  return Answer{{{"kernels", kernels}}, fmt::format("{} kernel(s), {} recorded point(s)", kernels.size(), points_total)};
}

Outcome<Answer> gate(const Call& c) {
  auto path = report_path(c, "report");
  if (!path) return std::unexpected(path.error());
  std::vector<std::string> args = {"gate", *path, "--format=json", "--baseline=" + c.text("baseline"),
                                   "--max-slowdown=" + c.text("max_slowdown"), "--min-delta=" + c.text("min_delta")};
  add_store(c, args);
  add_kernel_selector(c, args);
  auto doc = run_json(c, args, /*also_ok=*/1);
  if (!doc) return std::unexpected(doc.error());
  json kernels = json::array();
  for (const auto& k : at((*doc), "kernels"))
    kernels.push_back({{"status", str(k, "status")}, {"name", str(k, "name")}, {"before", snapshot_of(at(k, "before"))},
                       {"after", snapshot_of(at(k, "after"))},
                       {"change", optional_measure(at(k, "change"), "duration_ns", "relative change")},
                       {"message", str(k, "message")}});
  bool passed = at((*doc), "passed") == true;
  std::string text = fmt::format("{} against {}: {} regression(s), {} missing, {} new", passed ? "PASSED" : "FAILED",
                                 str(*doc, "baseline"), integer(*doc, "regressions"), integer(*doc, "missing"),
                                 integer(*doc, "new"));
  return Answer{{{"report", *path},
                 {"baseline", str(*doc, "baseline")},
                 {"passed", passed},
                 {"max_slowdown", measure("max_slowdown", at((*doc), "max_slowdown").get<double>(), "fraction")},
                 {"min_delta", measure("min_delta_ns", at((*doc), "min_delta_ns").get<double>(), "ns")},
                 {"regressions", integer(*doc, "regressions")},
                 {"missing", integer(*doc, "missing")},
                 {"new", integer(*doc, "new")},
                 {"kernels", kernels}},
                text};
}

using Handler = Outcome<Answer> (*)(const Call&);
const std::map<std::string, Handler, std::less<>>& handlers() {
  static const std::map<std::string, Handler, std::less<>> table = {
      {"list_kernels", list_kernels}, {"analyze_kernel", analyze_kernel}, {"get_metrics", get_metrics},
      {"source_hotspots", source_hotspots}, {"explain_term", explain_term}, {"diff_reports", diff_reports},
      {"history", history}, {"gate", gate}};
  return table;
}

}  // namespace

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
  if (!declaration || handler == handlers().end()) return {Kind::UnknownTool, nullptr, fmt::format("unknown tool: {}", name)};
  const json& schema = at((*declaration), "inputSchema");
  if (auto bad = schema_violation(schema, arguments, schema))
    return {Kind::BadArguments, nullptr, fmt::format("invalid arguments for {}: {}", name, *bad)};
  if (!roots_) return {Kind::ToolError, nullptr, roots_.error().message};
  try {
    auto answer = handler->second(Call{options_, *roots_, *declaration, arguments});
    if (!answer) return {Kind::ToolError, nullptr, answer.error().message};
    // The declared outputSchema is a promise to the client: an answer that
    // breaks it (a contract this code misread) is a failure, not a result.
    const json& out = at((*declaration), "outputSchema");
    if (auto bad = schema_violation(out, answer->structured, out))
      return {Kind::ToolError, nullptr, fmt::format("{}: internal error: answer does not fit its schema ({})", name, *bad)};
    return {Kind::Ok, std::move(answer->structured), std::move(answer->text)};
  } catch (const json::exception& e) {  // a command's JSON not shaped as its contract says
    return {Kind::ToolError, nullptr, fmt::format("{}: internal error: {}", name, e.what())};
  }
}

}  // namespace keet::service
