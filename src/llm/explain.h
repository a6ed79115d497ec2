// `keet analyze --llm`: one structured explanation per kernel, verified, with
// one repair attempt for malformed answers and one self-correction round for
// unsupported numbers, invalid advice or contradictions.
#pragma once
#include "analysis/diagnosis.h"
#include "llm/client.h"
#include "llm/prompt.h"
#include "llm/result.h"
#include "model/report.h"

namespace keet::llm {

struct ExplainOptions {
  PromptOptions prompt;
  int max_tokens = 1500;  // completion budget
};

LlmResult explain_kernel(LlmClient& client, const analysis::KernelDiagnosis& d, const model::Kernel* k,
                         const ExplainOptions& opt = {});

// Shared with chat: sends `req`, and when the answer is malformed (cut-off
// reply, invalid JSON, schema mismatch) asks once more, telling the model what
// was wrong. Usage and cache state accumulate into `r`; on failure `r.error`
// says why and nullopt is returned.
std::optional<ChatResponse> send_with_repair(LlmClient& client, ChatRequest& req, LlmResult& r);

// An unavailable result naming the provider and the reason.
LlmResult unavailable(const LlmClient& client, std::string why);

}  // namespace keet::llm
