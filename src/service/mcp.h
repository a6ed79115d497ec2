// The MCP server (Model Context Protocol, revision 2025-06-18): KEET's tools
// for AI coding assistants, independent of the transport.
//
// `keet mcp` feeds it newline-delimited JSON-RPC from standard input
// (handle_message); `keet serve` mounts handle_http at /mcp (streamable HTTP).
// The tools (service/mcp_tools.h, declared in data/mcp/tools.json) answer by
// running KEET's own commands through McpOptions::run and projecting their
// documented JSON contracts through the table's shapes (service/projection.h),
// so the MCP server holds no analysis of its own.
//
// Thread safety: one McpServer may serve several HTTP requests at once; its
// sessions are guarded, and tool calls run concurrently.
//
// Mounting it (keet serve, app layer):
//   service::McpOptions o;
//   o.run = app::in_process_runner(ctx.getenv);  // app/in_process.h
//   o.roots = {...};  o.store = db;  o.allowed_origins = {...};
//   service::McpServer mcp(std::move(o));
//   // POST, GET and DELETE /mcp: mcp.handle_http({method, headers with
//   // lower-case names, body}) gives the status, headers and body to send.
// With cpp-httplib, raise set_keep_alive_max_count (5 by default): Node's
// fetch, which the official SDK client uses, fails a request sent on a
// connection the server closes after its fifth.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keet::service {

// What one keet command printed (the in-process runner: app/in_process.h).
struct CommandOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
};
// Runs `keet ARGS...` (argument 0 is the command name, e.g. "analyze").
using CommandRunner = std::function<CommandOutput(const std::vector<std::string>& args)>;

struct McpOptions {
  // Runs KEET's commands; app::in_process_runner() in the real program.
  CommandRunner run;
  // Reports may only be read under these folders (after symlinks are
  // resolved); relative report paths are taken from the first. Empty: the
  // current directory.
  std::vector<std::string> roots;
  // Reports keet's own command line named (keet chat's report), taken as they
  // are, "-" (standard input) included. Never a client's: keet mcp sets none.
  std::vector<std::string> own_reports;
  // keet ask/chat --allow-partial: the commands that read an own report
  // accept it truncated, as the chat did.
  bool own_reports_partial = false;
  // History store of the history and gate tools (keet --db syntax); empty:
  // keet's default ($XDG_DATA_HOME/keet/history.sqlite).
  std::string store;
  // Origins a browser may call the HTTP transport from, besides loopback
  // ones (http://localhost:*, http://127.0.0.1:*, http://[::1]:*). "*" allows any.
  std::vector<std::string> allowed_origins;
  uint64_t max_report_bytes = uint64_t{4} << 30;  // a larger report is refused
  size_t max_message_bytes = size_t{4} << 20;     // one JSON-RPC message
  size_t max_sessions = 64;                       // HTTP sessions held at once
  // A new session when max_sessions are held takes the place of the one
  // idle longest, if it has been idle this long; otherwise it is refused
  // (503), so no client can end the sessions other clients are using.
  std::chrono::seconds session_idle{600};
  std::function<std::chrono::steady_clock::time_point()> clock =
      std::chrono::steady_clock::now;  // tests pass their own
  // Where the server logs (stderr for keet mcp); never stdout. May be empty.
  std::function<void(std::string_view line)> log;
};

// One HTTP request as the HTTP server saw it.
struct HttpExchange {
  std::string method;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};
struct HttpReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

class McpServer {
 public:
  explicit McpServer(McpOptions);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // One JSON-RPC message of the stdio transport (one session per server).
  // The reply, or nullopt for a notification or a client's response.
  std::optional<std::string> handle_message(std::string_view json);

  // Streamable HTTP: POST a JSON-RPC message → application/json reply (202
  // with no body for notifications and responses); GET → 405 (no server-sent
  // event stream); DELETE ends the session. Mcp-Session-Id is issued by
  // initialize and required after it (400 without, 404 when unknown);
  // MCP-Protocol-Version, when sent, must be a supported revision (400);
  // an Origin that is not loopback or allowed is refused (403).
  HttpReply handle_http(const HttpExchange&);

  // Protocol revisions this server speaks, newest first.
  static const std::vector<std::string>& protocol_versions();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace keet::service
