// The prompt: a compact, budgeted rendering of the engine's diagnosis of one
// kernel. Privacy by default: no source lines and no file paths unless
// --share-source; --redact-names replaces kernel names with a stable hash.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::llm {

struct PromptOptions {
  bool share_source = false;
  bool redact_names = false;
  int token_budget = 2000;  // system + user, per kernel
};

struct Prompt {
  std::string system;
  std::string user;
  int estimated_tokens = 0;
  int metric_rows = 0;          // rows of the metric table kept
  int metric_rows_dropped = 0;  // rows trimmed to fit the budget
};

// Rough token count used for budgeting (about four characters per token).
int estimate_tokens(std::string_view text);

// "kernel_1a2b3c4d" for a redacted name; the name itself otherwise.
std::string kernel_label(const std::string& name, bool redact);

// Replaces file paths in free text with "<path>".
std::string scrub_paths(const std::string& text);

// The kernel's context block (device, launch, bottleneck, findings, metrics).
std::string kernel_context(const analysis::KernelDiagnosis& d, const model::Kernel* k, const PromptOptions& opt,
                           int max_metric_rows, int* rows_shown = nullptr);

// System + user prompt for the structured explanation, trimmed to the budget.
Prompt explain_prompt(const analysis::KernelDiagnosis& d, const model::Kernel* k, const PromptOptions& opt);

const std::string& chat_system_prompt();

// JSON schema of the structured answer: summary, reasoning, suggestions
// (text + finding id or null), questions, confidence.
const nlohmann::json& answer_schema();

}  // namespace keet::llm
