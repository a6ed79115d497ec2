// LLM flags and wiring shared by `keet analyze --llm`, `keet ask` and `keet chat`:
// provider selection, privacy switches, cache, dry run, and the exit-code rule
// (0 unless --llm-required and the LLM was unavailable: then 3).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "app/app.h"
#include "app/common.h"
#include "llm/chat.h"
#include "llm/client.h"
#include "llm/config.h"
#include "llm/prompt.h"
#include "llm/result.h"
#include "service/chat_tools.h"

namespace keet::app {

struct LlmArgs {
  std::string spec;  // --llm PROVIDER:MODEL
  bool share_source = false;
  bool redact_names = false;
  bool dry_run = false;
  bool no_cache = false;
  bool required = false;                              // --llm-required
  int timeout_s = 0;                                  // 0: the config file's or the default
  int retries = llm::RetryPolicy{}.max_attempts - 1;  // --llm-retries: attempts after the first
  std::vector<std::string> params;                    // --llm-param KEY=VALUE (llm/params.h)
};
void add_llm_args(CLI::App& sub, LlmArgs& a);

// Owns what a command needs to talk to the LLM: HTTP client, cache, client.
class LlmRuntime {
 public:
  // Fails (BadInput) on a bad provider spec; a missing key is a warning, since
  // local servers need none.
  static Result<std::unique_ptr<LlmRuntime>> create(Context& ctx, const LlmArgs& a);
  llm::LlmClient& client() { return *client_; }
  llm::PromptOptions prompt_options() const;

 private:
  LlmArgs args_;
  std::unique_ptr<llm::HttpClient> http_;
  std::unique_ptr<llm::ResponseCache> cache_;
  std::unique_ptr<llm::LlmClient> client_;
};

// Ok, or Dependency when --llm-required and any result is unavailable (a dry
// run counts as available: nothing was meant to be sent).
ExitCode llm_exit(const LlmArgs& a, const std::vector<llm::LlmResult>& results);

}  // namespace keet::app

namespace keet::app {

// What ask and chat share: the report, the engine's diagnosis of the selected
// kernels, the runtime, the model's tools (the agent tools of
// data/mcp/tools.json, run in process) and a chat session over them.
struct ChatSetup {
  Loaded loaded;
  analysis::Diagnosis diagnosis;
  std::unique_ptr<LlmRuntime> runtime;
  std::unique_ptr<service::ChatTools> tools;
  std::unique_ptr<llm::ChatSession> session;
};
struct ChatArgs {
  ReportArgs report;
  LlmArgs llm;
  std::string format;
  std::string save;
  int max_tool_rounds = 8;
};
void add_chat_args(CLI::App& sub, ChatArgs& a);
Result<std::unique_ptr<ChatSetup>> prepare_chat(Context& ctx, const ChatArgs& a);
// Writes the transcript for --save; an unwritable file is an error naming it.
Result<void> save_transcript(const ChatSetup& s, const std::string& path);
// One line per kernel: the deterministic verdict, always shown.
std::string deterministic_summary(const analysis::Diagnosis& d, bool redact);

}  // namespace keet::app
