#include "support/fake_llm_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace keet::testing {

using nlohmann::json;

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
// OpenAI's reasoning models (as the API lists them: o1, o3, o4-mini, gpt-5 and
// their variants), spelled out here rather than read from KEET's data so the
// fake server stays an independent stand-in for the API.
bool openai_reasoning_model(const std::string& model) {
  for (const char* family : {"o1", "o3", "o4", "gpt-5"})
    if (model == family || model.starts_with(std::string(family) + "-") || model.starts_with(std::string(family) + "."))
      return true;
  return false;
}

// The 400 the Chat Completions API answers for a parameter the model does not
// take, in its error shape; nullopt when the body is acceptable.
std::optional<std::string> openai_parameter_error(const std::string& path, const std::string& body) {
  if (!path.ends_with("/chat/completions")) return std::nullopt;
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !openai_reasoning_model(j.value("model", ""))) return std::nullopt;
  auto error = [](const std::string& message, const std::string& param, const std::string& code) {
    return json{{"error", {{"message", message}, {"type", "invalid_request_error"}, {"param", param}, {"code", code}}}}
        .dump();
  };
  if (j.contains("max_tokens"))
    return error(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "max_tokens", "unsupported_parameter");
  if (j.contains("temperature") && j["temperature"] != 1)
    return error("Unsupported value: 'temperature' does not support " + j["temperature"].dump() +
                     " with this model. Only the default (1) value is supported.",
                 "temperature", "unsupported_value");
  return std::nullopt;
}

}  // namespace

FakeLlmServer::FakeLlmServer() : server_(std::make_unique<httplib::Server>()) {
  server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    ScriptedReply reply{500, R"({"error":{"message":"no scripted reply left"}})"};
    {
      std::lock_guard lock(mu_);
      ReceivedRequest rec{req.path, {}, req.body};
      for (const auto& [k, v] : req.headers) rec.headers[lower(k)] = v;
      received_.push_back(std::move(rec));
      if (auto refused = openai_parameter_error(req.path, req.body)) {
        res.status = 400;
        return res.set_content(*refused, "application/json");
      }
      if (!replies_.empty()) {
        reply = replies_.front();
        replies_.pop_front();
      }
    }
    if (reply.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.delay_ms));
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k, v);
    if (reply.trickle_ms == 0 && reply.pad_bytes == 0) return res.set_content(reply.body, "application/json");
    res.set_chunked_content_provider("application/json", [reply](size_t offset, httplib::DataSink& sink) {
      if (offset < reply.body.size()) {
        size_t n = reply.trickle_ms > 0 ? 1 : reply.body.size() - offset;
        if (reply.trickle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.trickle_ms));
        return sink.write(reply.body.data() + offset, n);
      }
      if (offset < reply.body.size() + reply.pad_bytes) {
        static const std::string spaces(1 << 16, ' ');
        return sink.write(spaces.data(), std::min(spaces.size(), reply.body.size() + reply.pad_bytes - offset));
      }
      sink.done();
      return true;
    });
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // cpp-httplib 0.11 has no wait_until_ready(): poll until the loop runs.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeLlmServer::~FakeLlmServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeLlmServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeLlmServer::script(ScriptedReply r) {
  std::lock_guard lock(mu_);
  replies_.push_back(std::move(r));
}

std::vector<ReceivedRequest> FakeLlmServer::received() const {
  std::lock_guard lock(mu_);
  return received_;
}

std::string openai_text_reply(const std::string& content, int prompt_tokens, int completion_tokens) {
  return json{{"id", "chatcmpl-1"},
              {"object", "chat.completion"},
              {"choices",
               {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
              {"usage",
               {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens}}}}
      .dump();
}

std::string openai_tool_reply(const std::string& name, const json& args, const std::string& id) {
  json call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
  return json{{"id", "chatcmpl-2"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}},
                 {"finish_reason", "tool_calls"}}}},
              {"usage", {{"prompt_tokens", 80}, {"completion_tokens", 10}}}}
      .dump();
}

std::string anthropic_text_reply(const std::string& text) {
  return json{{"id", "msg_1"},
              {"type", "message"},
              {"role", "assistant"},
              {"content", {{{"type", "text"}, {"text", text}}}},
              {"stop_reason", "end_turn"},
              {"usage", {{"input_tokens", 120}, {"output_tokens", 60}}}}
      .dump();
}

std::string anthropic_tool_reply(const std::string& name, const json& input, const std::string& id) {
  return json{{"id", "msg_2"},
              {"type", "message"},
              {"role", "assistant"},
              {"content", {{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}},
              {"stop_reason", "tool_use"},
              {"usage", {{"input_tokens", 90}, {"output_tokens", 20}}}}
      .dump();
}

std::string ollama_text_reply(const std::string& content) {
  return json{{"model", "m"},
              {"message", {{"role", "assistant"}, {"content", content}}},
              {"done", true},
              {"prompt_eval_count", 110},
              {"eval_count", 40}}
      .dump();
}

std::string ollama_tool_reply(const std::string& name, const json& args) {
  return json{{"model", "m"},
              {"message",
               {{"role", "assistant"},
                {"content", ""},
                {"tool_calls", {{{"function", {{"name", name}, {"arguments", args}}}}}}}},
              {"done", true},
              {"prompt_eval_count", 70},
              {"eval_count", 15}}
      .dump();
}

}  // namespace keet::testing
