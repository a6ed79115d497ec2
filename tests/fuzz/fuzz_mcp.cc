// libFuzzer target: the MCP server's handling of a client's bytes
// (service/mcp.h). The first byte picks the transport: even, one stdio
// message (handle_message); odd, the body of an HTTP POST in an initialized
// session (handle_http). Both go through JSON-RPC framing, method dispatch,
// each tool's argument checking against its inputSchema, and report path
// resolution under a temporary root holding r.ncu-rep.
//
// The commands behind the tools are not fuzzed here (the reader and analyze
// targets cover them); the stand-in runner answers every command with the
// fuzzed bytes themselves, so each tool's reshaping code also meets JSON that
// is not its contract, which must give a tool error, never a crash. A crash,
// a sanitizer report or an escaping exception fails the target.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "service/mcp.h"

namespace {

using namespace keet;

std::string root_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("keet-fuzz-mcp-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d / "r.ncu-rep") << "NVR";
    return d.string();
  }();
  return dir;
}

service::McpServer& server(const std::string* echo) {
  static const std::string* current = nullptr;
  current = echo;
  static service::McpServer s([] {
    service::McpOptions o;
    o.roots = {root_dir()};
    o.run = [](const std::vector<std::string>&) {
      return service::CommandOutput{0, current ? *current : std::string(), ""};
    };
    return o;
  }());
  return s;
}

const std::string& session() {
  static const std::string id = [] {
    auto r = server(nullptr).handle_http(
        {"POST",
         {{"content-type", "application/json"}, {"accept", "application/json"}},
         R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}})"});
    for (const auto& [k, v] : r.headers)
      if (k == "Mcp-Session-Id") return v;
    __builtin_trap();  // initialize must open a session
  }();
  return id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto& s = server(&body);
  if (data[0] % 2 == 0) {
    s.handle_message(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
    (void)s.handle_message(body);
  } else {
    auto reply = s.handle_http({"POST",
                                {{"content-type", "application/json"},
                                 {"accept", "application/json, text/event-stream"},
                                 {"mcp-session-id", session()},
                                 {"mcp-protocol-version", "2025-06-18"}},
                                body});
    if (reply.status < 200 || reply.status > 599) __builtin_trap();
  }
  return 0;
}
