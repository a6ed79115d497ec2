#include "service/mcp.h"

#include "service/jsonrpc.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "service/mcp_page.h"
#include "service/mcp_tools.h"
#include "util/json.h"
#include "util/strings.h"

namespace keet::service {

// One MCP session. Named outside the anonymous namespace because McpServer::State holds them.
struct McpSession {
  std::string version;                           // negotiated at initialize
  bool ready = false;                            // initialize answered
  std::chrono::steady_clock::time_point used{};  // the last message that named it
};

namespace {

using nlohmann::json;

using jsonrpc::kInternalError;
using jsonrpc::kInvalidParams;
using jsonrpc::kInvalidRequest;
using jsonrpc::kMethodNotFound;
using jsonrpc::kParseError;

constexpr std::string_view kInstructions =
    "KEET diagnoses NVIDIA Nsight Compute reports (.ncu-rep, .ncu-repz, ncu/nvprof CSV) without a GPU or ncu. "
    "Call list_kernels on a report, then analyze_kernel on the kernels that matter: its findings carry the report's "
    "own numbers, each naming the metric it came from. get_metrics and source_hotspots show raw values and costly "
    "source lines; explain_term explains a metric, stall reason or finding id; diff_reports compares two runs; "
    "history and gate read the server's recorded runs.";

json rpc_error(const json& id, int code, std::string message) { return jsonrpc::error(id, code, std::move(message)); }
json rpc_result(const json& id, json result) { return jsonrpc::result(id, std::move(result)); }

// A parsed JSON-RPC message, sorted by what it asks of the server.
struct Message {
  enum class Kind { Request, Notification, Response, Invalid } kind = Kind::Invalid;
  json id;  // null unless a request (or an invalid message with a usable id)
  std::string method;
  json params = json::object();
  std::string why;  // Invalid: what is wrong
};

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

Message invalid(Message m, std::string why) {
  m.kind = Message::Kind::Invalid;
  m.why = std::move(why);
  return m;
}

Message classify(const json& j) {
  Message m;
  if (j.is_array()) return invalid(m, "batches are not part of MCP 2025-06-18: send one message at a time");
  if (!j.is_object()) return invalid(m, "a JSON-RPC message is an object");
  if (j.contains("id") && valid_id(j["id"])) m.id = j["id"];
  if (j.value("jsonrpc", json()) != "2.0") return invalid(m, "jsonrpc must be \"2.0\"");
  if (!j.contains("method")) {
    if (!j.contains("result") && !j.contains("error"))
      return invalid(m, "neither a request, a notification nor a response");
    m.kind = Message::Kind::Response;
    return m;
  }
  if (!j["method"].is_string()) return invalid(m, "method must be a string");
  m.method = j["method"].get<std::string>();
  if (j.contains("params")) m.params = j["params"];  // not an object: the method answers invalid params
  if (!j.contains("id")) {
    m.kind = Message::Kind::Notification;
    return m;
  }
  if (!valid_id(j["id"])) return invalid(m, "id must be a string or an integer");
  m.kind = Message::Kind::Request;
  return m;
}

// http(s)://localhost, 127.0.0.1 or [::1], with any port: a page served from
// the user's own machine. Anything else could be a DNS-rebinding page.
bool loopback_origin(const std::string& origin) {
  std::string o = to_lower(origin);
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!o.starts_with(scheme)) continue;
    std::string_view rest = std::string_view(o).substr(scheme.size());
    for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
      if (!rest.starts_with(host)) continue;
      std::string_view port = rest.substr(host.size());
      if (port.empty()) return true;
      if (port.front() != ':' || port.size() == 1) return false;
      return std::ranges::all_of(port.substr(1), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    }
  }
  return false;
}

std::string new_session_id() {
  std::random_device rd;  // /dev/urandom: ids cannot be guessed from one another
  std::string id;
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", rd());
  return id;
}

HttpReply rpc_reply(int status, const json& body) {
  return {status, {{"Content-Type", "application/json"}}, json_text(body)};
}
HttpReply http_error(int status, std::string message, std::vector<std::pair<std::string, std::string>> extra = {}) {
  auto reply = rpc_reply(status, rpc_error(nullptr, status == 400 ? kInvalidRequest : -32000, std::move(message)));
  reply.headers.insert(reply.headers.end(), extra.begin(), extra.end());
  return reply;
}

}  // namespace

const std::vector<std::string>& McpServer::protocol_versions() {
  static const std::vector<std::string> versions = {"2025-06-18", "2025-03-26", "2024-11-05"};
  return versions;
}

struct McpServer::State {
  McpOptions options;
  Tools tools;
  McpSession stdio;
  std::mutex mu;  // guards sessions
  std::map<std::string, McpSession> sessions;

