#include "llm/provider.h"
#include "util/error.h"

#include <fmt/format.h>

#include "llm/params.h"
#include "util/json.h"
#include "util/strings.h"

namespace keet::llm {

using nlohmann::json;

namespace {

// ---- helpers shared by the wire formats ----

std::string join_system(const ChatRequest& r) {
  std::string out;
  for (const auto& m : r.messages)
    if (m.role == Role::System) out += (out.empty() ? "" : "\n\n") + m.content;
  return out;
}

json function_tools(const ChatRequest& r) {
  json tools = json::array();
  for (const auto& t : r.tools)
    tools.push_back({{"type", "function"},
                     {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
  return tools;
}

// Tool arguments arrive as a JSON object or as a string holding one.
json arguments_of(const json& raw) {
  if (raw.is_object()) return raw;
  if (!raw.is_string()) return json::object();
  json parsed = json::parse(raw.get<std::string>(), nullptr, false);
  return parsed.is_object() ? parsed : json::object();
}

std::expected<json, std::string> parse_body(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::unexpected("reply is not a JSON object");
  return j;
}

int int_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int>() : 0;
}

std::string text_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

void attach_structured(ChatResponse& out, const ChatRequest& req) {
  if (!req.output) return;
  auto s = parse_structured(out.text, req.output->schema);
  if (s)
    out.structured = std::move(*s);
  else
    out.structured_error = s.error();
}

// ---- OpenAI Chat Completions (also vLLM, llama.cpp, LM Studio, Ollama /v1) ----

json openai_message(const Message& m) {
  static const char* roles[] = {"system", "user", "assistant", "tool"};
  json j = {{"role", roles[static_cast<int>(m.role)]}};
  if (m.role == Role::Tool) {
    j["tool_call_id"] = m.tool_call_id;
    j["content"] = m.content;
    return j;
  }
  j["content"] = m.content.empty() && !m.tool_calls.empty() ? json(nullptr) : json(m.content);
  for (const auto& c : m.tool_calls)
    j["tool_calls"].push_back(
        {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", json_text(c.arguments)}}}});
  return j;
}

HttpRequest openai_build(const ProviderConfig& cfg, const ChatRequest& r) {
  json body = {{"model", r.model}, {"messages", json::array()}};
  set_sampling(body, {cfg.provider, r.model, r.max_tokens, r.temperature, "max_tokens", "temperature"});
  for (const auto& m : r.messages) body["messages"].push_back(openai_message(m));
  if (!r.tools.empty()) body["tools"] = function_tools(r);
  if (r.output)
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", r.output->name}, {"strict", true}, {"schema", r.output->schema}}}};
  apply_overrides(body, cfg.params);
  HttpRequest req{cfg.base_url + "/chat/completions", {}, json_text(body)};
  if (!cfg.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg.api_key);
  return req;
}

std::expected<ChatResponse, std::string> openai_parse(const std::string& body, const ChatRequest& req) {
  KEET_TRY(j, parse_body(body));
  auto choices = j->find("choices");
  if (choices == j->end() || !choices->is_array() || choices->empty() || !(*choices)[0].contains("message"))
    return std::unexpected("reply has no choices[0].message");
  const json& msg = (*choices)[0]["message"];
  ChatResponse out;
  out.text = text_at(msg, "content");
  if (auto calls = msg.find("tool_calls"); calls != msg.end() && calls->is_array())
    for (const auto& c : *calls)
      out.tool_calls.push_back({text_at(c, "id"), text_at(c.value("function", json::object()), "name"),
                                arguments_of(c.value("function", json::object()).value("arguments", json()))});
  const json usage = j->value("usage", json::object());
  out.usage = {int_at(usage, "prompt_tokens"), int_at(usage, "completion_tokens")};
  attach_structured(out, req);
  return out;
}

// ---- Anthropic Messages ----

json anthropic_content(const Message& m) {
  if (m.role == Role::Tool) return {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
  return {{"type", "text"}, {"text", m.content}};
}

json anthropic_messages(const ChatRequest& r) {
  json msgs = json::array();
  for (const auto& m : r.messages) {
    if (m.role == Role::System) continue;
    std::string role = m.role == Role::Assistant ? "assistant" : "user";
    json blocks = json::array();
    if (!m.content.empty() || m.role == Role::Tool) blocks.push_back(anthropic_content(m));
    for (const auto& c : m.tool_calls)
      blocks.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", c.arguments}});
    // All results of one tool round go back in a single user message.
    if (!msgs.empty() && msgs.back()["role"] == role && m.role == Role::Tool)
      for (auto& b : blocks) msgs.back()["content"].push_back(b);
    else
      msgs.push_back({{"role", role}, {"content", blocks}});
  }
  return msgs;
}

HttpRequest anthropic_build(const ProviderConfig& cfg, const ChatRequest& r) {
  json body = {{"model", r.model}, {"messages", anthropic_messages(r)}};
  set_sampling(body, {cfg.provider, r.model, r.max_tokens, r.temperature, "max_tokens", "temperature"});
  if (auto sys = join_system(r); !sys.empty()) body["system"] = sys;
  json tools = json::array();
  for (const auto& t : r.tools)
    tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
  if (r.output) {
    // Structured output: a tool whose input is the answer, and the model is forced to call it.
    tools.push_back(
        {{"name", r.output->name}, {"description", r.output->description}, {"input_schema", r.output->schema}});
    body["tool_choice"] = {{"type", "tool"}, {"name", r.output->name}};
  }
  if (!tools.empty()) body["tools"] = tools;
  apply_overrides(body, cfg.params);
  HttpRequest req{cfg.base_url + "/v1/messages", {{"anthropic-version", "2023-06-01"}}, json_text(body)};
  if (!cfg.api_key.empty()) req.headers.emplace_back("x-api-key", cfg.api_key);
  return req;
}

void anthropic_block(const json& b, const ChatRequest& req, ChatResponse& out) {
  std::string type = text_at(b, "type");
  if (type == "text") out.text += text_at(b, "text");
  if (type != "tool_use") return;
  if (req.output && text_at(b, "name") == req.output->name) {
    out.text = json_text(b.value("input", json::object()));
    return;
  }
  out.tool_calls.push_back({text_at(b, "id"), text_at(b, "name"), arguments_of(b.value("input", json()))});
}

std::expected<ChatResponse, std::string> anthropic_parse(const std::string& body, const ChatRequest& req) {
  KEET_TRY(j, parse_body(body));
  auto content = j->find("content");
  if (content == j->end() || !content->is_array()) return std::unexpected("reply has no content array");
  ChatResponse out;
  for (const auto& b : *content) anthropic_block(b, req, out);
  const json usage = j->value("usage", json::object());
  out.usage = {int_at(usage, "input_tokens"), int_at(usage, "output_tokens")};
  attach_structured(out, req);
  return out;
}

// ---- Ollama native /api/chat ----

json ollama_message(const Message& m) {
  static const char* roles[] = {"system", "user", "assistant", "tool"};
  json j = {{"role", roles[static_cast<int>(m.role)]}, {"content", m.content}};
  if (m.role == Role::Tool) j["tool_name"] = m.tool_name;
  for (const auto& c : m.tool_calls)
    j["tool_calls"].push_back({{"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return j;
}

HttpRequest ollama_build(const ProviderConfig& cfg, const ChatRequest& r) {
  json body = {{"model", r.model}, {"messages", json::array()}, {"stream", false}};
  set_sampling(body,
               {cfg.provider, r.model, r.max_tokens, r.temperature, "options.num_predict", "options.temperature"});
  for (const auto& m : r.messages) body["messages"].push_back(ollama_message(m));
  if (!r.tools.empty()) body["tools"] = function_tools(r);
  if (r.output) body["format"] = r.output->schema;
  apply_overrides(body, cfg.params);
  return {cfg.base_url + "/api/chat", {}, json_text(body)};
}

std::expected<ChatResponse, std::string> ollama_parse(const std::string& body, const ChatRequest& req) {
  KEET_TRY(j, parse_body(body));
  auto msg = j->find("message");
  if (msg == j->end() || !msg->is_object()) return std::unexpected("reply has no message object");
  ChatResponse out;
  out.text = text_at(*msg, "content");
  if (auto calls = msg->find("tool_calls"); calls != msg->end() && calls->is_array())
    for (const auto& c : *calls) {
      json fn = c.value("function", json::object());
      out.tool_calls.push_back({fmt::format("call_{}", out.tool_calls.size()), text_at(fn, "name"),
                                arguments_of(fn.value("arguments", json()))});
    }
  out.usage = {int_at(*j, "prompt_eval_count"), int_at(*j, "eval_count")};
  attach_structured(out, req);
  return out;
}

// ---- a minimal JSON-schema check: types, required keys, nested items ----

bool type_matches(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return true;
}

std::string check_schema(const json& v, const json& schema, const std::string& path);

std::string check_type(const json& v, const json& schema, const std::string& path) {
  if (!schema.contains("type")) return "";
  const json& t = schema["type"];
  std::vector<std::string> types =
      t.is_array() ? t.get<std::vector<std::string>>() : std::vector<std::string>{t.get<std::string>()};
  for (const auto& type : types)
    if (type_matches(v, type)) return "";
  return fmt::format("{} should be {}", path, json_text(t));
}

std::string check_children(const json& v, const json& schema, const std::string& path) {
  if (v.is_object())
    for (const auto& key : schema.value("required", json::array())) {
      if (!v.contains(key.get<std::string>())) return fmt::format("{} lacks \"{}\"", path, key.get<std::string>());
      const std::string name = key.get<std::string>();
      json props = schema.value("properties", json::object());
      auto e = check_schema(v[name], props.value(name, json::object()), path + "." + name);
      if (!e.empty()) return e;
    }
  if (v.is_array() && schema.contains("items"))
    for (size_t i = 0; i < v.size(); ++i)
      if (auto e = check_schema(v[i], schema["items"], fmt::format("{}[{}]", path, i)); !e.empty()) return e;
  return "";
}

std::string check_schema(const json& v, const json& schema, const std::string& path) {
  auto e = check_type(v, schema, path);
  return e.empty() ? check_children(v, schema, path) : e;
}

// Some models wrap JSON in a Markdown fence despite being asked not to.
std::string strip_fence(std::string_view text) {
  text = trim(text);
  if (!text.starts_with("```")) return std::string(text);
  size_t first_nl = text.find('\n');
  size_t last = text.rfind("```");
  if (first_nl == std::string_view::npos || last <= first_nl) return std::string(text);
  return std::string(text.substr(first_nl + 1, last - first_nl - 1));
}

}  // namespace

std::expected<json, std::string> parse_structured(const std::string& text, const json& schema) {
  if (trim(text).empty()) return std::unexpected("the reply was empty");
  json j = json::parse(strip_fence(text), nullptr, false);
  if (j.is_discarded()) return std::unexpected("the reply was not valid JSON (truncated or malformed)");
  auto e = check_schema(j, schema, "answer");
  if (!e.empty()) return std::unexpected(e);
  return j;
}

const std::vector<Provider>& providers() {
  static const std::vector<Provider> table = {
      {"openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1", openai_build, openai_parse},
      {"anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com", anthropic_build,
       anthropic_parse},
      {"ollama", "", "OLLAMA_HOST", "http://localhost:11434", ollama_build, ollama_parse},
  };
  return table;
}

const Provider* find_provider(std::string_view name) {
  for (const auto& p : providers())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> redacted_headers(const HttpRequest& req) {
  auto out = req.headers;
  for (auto& [k, v] : out) {
    std::string lower = to_lower(k);
    if (lower == "authorization") v = "Bearer <redacted>";
    if (lower == "x-api-key") v = "<redacted>";
  }
  return out;
}

}  // namespace keet::llm
