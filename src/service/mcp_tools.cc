#include "service/mcp_tools.h"
#include "util/error.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "render/diff_format.h"
#include "service/mcp_page.h"
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

json measure(std::string metric, double value, std::string unit) {
  return {{"metric", std::move(metric)}, {"value", value}, {"unit", std::move(unit)}};
}
json optional_measure(const json& v, std::string metric, std::string unit) {
  return v.is_number() ? measure(std::move(metric), v.get<double>(), std::move(unit)) : json(nullptr);
}
json duration_measure(const json& ns) { return optional_measure(ns, "duration_ns", "ns"); }
// A metric of the report, with the unit ncu gives it.
json metric_measure(const std::string& metric, double value) { return measure(metric, value, model::unit_of(metric)); }

json measures_of(const json& map) {
  json out = json::array();
  if (map.is_object())
    for (const auto& [name, v] : map.items())
      if (v.is_number()) out.push_back(metric_measure(name, v.get<double>()));
  return out;
}

// The non-zero counters of a map, as measures; `zeros` counts those left out.
// A per-PC counter of 0 says nothing about the line, and there are dozens.
json nonzero_measures_of(const json& map, int64_t& zeros, const std::string& unit = "") {
  json out = json::array();
  if (!map.is_object()) return out;
  for (const auto& [name, v] : map.items()) {
    if (!v.is_number()) continue;
    if (v.get<double>() == 0)
      ++zeros;
    else
      out.push_back(unit.empty() ? metric_measure(name, v.get<double>()) : measure(name, v.get<double>(), unit));
  }
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

// The name an assistant reads: demangled, templates and parameters folded
// when it is long (the full one costs context on every row and mentions).
std::string short_name(const std::string& full) { return abbreviate_name(full, 100); }

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

std::vector<int64_t> indices_of(const json& j) {
  std::vector<int64_t> out;
  for (const auto& i : j)
    if (i.is_number_integer()) out.push_back(i.get<int64_t>());
  return out;
}

// mangled: true adds the names a row's short name stands for.
void add_names(json& row, const json& launch) {
  row["mangled"] = str(launch, "mangled");
  row["full_name"] = str(launch, "name");
}

// One row per kernel, grid, block and device (keet list --print-summary
// per-kernel folds them); the durations only when the row folds several.
json folded_row(const json& g) {
  auto indices = indices_of(at(g, "indices"));
  json row = {{"index", indices.empty() ? 0 : indices.front()},
              {"name", short_name(str(g, "name"))},
              {"device", str(g, "device")},
              {"grid", dim3(g, "grid")},
              {"block", dim3(g, "block")},
              {"launches", std::max<int64_t>(1, integer(g, "launches"))},
              {"indices", index_ranges(indices)},
              {"duration", duration_measure(at(g, "mean_ns"))}};
  if (at(row, "launches").get<int64_t>() > 1) {
    row["total_duration"] = duration_measure(at(g, "total_ns"));
    row["min_duration"] = duration_measure(at(g, "min_ns"));
    row["max_duration"] = duration_measure(at(g, "max_ns"));
  }
  return row;
}

// One launch (nvprof: one summary row of `invocations` launches).
json launch_row(const json& k) {
  return {{"index", integer(k, "index")},
          {"name", short_name(str(k, "name"))},
          {"device", str(k, "device")},
          {"grid", dim3(k, "grid")},
          {"block", dim3(k, "block")},
          {"launches", std::max<int64_t>(1, integer(k, "invocations"))},
          {"indices", std::to_string(integer(k, "index"))},
          {"duration", duration_measure(at(k, "duration_ns"))}};
}

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
  json rows = json::array();
  if (fold) {
    args.push_back("--print-summary=per-kernel");
    KEET_TRY(groups, run_json(c, args));
    for (const auto& g : at(*groups, "kernels")) rows.push_back(folded_row(g));
  } else {
    for (const auto& k : at(launches, "kernels")) rows.push_back(launch_row(k));
  }
  if (mangled) {
    std::map<int64_t, const json*> by_index;
    for (const auto& k : at(launches, "kernels")) by_index[integer(k, "index")] = &k;
    for (auto& row : rows)
      if (auto it = by_index.find(at(row, "index").get<int64_t>()); it != by_index.end()) add_names(row, *it->second);
  }
  if (c.text("sort") != "index")
    std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return row_time(a) > row_time(b); });
  int64_t launch_count = 0;
  for (const auto& row : rows) launch_count += at(row, "launches").get<int64_t>();
  auto page = page_args(c, "limit");
  json out = {{"report", *path}, {"launches", launch_count}, {"kernels", slice(rows, page.offset, page.limit)}};
  set_page(out, at(out, "kernels").size(), page.offset, static_cast<int64_t>(rows.size()));
  std::string text = fmt::format("{} kernel(s){} from {} launch(es) in {}", rows.size(),
                                 fold ? " (launches folded)" : "", launch_count, *path);
  auto longest = std::ranges::max_element(rows, {}, row_time);
  if (longest != rows.end() && row_time(*longest) >= 0)
    text += fmt::format("; most time: #{} {} x{} ({})", at(*longest, "index").get<int64_t>(),
                        at(*longest, "name").get<std::string>(), at(*longest, "launches").get<int64_t>(),
                        render::format_duration(row_time(*longest)));
  return Answer{std::move(out), text};
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
  return {{"unit", str(u, "unit")},
          {"label", str(u, "label")},
          {"kind", str(u, "kind")},
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
  for (const char* key :
       {"sections_present", "sections_missing", "collect", "missing", "below_floor", "problems", "ncu_errors"})
    out[key] = strings(q, key);
  json invalid = json::array();
  for (const auto& i : at(q, "invalid"))
    invalid.push_back({{"metric", str(i, "metric")},
                       {"value", at(i, "value").is_number() ? at(i, "value") : json(nullptr)},
                       {"why", str(i, "why")}});
  out["invalid"] = std::move(invalid);
  return out;
}