  explicit State(McpOptions o) : options(std::move(o)), tools(options, ReportRoots::create(options.roots)) {}

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  static bool supported(const std::string& version) {
    const auto& v = protocol_versions();
    return std::ranges::find(v, version) != v.end();
  }

  // The client's revision when this server speaks it, else the newest this
  // server speaks (the client then decides whether it can go on).
  json initialize(McpSession& s, const Message& m) {
    if (!m.params.is_object() || !m.params.contains("protocolVersion") || !m.params["protocolVersion"].is_string())
      return rpc_error(m.id, kInvalidParams, "initialize: params.protocolVersion (a string) is required");
    std::string asked = m.params["protocolVersion"].get<std::string>();
    s.version = supported(asked) ? asked : protocol_versions().front();
    s.ready = true;
    return rpc_result(m.id, {{"protocolVersion", s.version},
                             {"capabilities", {{"tools", {{"listChanged", false}}}}},
                             {"serverInfo", {{"name", "keet"}, {"title", "KEET"}, {"version", KEET_VERSION}}},
                             {"instructions", kInstructions}});
  }

  json call_tool(const Message& m) {
    if (!m.params.is_object() || !m.params.contains("name") || !m.params["name"].is_string())
      return rpc_error(m.id, kInvalidParams, "tools/call: params.name (a string) is required");
    std::string name = m.params["name"].get<std::string>();
    json args = m.params.value("arguments", json::object());
    if (!args.is_object()) return rpc_error(m.id, kInvalidParams, "tools/call: params.arguments must be an object");
    auto outcome = tools.call(name, args);
    using Kind = ToolOutcome::Kind;
    if (outcome.kind == Kind::UnknownTool || outcome.kind == Kind::BadArguments) {
      log(fmt::format("tools/call {}: refused: {}", name, outcome.text));
      return rpc_error(m.id, kInvalidParams, outcome.text);
    }
    if (outcome.kind == Kind::ToolError) {
      log(fmt::format("tools/call {}: failed: {}", name, outcome.text));
      return rpc_result(m.id, {{"content", {{{"type", "text"}, {"text", outcome.text}}}}, {"isError", true}});
    }
    log(fmt::format("tools/call {}: ok", name));
    // One short text block and the structured answer: the JSON is not sent
    // again as text (it would double what an assistant's context pays for;
    // docs/mcp.md "What an answer looks like").
    return rpc_result(m.id, tool_result(outcome.text, outcome.structured));
  }

  json request(McpSession& s, const Message& m) {
    if (m.method == "initialize") return initialize(s, m);
    if (m.method == "ping") return rpc_result(m.id, json::object());
    if (!s.ready)
      return rpc_error(m.id, kInvalidRequest,
                       fmt::format("{}: the session is not initialized (send initialize first)", m.method));
    if (!m.params.is_object()) return rpc_error(m.id, kInvalidParams, m.method + ": params must be an object");
    if (m.method == "tools/list") return rpc_result(m.id, {{"tools", tool_declarations()}});
    if (m.method == "tools/call") return call_tool(m);
    return rpc_error(m.id, kMethodNotFound, "method not found: " + m.method);
  }

  // The reply to one message, or nullopt (notifications and responses).
  std::optional<json> dispatch(McpSession& s, const json& j) {
    Message m = classify(j);
    switch (m.kind) {
      case Message::Kind::Invalid:
        return rpc_error(m.id, kInvalidRequest, "invalid request: " + m.why);
      case Message::Kind::Response:
        return std::nullopt;  // this server sends no requests
      case Message::Kind::Notification:
        return std::nullopt;  // initialized, cancelled, progress: nothing to do
      case Message::Kind::Request:
        break;
    }
    try {
      return request(s, m);
    } catch (const std::exception& e) {  // never let one message take the server down
      log(fmt::format("{}: internal error: {}", m.method, e.what()));
      return rpc_error(m.id, kInternalError, "internal error");
    }
  }

  bool origin_allowed(const std::string& origin) const {
    if (loopback_origin(origin)) return true;
    const auto& allowed = options.allowed_origins;
    return std::ranges::any_of(allowed,
                               [&](const std::string& a) { return a == "*" || to_lower(a) == to_lower(origin); });
  }

