// A conversation about a report (`keet ask`, `keet chat`): the model calls
// tools through the provider's native tool calling, up to a round limit; every
// reply is verified like an explanation, with one self-correction round.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/client.h"
#include "llm/prompt.h"
#include "llm/result.h"
#include "llm/tools.h"

namespace keet::llm {

struct ChatOptions {
  int max_tool_rounds = 8;
  int max_tokens = 1500;
  PromptOptions prompt;
  int focus_kernel = -1;  // index of the kernel whose full context opens the chat; -1: only if there is one
};

class ChatSession {
 public:
  ChatSession(LlmClient& client, ToolContext tools, ChatOptions opt);

  // One user turn: tool rounds, the verified reply. The reply (marked) joins the history.
  LlmResult turn(const std::string& user_text);

  const std::vector<Message>& messages() const { return messages_; }
  int prompt_tokens_estimate() const { return context_tokens_; }
  // The whole exchange (tool calls and results included) for --save.
  nlohmann::json transcript() const;
  // What was asked and answered, as CommonMark, for chat's /save FILE.
  std::string transcript_markdown() const;

  // Switches the kernel under discussion (chat's /kernel N): the next request
  // carries that kernel's context and its bottleneck is checked. False when
  // no kernel of this session has that index.
  bool focus(int kernel_index);
  int focus_kernel() const { return opt_.focus_kernel; }

 private:
  LlmResult answer(const std::string& user_text);
  std::string opening_context() const;
  VerifyContext verify_context() const;
  bool run_tool_round(const ChatResponse& res);

  LlmClient& client_;
  ToolContext tools_;
  ChatOptions opt_;
  std::vector<Message> messages_;
  std::vector<LlmResult> results_;
  std::vector<KnownValue> tool_known_;  // the numbers tool answers gave, for verification
  std::vector<std::string> log_;        // markdown blocks: questions, replies, focus changes
  int context_tokens_ = 0;
};

}  // namespace keet::llm
