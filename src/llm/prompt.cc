#include "llm/prompt.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/derived.h"
#include "io/sha256.h"
#include "model/units.h"
#include "util/embedded_data.h"
#include "util/pattern.h"

namespace keet::llm {

using nlohmann::json;

namespace {

const json& prompt_data() {
  static const json j = [] {
    auto text = embedded_file("llm/prompt.json");
    return text ? json::parse(*text, nullptr, false) : json::object();
  }();
  return j;
}

// Numbers as the model should quote them: integers whole, others to a few digits.
std::string number_text(double v) {
  if (std::abs(v) < 1e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (std::abs(v) >= 100) return fmt::format("{:.1f}", v);
  if (std::abs(v) >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

std::string short_unit(const std::string& unit) {
  static const std::map<std::string, std::string> names = {
      {"nsecond", "ns"}, {"usecond", "us"}, {"msecond", "ms"}, {"second", "s"},        {"byte", "B"},
      {"Kbyte", "KB"},   {"Mbyte", "MB"},   {"Gbyte", "GB"},   {"byte/second", "B/s"}, {"Gbyte/second", "GB/s"}};
  auto it = names.find(unit);
  return it == names.end() ? unit : it->second;
}

std::string value_text(double v, const std::string& unit) {
  std::string u = short_unit(unit);
  if (u.empty()) return number_text(v);
  return number_text(v) + (u == "%" || u == "x" ? "" : " ") + u;
}

std::string evidence_line(const analysis::Evidence& e) {
  std::string line = fmt::format("{} = {}", e.metric, value_text(e.value, e.unit));
  if (!e.threshold.empty()) line += fmt::format(" (threshold {})", e.threshold);
  return line;
}

std::string duration_text(std::optional<double> ns) {
  if (!ns) return "unknown";
  return fmt::format("{} ns ({} us)", number_text(*ns), number_text(*ns / 1e3));
}

std::string source_lines(const analysis::Finding& f, const PromptOptions& opt) {
  std::string out;
  for (const auto& s : f.source) {
    if (s.is_sass()) {  // a machine instruction, no source text: shown either way
      out += fmt::format("    hot SASS instruction at +{:#x} ({:.0f}% of cost){}\n", s.offset, s.share * 100,
                         s.sass.empty() ? std::string() : ": " + s.sass);
      continue;
    }
    if (opt.share_source)
      out += fmt::format("    source {}:{} ({:.0f}% of cost): {}\n", s.file, s.line, s.share * 100, s.text);
    else
      out += fmt::format("    hot line {} ({:.0f}% of cost)\n", s.line, s.share * 100);
  }
  return out;
}

std::string finding_block(const analysis::Finding& f, const PromptOptions& opt, bool with_advice) {
  std::string out = fmt::format("- [{}] {}: {}\n", f.id, analysis::severity_name(f.severity), scrub_paths(f.title));
  if (!f.explanation.empty()) out += "    " + (opt.share_source ? f.explanation : scrub_paths(f.explanation)) + "\n";
  for (const auto& e : f.evidence) out += "    evidence: " + evidence_line(e) + "\n";
  if (f.estimated_speedup)
    out += fmt::format("    estimated whole-kernel speedup if fixed: {}x\n", number_text(*f.estimated_speedup));
  if (with_advice)
    for (const auto& a : f.advice) out += "    engine advice: " + (opt.share_source ? a : scrub_paths(a)) + "\n";
  return out + source_lines(f, opt);
}

std::vector<std::string> metric_rows(const model::Kernel* k) {
  std::vector<std::string> rows;
  if (!k) return rows;
  for (const auto& name : prompt_data().value("metrics", json::array())) {
    auto id = analysis::quantity_id(name.get<std::string>());
    auto v = id ? analysis::metric_quantity_spelled(*k, *id) : std::nullopt;
    if (v) rows.push_back(fmt::format("{} = {}", v->metric, value_text(v->value, v->unit)));
  }
  return rows;
}

std::string header(const analysis::KernelDiagnosis& d, const PromptOptions& opt) {
  std::string name = kernel_label(d.display_name(), opt.redact_names);
  std::string out = fmt::format("Kernel #{}: {}\n", d.index, name);
  out += fmt::format("Device: {}, compute capability {}\n", d.device, d.compute_capability);
  out += fmt::format("Launch: grid ({}, {}, {}), block ({}, {}, {}); duration {}\n", d.grid.x, d.grid.y, d.grid.z,
                     d.block.x, d.block.y, d.block.z, duration_text(d.duration_ns));
  out += fmt::format("Bottleneck (engine): {}-bound, confidence {}. {}\n", analysis::class_name(d.bottleneck.cls),
                     number_text(d.bottleneck.confidence), scrub_paths(d.bottleneck.summary));
  for (const auto& e : d.bottleneck.evidence) out += "  evidence: " + evidence_line(e) + "\n";
  if (!d.library.empty()) {
    out += fmt::format("Library kernel ({}): the user calls it and cannot edit its code; advice is about the call:\n",
                       d.library);
    for (const auto& a : d.library_advice) out += "  - " + scrub_paths(a) + "\n";
  }
  return out;
}

std::string derived_block(const analysis::KernelDiagnosis& d, size_t max_rows) {
  if (d.derived.empty() || max_rows == 0) return "";
  std::string out = "Derived values:\n";
  for (size_t i = 0; i < d.derived.size() && i < max_rows; ++i) out += "  " + evidence_line(d.derived[i]) + "\n";
  return out;
}

// How much of the optional material a prompt keeps; trimmed to fit the budget.
struct Keep {
  int metric_rows;
  size_t derived_rows;
  bool advice;
  size_t findings;
};

std::string context_with(const analysis::KernelDiagnosis& d, const model::Kernel* k, const PromptOptions& opt,
                         const Keep& keep, int* rows_shown) {
  std::string out = header(d, opt);
  out += "Findings (most impactful first):\n";
  for (size_t i = 0; i < d.findings.size() && i < keep.findings; ++i)
    out += finding_block(d.findings[i], opt, keep.advice);
  if (d.findings.empty()) out += "  none\n";
  out += derived_block(d, keep.derived_rows);
  auto rows = metric_rows(k);
  int shown = std::min<int>(keep.metric_rows, rows.size());
  if (shown > 0) out += "Key metrics:\n";
  for (int i = 0; i < shown; ++i) out += "  " + rows[i] + "\n";
  if (rows_shown) *rows_shown = shown;
  return out;
}

}  // namespace

int estimate_tokens(std::string_view text) { return static_cast<int>((text.size() + 3) / 4); }

std::string kernel_label(const std::string& name, bool redact) {
  return redact ? "kernel_" + io::sha256_hex(name).substr(0, 8) : name;
}

std::string scrub_paths(const std::string& text) {
  static const Pattern path = *Pattern::compile(
      R"((?:[A-Za-z]:)?(?:[/\\][\w.+-]+){2,}|\b[\w.+-]+(?:/[\w.+-]+)+\.(?:cuh?|cpp|cc|cxx|c|hpp|hh|h|py)\b)");
  return path.replace_all(text, "<path>");
}

std::string kernel_context(const analysis::KernelDiagnosis& d, const model::Kernel* k, const PromptOptions& opt,
                           int max_metric_rows, int* rows_shown) {
  return context_with(d, k, opt, {max_metric_rows, d.derived.size(), true, d.findings.size()}, rows_shown);
}

Prompt explain_prompt(const analysis::KernelDiagnosis& d, const model::Kernel* k, const PromptOptions& opt) {
  Prompt p;
  p.system = prompt_data().value("system", "");
  int all_rows = static_cast<int>(metric_rows(k).size());
  const std::string ask = "\nExplain why this kernel is slow and what exactly to change.\n";
  // Trim in order of least value to the explanation: metric rows, derived
  // values, then engine advice, then the least impactful findings.
  Keep keep{all_rows, d.derived.size(), true, d.findings.size()};
  for (;;) {
    int shown = 0;
    p.user = context_with(d, k, opt, keep, &shown) + ask;
    p.metric_rows = shown;
    p.estimated_tokens = estimate_tokens(p.system) + estimate_tokens(p.user);
    if (p.estimated_tokens <= opt.token_budget) break;
    if (keep.metric_rows > 0)
      --keep.metric_rows;
    else if (keep.derived_rows > 0)
      --keep.derived_rows;
    else if (keep.advice)
      keep.advice = false;
    else if (keep.findings > 1)
      --keep.findings;
    else
      break;
  }
  p.metric_rows_dropped = all_rows - p.metric_rows;
  return p;
}

const std::string& chat_system_prompt() {
  static const std::string s = prompt_data().value("chat_system", "");
  return s;
}

const json& answer_schema() {
  static const json schema = json::parse(R"({
    "type": "object",
    "additionalProperties": false,
    "required": ["summary", "reasoning", "suggestions", "questions", "confidence"],
    "properties": {
      "summary": {"type": "string"},
      "reasoning": {"type": "string"},
      "suggestions": {"type": "array", "items": {
        "type": "object", "additionalProperties": false, "required": ["text", "finding"],
        "properties": {"text": {"type": "string"}, "finding": {"type": ["string", "null"]}}}},
      "questions": {"type": "array", "items": {"type": "string"}},
      "confidence": {"type": "number"}
    }
  })");
  return schema;
}

}  // namespace keet::llm