  // The new session's id, or nullopt when every held session is in use.
  std::optional<std::string> add_session(McpSession s) {
    std::lock_guard lock(mu);
    auto now = options.clock();
    if (sessions.size() >= std::max<size_t>(options.max_sessions, 1)) {
      auto idlest = std::ranges::min_element(sessions, {}, [](const auto& kv) { return kv.second.used; });
      if (now - idlest->second.used < options.session_idle) return std::nullopt;
      log(fmt::format("session {}: ended after {} s idle, for a new one", idlest->first.substr(0, 8),
                      std::chrono::duration_cast<std::chrono::seconds>(now - idlest->second.used).count()));
      sessions.erase(idlest);
    }
    std::string id = new_session_id();
    s.used = now;
    sessions.emplace(id, std::move(s));
    return id;
  }

  std::optional<McpSession> find_session(const std::string& id) {
    std::lock_guard lock(mu);
    auto it = sessions.find(id);
    if (it == sessions.end()) return std::nullopt;
    it->second.used = options.clock();
    return it->second;
  }

  bool end_session(const std::string& id) {
    std::lock_guard lock(mu);
    return sessions.erase(id) > 0;
  }
};

McpServer::McpServer(McpOptions options) : state_(std::make_unique<State>(std::move(options))) {}
McpServer::~McpServer() = default;

std::optional<std::string> McpServer::handle_message(std::string_view text) {
  if (text.size() > state_->options.max_message_bytes)
    return json_text(rpc_error(
        nullptr, kInvalidRequest,
        fmt::format("message of {} bytes is over the limit of {}", text.size(), state_->options.max_message_bytes)));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return json_text(rpc_error(nullptr, kParseError, "parse error: not valid JSON"));
  auto reply = state_->dispatch(state_->stdio, j);
  if (!reply) return std::nullopt;
  return json_text(*reply);
}

namespace {

std::string header_of(const HttpExchange& ex, const std::string& name) {
  auto it = ex.headers.find(name);
  return it == ex.headers.end() ? std::string() : it->second;
}

bool accepts_json(const std::string& accept) {
  if (accept.empty()) return true;
  std::string a = to_lower(accept);
  return a.find("application/json") != std::string::npos || a.find("*/*") != std::string::npos ||
         a.find("application/*") != std::string::npos;
}

bool is_initialize(const json& j) {
  return j.is_object() && j.contains("id") && j.value("method", json()) == "initialize";
}

}  // namespace

HttpReply McpServer::handle_http(const HttpExchange& ex) {
  State& st = *state_;
  if (auto origin = header_of(ex, "origin"); !origin.empty() && !st.origin_allowed(origin))
    return http_error(403, "Forbidden: origin " + origin + " is neither loopback nor allowed (docs/mcp.md)");
  std::string sid = header_of(ex, "mcp-session-id");
  if (ex.method == "DELETE") {
    if (sid.empty()) return http_error(400, "Bad Request: Mcp-Session-Id header is required");
    if (!st.end_session(sid)) return http_error(404, "Not Found: no such session");
    return {200, {}, ""};
  }
  if (ex.method != "POST")  // no server-sent event stream: every answer comes with its POST
    return http_error(405, "Method Not Allowed: POST a JSON-RPC message", {{"Allow", "POST, DELETE"}});
  if (!to_lower(header_of(ex, "content-type")).starts_with("application/json"))
    return http_error(415, "Unsupported Media Type: Content-Type must be application/json");
  if (!accepts_json(header_of(ex, "accept")))
    return http_error(406, "Not Acceptable: the client must accept application/json");
  if (auto v = header_of(ex, "mcp-protocol-version"); !v.empty() && !State::supported(v))
    return http_error(400, "Bad Request: unsupported MCP-Protocol-Version " + v);
  if (ex.body.size() > st.options.max_message_bytes) return http_error(413, "Payload Too Large");
  json j = json::parse(ex.body, nullptr, false);
  if (j.is_discarded()) return rpc_reply(400, rpc_error(nullptr, kParseError, "parse error: not valid JSON"));
  if (is_initialize(j)) {
    McpSession fresh;
    auto reply = st.dispatch(fresh, j);
    HttpReply r = rpc_reply(200, *reply);
    if (!fresh.ready) return r;
    auto id = st.add_session(fresh);
    if (!id)
      return http_error(
          503,
          fmt::format("Service Unavailable: all {} MCP sessions are in use; retry later, or end one with DELETE",
                      st.options.max_sessions),
          {{"Retry-After", "30"}});
    r.headers.emplace_back("Mcp-Session-Id", *id);
    return r;
  }
  if (sid.empty()) return http_error(400, "Bad Request: Mcp-Session-Id header is required (send initialize first)");
  auto session = st.find_session(sid);
  if (!session) return http_error(404, "Not Found: no such session (it ended, or the server restarted)");
  auto reply = st.dispatch(*session, j);
  if (!reply) return {202, {}, ""};
  return rpc_reply(200, *reply);
}

}  // namespace keet::service
