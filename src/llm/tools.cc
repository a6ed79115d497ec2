#include "llm/tools.h"

#include <fmt/format.h>

#include <algorithm>

#include <sstream>

#include "kb/knowledge_base.h"
#include "llm/prompt.h"
#include "model/units.h"
#include "util/embedded_data.h"
#include "util/json.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::llm {

using nlohmann::json;

namespace {

std::string name_of(const ToolContext& ctx, const analysis::KernelDiagnosis& d) {
  return kernel_label(d.display_name(), ctx.redact_names);
}

const analysis::KernelDiagnosis* find_kernel(const ToolContext& ctx, const json& arg) {
  std::string key = arg.is_number() ? std::to_string(arg.get<int>()) : arg.is_string() ? arg.get<std::string>() : "";
  key = std::string(trim(key));
  if (key.starts_with("#")) key.erase(0, 1);
  for (const auto& d : ctx.diagnosis->kernels) {
    if (std::to_string(d.index) == key || name_of(ctx, d) == key) return &d;
    if (!ctx.redact_names && (d.report_name() == key || d.display == key)) return &d;
  }
  return nullptr;
}

const model::Kernel* model_kernel(const ToolContext& ctx, int index) {
  if (!ctx.report) return nullptr;
  for (const auto& k : ctx.report->kernels)
    if (k.index == index) return &k;
  return nullptr;
}

json error(const std::string& what) { return {{"error", what}}; }

json evidence_json(const std::vector<analysis::Evidence>& ev) {
  json out = json::array();
  for (const auto& e : ev) out.push_back({{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}});
  return out;
}

json tool_list_kernels(const ToolContext& ctx, const json&) {
  json out = json::array();
  for (const auto& d : ctx.diagnosis->kernels)
    out.push_back({{"index", d.index},
                   {"name", name_of(ctx, d)},
                   {"duration_ns", d.duration_ns ? json(*d.duration_ns) : json(nullptr)},
                   {"bottleneck", analysis::class_name(d.bottleneck.cls)},
                   {"top_finding", d.findings.empty() ? json(nullptr) : json(d.findings[0].id)}});
  return out;
}

json tool_get_metrics(const ToolContext& ctx, const json& args) {
  const auto* d = find_kernel(ctx, args.value("kernel", json()));
  if (!d) return error("no such kernel; call list_kernels");
  const model::Kernel* k = model_kernel(ctx, d->index);
  if (!k) return error("the report holds no metric values for this kernel");
  std::string pattern = args.value("pattern", "");
  // The model chooses the pattern: RE2 bounds its time and size, and one it
  // cannot compile is matched as plain text.
  auto re = Pattern::compile(pattern, {.case_insensitive = true});
  json out = json::object();
  for (const auto& m : k->metrics) {
    auto v = m.value.as_number();
    if (!v) continue;
    bool hit = re ? re->search(m.name) : m.name.find(pattern) != std::string::npos;
    if (hit) out[m.name] = {{"value", *v}, {"unit", m.unit.empty() ? model::unit_of(m.name) : m.unit}};
    if (out.size() >= 50) break;
  }
  if (out.empty()) return error("no numeric metric matches '" + pattern + "'");
  return out;
}

json source_json(const ToolContext& ctx, const analysis::SourceRef& s) {
  json j = ctx.share_source ? json{{"file", s.file}, {"line", s.line}, {"share", s.share}, {"text", s.text}}
                            : json{{"line", s.line}, {"share", s.share}};
  if (s.is_sass()) j["offset"] = s.offset;  // a machine instruction, no source text: shown either way
  if (s.is_sass() && !s.sass.empty()) j["sass"] = s.sass;
  return j;
}

json tool_get_findings(const ToolContext& ctx, const json& args) {
  const auto* d = find_kernel(ctx, args.value("kernel", json()));
  if (!d) return error("no such kernel; call list_kernels");
  auto text = [&](const std::string& t) { return ctx.share_source ? t : scrub_paths(t); };
  json out = {{"device", {{"name", d->device}, {"compute_capability", d->compute_capability}}},
              {"bottleneck",
               {{"class", analysis::class_name(d->bottleneck.cls)},
                {"confidence", d->bottleneck.confidence},
                {"evidence", evidence_json(d->bottleneck.evidence)}}},
              {"findings", json::array()}};
  for (const auto& f : d->findings) {
    json fj = {{"id", f.id},
               {"severity", analysis::severity_name(f.severity)},
               {"title", text(f.title)},
               {"explanation", text(f.explanation)},
               {"evidence", evidence_json(f.evidence)},
               {"estimated_speedup", f.estimated_speedup ? json(*f.estimated_speedup) : json(nullptr)},
               {"advice", json::array()},
               {"source", json::array()}};
    for (const auto& a : f.advice) fj["advice"].push_back(text(a));
    for (const auto& s : f.source) fj["source"].push_back(source_json(ctx, s));
    out["findings"].push_back(std::move(fj));
  }
  return out;
}

// "40-50" or "42" -> [first, last]
std::pair<int, int> line_range(const json& arg) {
  std::string s = arg.is_string() ? arg.get<std::string>() : arg.is_number() ? std::to_string(arg.get<int>()) : "";
  auto parts = split(s, '-');
  auto first = parse_number(parts.empty() ? "" : parts[0]);
  auto last = parts.size() > 1 ? parse_number(parts[1]) : first;
  if (!first || !last) return {0, -1};
  return {static_cast<int>(*first), static_cast<int>(*last)};
}

std::string numbered_lines(const std::string& content, int first, int last) {
  std::istringstream in(content);
  std::string line, out;
  for (int n = 1; std::getline(in, line) && n <= last; ++n)
    if (n >= first) out += fmt::format("{:5} | {}\n", n, line);
  return out;
}

json tool_get_source(const ToolContext& ctx, const json& args) {
  if (!ctx.share_source) return error("source sharing is off (run with --share-source)");
  const auto* d = find_kernel(ctx, args.value("kernel", json()));
  if (!d) return error("no such kernel; call list_kernels");
  const model::Kernel* k = model_kernel(ctx, d->index);
  const model::Module* mod = k && ctx.report ? ctx.report->module_for(*k) : nullptr;
  if (!mod || mod->files.empty()) return error("the report embeds no source for this kernel");
  auto [first, last] = line_range(args.value("lines", json()));
  if (first <= 0 || last < first) return error("lines must look like \"40-60\"");
  last = std::min(last, first + 79);
  std::string want = args.value("file", "");
  for (const auto& f : mod->files)
    if (want.empty() || f.path.ends_with(want))
      return {{"file", f.path}, {"lines", numbered_lines(f.content, first, last)}};
  return error("no embedded file matches '" + want + "'");
}

json tool_explain(const ToolContext&, const json& args) {
  auto kb = kb::builtin();
  if (!kb) return error("the knowledge base is not available: " + kb.error().message);
  auto hits = (*kb)->search(args.value("term", ""), 3);
  if (!hits || hits->empty()) return error("no knowledge-base entry for '" + args.value("term", "") + "'");
  json out = json::array();
  for (const auto& h : *hits)
    out.push_back({{"id", h.entry->id},
                   {"title", h.entry->title},
                   {"summary", h.entry->summary},
                   {"how_to_read", h.entry->how_to_read},
                   {"typical", h.entry->typical},
                   {"remedies", h.entry->remedies}});
  return out;
}

json key_metrics(const model::Kernel* k) {
  json out = json::object();
  if (!k) return out;
  auto text = embedded_file("llm/prompt.json");
  json names = text ? json::parse(*text, nullptr, false).value("metrics", json::array()) : json::array();
  for (const auto& n : names)
    if (auto v = k->number(n.get<std::string>())) out[n.get<std::string>()] = *v;
  return out;
}

json kernel_summary(const ToolContext& ctx, const analysis::KernelDiagnosis& d) {
  json ids = json::array();
  for (const auto& f : d.findings) ids.push_back(f.id);
  return {{"index", d.index},
          {"name", name_of(ctx, d)},
          {"duration_ns", d.duration_ns ? json(*d.duration_ns) : json(nullptr)},
          {"bottleneck", analysis::class_name(d.bottleneck.cls)},
          {"findings", ids},
          {"metrics", key_metrics(model_kernel(ctx, d.index))}};
}

json tool_compare(const ToolContext& ctx, const json& args) {
  const auto* a = find_kernel(ctx, args.value("kernel_a", json()));
  const auto* b = find_kernel(ctx, args.value("kernel_b", json()));
  if (!a || !b) return error("no such kernel; call list_kernels");
  return {{"a", kernel_summary(ctx, *a)}, {"b", kernel_summary(ctx, *b)}};
}

using ToolFn = json (*)(const ToolContext&, const json&);

// The answer to each tool data/llm/tools.json declares.
constexpr std::pair<std::string_view, ToolFn> kAnswers[] = {
    {"list_kernels", tool_list_kernels}, {"get_metrics", tool_get_metrics}, {"get_findings", tool_get_findings},
    {"get_source", tool_get_source},     {"explain", tool_explain},         {"compare", tool_compare},
};

struct ToolEntry {
  ToolSpec spec;
  ToolFn run;
  bool needs_source;
};

// The declarations are compiled in and checked by the unit tests
// (LlmTools.EveryDeclaredToolAnswers); one without an answer is not offered.
const std::vector<ToolEntry>& tool_table() {
  static const std::vector<ToolEntry> table = [] {
    std::vector<ToolEntry> out;
    auto text = embedded_file("llm/tools.json");
    json doc = text ? json::parse(*text, nullptr, false) : json();
    if (!doc.is_object() || !doc.contains("tools") || !doc["tools"].is_array()) return out;
    for (const auto& t : doc["tools"]) {
      if (!t.is_object()) continue;
      std::string name = t.value("name", "");
      auto answer = std::ranges::find(kAnswers, name, &std::pair<std::string_view, ToolFn>::first);
      if (answer == std::end(kAnswers)) continue;
      out.push_back({{name, t.value("description", ""), t.value("parameters", json::object())},
                     answer->second,
                     t.value("needs_source", false)});
    }
    return out;
  }();
  return table;
}

}  // namespace

