// A loopback HTTP server for LLM tests: cpp-httplib on 127.0.0.1 with an
// ephemeral port, answering each POST with the next scripted reply and
// recording what it received (path, headers, body). Like the real Chat
// Completions API, it answers 400 (OpenAI's error JSON, no scripted reply
// used) when a reasoning model (o1, o3, o4-mini, gpt-5...) is sent
// `max_tokens` or a temperature other than 1.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace keet::testing {

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::map<std::string, std::string> headers;
  int delay_ms = 0;      // answer late (timeout tests)
  int trickle_ms = 0;    // send the body one byte at a time, this far apart
  size_t pad_bytes = 0;  // then this many spaces (a huge body, never held in memory here)
};

struct ReceivedRequest {
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

class FakeLlmServer {
 public:
  FakeLlmServer();
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://127.0.0.1:PORT
  void script(ScriptedReply r);
  std::vector<ReceivedRequest> received() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::deque<ScriptedReply> replies_;
  std::vector<ReceivedRequest> received_;
};

// Wire-format replies of each provider.
std::string openai_text_reply(const std::string& content, int prompt_tokens = 100, int completion_tokens = 50);
std::string openai_tool_reply(const std::string& name, const nlohmann::json& args, const std::string& id = "call_1");
std::string anthropic_text_reply(const std::string& text);
std::string anthropic_tool_reply(const std::string& name, const nlohmann::json& input,
                                 const std::string& id = "toolu_1");
std::string ollama_text_reply(const std::string& content);
std::string ollama_tool_reply(const std::string& name, const nlohmann::json& args);

}  // namespace keet::testing