json finding_of(const json& f) {
  json speedup = optional_measure(at(f, "estimated_speedup"), "estimated_speedup", "x");
  if (speedup.is_object() && !str(f, "speedup_formula").empty()) speedup["formula"] = str(f, "speedup_formula");
  json source = json::array();
  for (const auto& s : at(f, "source"))
    source.push_back({{"file", str(s, "file")},
                      {"line", integer(s, "line")},
                      {"text", str(s, "text")},
                      {"offset", integer(s, "offset")},
                      {"sass", str(s, "sass")},
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

json analysed_kernel(const json& k, bool mangled) {
  const auto& b = at(k, "bottleneck");
  json findings = json::array();
  for (const auto& f : at(k, "findings")) findings.push_back(finding_of(f));
  std::string full = str(k, "demangled").empty() ? str(k, "name") : str(k, "demangled");
  json out = {{"index", integer(k, "index")}, {"name", short_name(full)}};
  if (mangled) out["mangled"] = str(k, "name"), out["full_name"] = full;
  out.update({{"device", str(at(k, "device"), "name")},
              {"compute_capability", str(at(k, "device"), "compute_capability")},
              {"grid", dim3(k, "grid")},
              {"block", dim3(k, "block")},
              {"duration", duration_measure(at(k, "duration_ns"))},
              {"library", optional_string(k, "library")},
              {"bottleneck",
               {{"class", str(b, "class")},
                {"confidence", measure("confidence", at(b, "confidence").get<double>(), "fraction")},
                {"summary", str(b, "summary")},
                {"evidence", evidence_of(at(b, "evidence"))}}},
              {"limiter", limiter_of(at(k, "limiter"))},
              {"data_quality", data_quality_of(at(k, "data_quality"))},
              {"findings", findings},
              {"notes", strings(k, "notes")}});
  return out;
}

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
  KEET_TRY(k, first_kernel(*doc, *path));
  const auto& report = at((*doc), "report");
  json kernel = analysed_kernel(*k, c.arg("mangled") == true);
  std::string text = analysis_text(kernel);
  json all = std::move(kernel["findings"]);
  int64_t top = c.number("top");
  auto page = PageArgs{c.number("offset"), top == 0 ? static_cast<int64_t>(all.size()) : top};
  kernel["findings"] = slice(all, page.offset, page.limit);
  json out = {{"report", *path},
              {"format", str(report, "format")},
              {"ncu_version", optional_string(report, "ncu_version")},
              {"kernel", std::move(kernel)}};
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
  KEET_TRY(k, first_kernel(*doc, *path));
  std::set<std::string> names;
  for (const auto& n : c.arg("names").is_array() ? c.arg("names") : json::array()) names.insert(n.get<std::string>());
  // A metric asked for by name is an answer even when 0; in a listing, zeros
  // crowd out what was measured (and are counted, not hidden).
  bool keep_zeros = !names.empty() || c.arg("zeros") == true;
  json matched = json::array();
  int64_t zeros = 0;
  for (const auto& [name, m] : at((*k), "metrics").items()) {
    if (!names.empty() && !names.contains(name)) continue;
    if (!keep_zeros && is_zero(at(m, "value"))) {
      ++zeros;
      continue;
    }
    matched.push_back({{"metric", name}, {"value", at(m, "value")}, {"unit", str(m, "unit")}});
  }
  json missing = json::array();
  for (const auto& n : names)
    if (!at((*k), "metrics").contains(n)) missing.push_back(n);
  json kernel = {{"index", integer(*k, "index")}, {"name", short_name(str(*k, "name"))}};
  auto page = page_args(c, "limit");
  json out = {{"report", *path}, {"kernel", kernel}, {"metrics", slice(matched, page.offset, page.limit)}};
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

// The per-PC counters of a row without the stall samples `stalls` already
// gives (smsp__pcsamp_warps_issue_stalled_<reason>: the same numbers again).
json row_counters(const json& l) {
  json out = at(l, "metrics").is_object() ? at(l, "metrics") : json::object();
  if (at(l, "stalls").is_object())
    for (const auto& [reason, v] : at(l, "stalls").items()) out.erase("smsp__pcsamp_warps_issue_stalled_" + reason);
  return out;
}

json hotspot_line(const json& l, const std::string& sorted_by, int64_t& zeros) {
  return {{"file", str(l, "file")},
          {"line", integer(l, "line")},
          {"offset", integer(l, "offset")},
          {"text", str(l, "text")},
          {"sass", str(l, "sass")},
          {"share", measure(sorted_by.empty() ? "share" : sorted_by, at(l, "share").get<double>(),
                            "fraction of the kernel's total")},
          {"values", nonzero_measures_of(row_counters(l), zeros)},
          {"stalls", nonzero_measures_of(at(l, "stalls"), zeros, "samples")}};
}

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
  KEET_TRY(k, first_kernel(*doc, *path));
  std::string sorted_by = str(*k, "sorted_by");
  int64_t zeros = 0;
  json lines = json::array();
  for (const auto& l : slice(at((*k), "lines"), page.offset, page.limit))
    lines.push_back(hotspot_line(l, sorted_by, zeros));
  json totals = nonzero_measures_of(at((*k), "totals"), zeros);
  json kernel = {{"index", integer(*k, "index")}, {"name", short_name(str(*k, "name"))}};
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
  json out = {{"report", *path},
              {"kernel", kernel},
              {"level", str(*k, "level")},
              {"sorted_by", sorted_by},
              {"notes", strings(*k, "notes")},
              {"totals", totals},
              {"lines", lines}};
  set_page(out, lines.size(), page.offset, integer(*k, "row_count"));
  out["zeros_omitted"] = zeros;
  return Answer{std::move(out), text};
}

// ----------------------------------------------------------- explain_term

// One entry more than the page is asked for: whether there are more is then known.
Outcome<Answer> explain_term(const Call& c) {
  auto page = page_args(c, "count");
  // "--" first: a term that starts with '-' is a term, not a flag.
  KEET_TRY(doc, run_json(c, {"explain", "--format=json", "-n", std::to_string(page.offset + page.limit + 1), "--",
                             c.text("term")}));
  json found = json::array();
  for (const auto& e : at((*doc), "entries")) {
    json refs = json::array();
    for (const auto& r : at(e, "references")) refs.push_back({{"title", str(r, "title")}, {"url", str(r, "url")}});
    found.push_back({{"id", str(e, "id")},
                     {"kind", str(e, "kind")},
                     {"title", str(e, "title")},
                     {"match", str(e, "match")},
                     {"aliases", strings(e, "aliases")},
                     {"metrics", strings(e, "metrics")},
                     {"summary", str(e, "summary")},
                     {"how_to_read", str(e, "how_to_read")},
                     {"typical", str(e, "typical")},
                     {"remedies", strings(e, "remedies")},
                     {"references", refs},
                     {"related", strings(e, "related")}});
  }
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

// index, name, duration and bottleneck; detail adds the launch, key metrics
// and findings (a page of full snapshots holds few kernels).
json snapshot_of(const json& s, bool detail) {
  if (!s.is_object()) return nullptr;
  json out = {{"index", integer(s, "index")},
              {"name", short_name(str(s, "name"))},
              {"duration", duration_measure(at(s, "duration_ns"))},
              {"bottleneck", optional_string(s, "bottleneck")}};
  if (!detail) return out;
  json findings = json::array();
  for (const auto& f : at(s, "findings"))
    findings.push_back({{"id", str(f, "id")},
                        {"title", str(f, "title")},
                        {"severity", str(f, "severity")},
                        {"estimated_speedup", optional_measure(at(f, "estimated_speedup"), "estimated_speedup", "x")}});
  out.update({{"device", str(s, "device")},
              {"grid", dim3(s, "grid")},
              {"block", dim3(s, "block")},
              {"metrics", measures_of(at(s, "metrics"))},
              {"findings", findings}});
  return out;
}

json metric_delta(const json& m) {
  std::string metric = str(m, "metric"), unit = str(m, "unit");
  return {{"label", str(m, "label")},
          {"before", measure(metric, at(m, "before").get<double>(), unit)},
          {"after", measure(metric, at(m, "after").get<double>(), unit)},
          {"change", optional_measure(at(m, "change"), metric, "relative change")}};
}

// How keet diff made the pair, in its words (render::pairing_note).
std::string pairing_text(const json& p, compare::PairedBy by) {
  const json &before = at(p, "before"), &after = at(p, "after");
  return render::pairing_note(by, str(before, "name"), str(after, "name"), static_cast<int>(integer(before, "index")),
                              static_cast<int>(integer(after, "index")));
}

json pair_of(const json& p, bool detail) {
  json metrics = json::array();
  // Without detail, only the metrics that moved: an unchanged one says nothing new.
  for (const auto& m : at(p, "metrics"))
    if (detail || !is_zero(at(m, "change"))) metrics.push_back(metric_delta(m));
  auto by = compare::paired_by_from_name(str(p, "paired_by")).value_or(compare::PairedBy::Name);
  return {{"verdict", str(p, "verdict")},
          {"paired_by", compare::paired_by_name(by)},
          {"pairing", pairing_text(p, by)},
          {"before", snapshot_of(at(p, "before"), detail)},
          {"after", snapshot_of(at(p, "after"), detail)},
          {"speedup", optional_measure(at(p, "speedup"), "duration_ns", "speedup (before / after)")},
          {"change", optional_measure(at(p, "change"), "duration_ns", "relative change")},
          {"bottleneck_before", str(at(p, "bottleneck"), "before")},
          {"bottleneck_after", str(at(p, "bottleneck"), "after")},
          {"resolved", strings(p, "resolved")},
          {"introduced", strings(p, "introduced")},
          {"persisting", strings(p, "persisting")},
          {"metrics", metrics}};
}

// Kernels left unpaired are named, not paged: the first ten of each side (as
// many as suggested_pairs pairs); summary counts them all.
constexpr int64_t kUnpairedShown = 10;

json snapshots_of(const json& list, int64_t limit) {
  json out = json::array();
  for (const auto& s : slice(list, 0, limit)) out.push_back(snapshot_of(s, false));
  return out;
}

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
  bool detail = c.arg("detail") == true;
  const json& all = at((*doc), "pairs");
  json pairs = json::array();
  for (const auto& p : slice(all, page.offset, page.limit)) pairs.push_back(pair_of(p, detail));
  size_t not_by_name = std::ranges::count_if(all, [](const json& p) { return str(p, "paired_by") != "name"; });
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
  json out = {{"before", *before},
              {"after", *after},
              {"threshold", measure("threshold", at((*doc), "threshold").get<double>(), "fraction")},
              {"min_delta", measure("min_delta_ns", at((*doc), "min_delta_ns").get<double>(), "ns")},
              {"summary", summary},
              {"pairs", pairs},
              {"missing", snapshots_of(at((*doc), "unmatched_before"), kUnpairedShown)},
              {"new", snapshots_of(at((*doc), "unmatched_after"), kUnpairedShown)},
              {"suggested_pairs", suggested}};
  set_page(out, pairs.size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), text};
}

// The history store is the server's, never the client's to choose.
void add_store(const Call& c, std::vector<std::string>& args) {
  if (!c.options.store.empty()) args.push_back("--db=" + c.options.store);
}

json history_point(const json& p, bool detail) {
  const json& k = at(p, "kernel");
  json out = {{"run", integer(p, "run")},
              {"tag", str(p, "tag")},
              {"commit", str(p, "commit")},
              {"recorded_at", integer(p, "recorded_at")},
              {"duration", duration_measure(at(k, "duration_ns"))},
              {"bottleneck", optional_string(k, "bottleneck")}};
  if (detail && k.is_object()) out["snapshot"] = snapshot_of(k, true);
  return out;
}

Outcome<Answer> history(const Call& c) {
  std::vector<std::string> args = {"history", "--format=json", fmt::format("--limit={}", c.number("runs"))};
  add_store(c, args);
  add_kernel_selector(c, args);
  if (auto tag = c.text("tag"); !tag.empty()) args.push_back("--tag=" + tag);
  KEET_TRY(doc, run_json(c, args));
  auto page = page_args(c, "limit");
  bool detail = c.arg("detail") == true;
  const json& all = at((*doc), "kernels");
  size_t points_total = 0;
  for (const auto& k : all) points_total += at(k, "points").size();
  json kernels = json::array();
  for (const auto& k : slice(all, page.offset, page.limit)) {
    json points = json::array();
    for (const auto& p : at(k, "points")) points.push_back(history_point(p, detail));
    // The history's key, whole: it is what kernel selects by exact name.
    kernels.push_back({{"kernel", str(k, "kernel")}, {"points", points}});
  }
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
  bool detail = c.arg("detail") == true;
  json all = at((*doc), "kernels").is_array() ? at((*doc), "kernels") : json::array();
  std::stable_sort(all.begin(), all.end(),
                   [](const json& a, const json& b) { return status_rank(a) < status_rank(b); });
  json kernels = json::array();
  for (const auto& k : slice(all, page.offset, page.limit))
    kernels.push_back({{"status", str(k, "status")},
                       {"name", short_name(str(k, "name"))},
                       {"before", snapshot_of(at(k, "before"), detail)},
                       {"after", snapshot_of(at(k, "after"), detail)},
                       {"change", optional_measure(at(k, "change"), "duration_ns", "relative change")},
                       {"message", str(k, "message")}});
  bool passed = at((*doc), "passed") == true;
  std::string text =
      fmt::format("{} against {}: {} regression(s), {} missing, {} new", passed ? "PASSED" : "FAILED",
                  str(*doc, "baseline"), integer(*doc, "regressions"), integer(*doc, "missing"), integer(*doc, "new"));
  json out = {{"report", *path},
              {"baseline", str(*doc, "baseline")},
              {"passed", passed},
              {"max_slowdown", measure("max_slowdown", at((*doc), "max_slowdown").get<double>(), "fraction")},
              {"min_delta", measure("min_delta_ns", at((*doc), "min_delta_ns").get<double>(), "ns")},
              {"regressions", integer(*doc, "regressions")},
              {"missing", integer(*doc, "missing")},
              {"new", integer(*doc, "new")},
              {"kernels", kernels}};
  set_page(out, kernels.size(), page.offset, static_cast<int64_t>(all.size()));
  return Answer{std::move(out), text};
}

using Handler = Outcome<Answer> (*)(const Call&);
const std::map<std::string, Handler, std::less<>>& handlers() {
  static const std::map<std::string, Handler, std::less<>> table = {
      {"list_kernels", list_kernels}, {"analyze_kernel", analyze_kernel},
      {"get_metrics", get_metrics},   {"source_hotspots", source_hotspots},
      {"explain_term", explain_term}, {"diff_reports", diff_reports},
      {"history", history},           {"gate", gate}};
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
