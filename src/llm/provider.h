// Providers: each turns KEET's provider-neutral chat request into its own wire
// format and parses its reply. Registered by name ("openai", "anthropic",
// "ollama"); adding one means adding an entry to the table in provider.cc.
#pragma once
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/http.h"
#include "llm/params.h"

namespace keet::llm {

struct ToolCall {
  std::string id;  // provider's id (Ollama has none: we make one up)
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

enum class Role { System, User, Assistant, Tool };

struct Message {
  Role role = Role::User;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant turns that called tools
  std::string tool_call_id;          // tool results: which call they answer
  std::string tool_name;
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters;  // JSON schema of the arguments object
};

// Structured output: the provider is asked, by its native mechanism, for a JSON
// object matching `schema`.
struct OutputSchema {
  std::string name;
  std::string description;
  nlohmann::json schema;
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;  // the first may be the system prompt
  std::vector<ToolSpec> tools;
  std::optional<OutputSchema> output;
  int max_tokens = 1500;
  double temperature = 0.2;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  Usage& operator+=(const Usage& o) {
    prompt_tokens += o.prompt_tokens;
    completion_tokens += o.completion_tokens;
    return *this;
  }
};

struct ChatResponse {
  std::string text;                          // free text (or the raw JSON text)
  std::optional<nlohmann::json> structured;  // parsed structured output, if any
  std::string structured_error;              // why `structured` is missing when asked for
  std::vector<ToolCall> tool_calls;
  Usage usage;
  bool cached = false;
};

struct ProviderConfig {
  std::string provider;  // registry name
  std::string model;
  std::string base_url;
  std::string api_key;                // from the environment only; never printed or stored
  std::vector<ParamOverride> params;  // --llm-param, applied to every request body
};

struct Provider {
  std::string_view name;
  std::string_view key_env;  // "" when no key is needed
  std::string_view base_env;
  std::string_view default_base;
  std::function<HttpRequest(const ProviderConfig&, const ChatRequest&)> build;
  // Parses a 200 body. An error means the reply is unusable (not JSON, cut off).
  std::function<std::expected<ChatResponse, std::string>(const std::string& body, const ChatRequest&)> parse;
};

const std::vector<Provider>& providers();
const Provider* find_provider(std::string_view name);

// The headers with secrets replaced, for --dry-run and error messages.
std::vector<std::pair<std::string, std::string>> redacted_headers(const HttpRequest& req);

// Parses structured-output text into JSON; explains what is wrong when it fails.
std::expected<nlohmann::json, std::string> parse_structured(const std::string& text, const nlohmann::json& schema);

}  // namespace keet::llm
