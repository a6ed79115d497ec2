// The tools a model may call in `keet ask` / `keet chat`, answered from the
// report and the engine's diagnosis. Results are JSON text; names are redacted
// and paths withheld exactly as in the prompt.
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "llm/provider.h"
#include "model/report.h"

namespace keet::llm {

struct ToolContext {
  const model::Report* report = nullptr;
  const analysis::Diagnosis* diagnosis = nullptr;
  bool share_source = false;
  bool redact_names = false;
};

// The tool declarations; get_source is offered only when sharing is allowed.
std::vector<ToolSpec> tool_specs(const ToolContext& ctx);

// Runs one call; unknown tools and bad arguments give an {"error": ...} result
// the model can read, never an exception.
std::string run_tool(const ToolContext& ctx, const ToolCall& call);

// Overview of every kernel (index, name, duration, bottleneck, top finding).
std::string kernels_overview(const ToolContext& ctx, size_t max_kernels = 40);

}  // namespace keet::llm
