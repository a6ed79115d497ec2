#include "llm/tools.h"

#include <fmt/format.h>

#include "llm/prompt.h"
#include "util/json.h"

namespace keet::llm {

using nlohmann::json;

namespace {

json error(const std::string& what) { return {{"error", what}}; }

void collect_measures(const json& j, std::vector<KnownValue>& out) {
  if (j.is_object()) {
    auto metric = j.find("metric"), value = j.find("value");
    if (metric != j.end() && metric->is_string() && value != j.end() && value->is_number()) {
      auto unit = j.find("unit");
      out.push_back({value->get<double>(), unit != j.end() && unit->is_string() ? unit->get<std::string>() : "",
                     metric->get<std::string>()});
    }
    for (const auto& [key, sub] : j.items()) collect_measures(sub, out);
  } else if (j.is_array()) {
    for (const auto& sub : j) collect_measures(sub, out);
  }
}

}  // namespace

std::vector<ToolSpec> tool_specs(const ToolContext& ctx) {
  return ctx.tools ? ctx.tools->specs() : std::vector<ToolSpec>{};
}

// The model writes tool arguments: they are bounded (size, shape) before any
// tool sees them, and a value of the wrong type is an error for the model, not
// an exception for keet.
constexpr size_t kMaxToolArgumentBytes = 4096;
constexpr size_t kMaxToolNameShown = 64;

json tool_answer(const ToolContext& ctx, const ToolCall& call) {
  if (!call.arguments.is_object() && !call.arguments.is_null()) return error("tool arguments must be a JSON object");
  if (json_text(call.arguments).size() > kMaxToolArgumentBytes)
    return error(fmt::format("tool arguments longer than {} bytes", kMaxToolArgumentBytes));
  if (!ctx.tools) return error("unknown tool '" + call.name.substr(0, kMaxToolNameShown) + "'");
  try {
    return ctx.tools->answer(call.name, call.arguments.is_null() ? json::object() : call.arguments);
  } catch (const json::exception&) {
    return error("an argument has the wrong type; see the tool's parameters");
  }
}

std::vector<KnownValue> measured_in(const json& answer) {
  std::vector<KnownValue> out;
  collect_measures(answer, out);
  return out;
}

std::string kernels_overview(const ToolContext& ctx, size_t max_kernels) {
  std::string out;
  size_t n = 0;
  for (const auto& d : ctx.diagnosis->kernels) {
    if (n++ == max_kernels) {
      out += fmt::format("... {} more kernels (call list_kernels)\n", ctx.diagnosis->kernels.size() - max_kernels);
      break;
    }
    out += fmt::format("#{} {}: {}-bound, top finding {}\n", d.index, kernel_label(d.display_name(), ctx.redact_names),
                       analysis::class_name(d.bottleneck.cls), d.findings.empty() ? "none" : d.findings[0].id);
  }
  return out;
}

}  // namespace keet::llm