std::vector<ToolSpec> tool_specs(const ToolContext& ctx) {
  std::vector<ToolSpec> out;
  for (const auto& t : tool_table())
    if (!t.needs_source || ctx.share_source) out.push_back(t.spec);
  return out;
}

// The model writes tool arguments: they are bounded (size, shape) before any
// tool sees them, and a value of the wrong type is an error for the model, not
// an exception for keet.
constexpr size_t kMaxToolArgumentBytes = 4096;
constexpr size_t kMaxToolNameShown = 64;

std::string run_tool(const ToolContext& ctx, const ToolCall& call) {
  if (!call.arguments.is_object() && !call.arguments.is_null())
    return json_text(error("tool arguments must be a JSON object"));
  if (json_text(call.arguments).size() > kMaxToolArgumentBytes)
    return json_text(error(fmt::format("tool arguments longer than {} bytes", kMaxToolArgumentBytes)));
  for (const auto& t : tool_table())
    if (t.spec.name == call.name) {
      if (t.needs_source && !ctx.share_source)
        return json_text(error("source sharing is off (run with --share-source)"));
      try {
        return json_text(t.run(ctx, call.arguments.is_null() ? json::object() : call.arguments));
      } catch (const json::exception&) {
        return json_text(error("an argument has the wrong type; see the tool's parameters"));
      }
    }
  return json_text(error("unknown tool '" + call.name.substr(0, kMaxToolNameShown) + "'"));
}

std::string kernels_overview(const ToolContext& ctx, size_t max_kernels) {
  std::string out;
  size_t n = 0;
  for (const auto& d : ctx.diagnosis->kernels) {
    if (n++ == max_kernels) {
      out += fmt::format("... {} more kernels (call list_kernels)\n", ctx.diagnosis->kernels.size() - max_kernels);
      break;
    }
    out += fmt::format("#{} {}: {}-bound, top finding {}\n", d.index, name_of(ctx, d),
                       analysis::class_name(d.bottleneck.cls), d.findings.empty() ? "none" : d.findings[0].id);
  }
  return out;
}

}  // namespace keet::llm
