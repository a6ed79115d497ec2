// The tools a model may call in `keet ask` / `keet chat`. Which tools exist and
// what they answer is not this layer's: keet's agent tools are declared once
// (data/mcp/tools.json, shared with the MCP server) and answered by
// service::ChatTools, which the app hands in as a ToolBox. This layer bounds
// what the model sends before any tool sees it, and gives the chat's opening
// overview of the kernels.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "llm/provider.h"
#include "llm/verify.h"
#include "model/report.h"

namespace keet::llm {

class ToolBox {
 public:
  virtual ~ToolBox() = default;
  // The declarations offered to the model.
  virtual std::vector<ToolSpec> specs() const = 0;
  // One call's answer as JSON; a failure is {"error": "..."} the model can read.
  virtual nlohmann::json answer(const std::string& name, const nlohmann::json& arguments) const = 0;
};

struct ToolContext {
  const model::Report* report = nullptr;
  const analysis::Diagnosis* diagnosis = nullptr;
  bool redact_names = false;       // the overview's kernel names (the tools redact their own answers)
  const ToolBox* tools = nullptr;  // none: the model is offered no tool
};

std::vector<ToolSpec> tool_specs(const ToolContext& ctx);

// Runs one call; unknown tools and bad arguments give an {"error": ...} result
// the model can read, never an exception.
nlohmann::json tool_answer(const ToolContext& ctx, const ToolCall& call);

// The numbers a tool answer hands the model: each {metric, value, unit}
// object in it (the agent tools' "measure"). A reply may restate them.
std::vector<KnownValue> measured_in(const nlohmann::json& answer);

// Overview of every kernel (index, name, duration, bottleneck, top finding).
std::string kernels_overview(const ToolContext& ctx, size_t max_kernels = 40);

}  // namespace keet::llm
