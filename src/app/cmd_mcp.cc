// keet mcp: the MCP server (service/mcp.h) on standard input and output, as
// AI coding assistants start it: one JSON-RPC message per line each way.
// Standard output carries protocol messages only; logs go to standard error.
#include <iostream>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/in_process.h"
#include "service/mcp.h"
#include "util/strings.h"

namespace keet::app {
namespace {

struct McpArgs {
  std::vector<std::string> roots;
  std::string db;
};

// One line without its '\n' (and '\r'); a line over `max` bytes is cut to
// max + 1 bytes, the rest skipped, so the server refuses it with one error.
bool read_line(std::istream& in, std::string& line, size_t max) {
  line.clear();
  auto* buf = in.rdbuf();
  bool any = false;
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    any = true;
    if (c == '\n') break;
    if (line.size() <= max) line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

ExitCode run_mcp(Context& ctx, const McpArgs& a) {
  service::McpOptions opt;
  opt.run = in_process_runner(ctx.getenv);
  opt.roots = a.roots;
  opt.store = a.db;
  opt.log = [&ctx](std::string_view line) { ctx.err << "keet mcp: " << line << "\n"; };
  service::McpServer server(std::move(opt));
  ctx.err << fmt::format("keet mcp: serving KEET's tools on standard input and output (MCP {})\n",
                         service::McpServer::protocol_versions().front());
  std::istream& in = ctx.in ? *ctx.in : std::cin;
  std::string line;
  const size_t max = service::McpOptions{}.max_message_bytes;
  while (read_line(in, line, max)) {
    if (trim(line).empty()) continue;
    if (auto reply = server.handle_message(line)) {
      ctx.out << *reply << "\n";
      ctx.out.flush();  // the client waits for this line
    }
  }
  return ExitCode::Ok;
}

}  // namespace

Command mcp_command() {
  return {"mcp", "MCP server for AI coding assistants on standard input/output (see docs/mcp.md)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<McpArgs>();
            sub.add_option("--root", a->roots,
                           "folder the tools may read reports from (repeatable; default: the current directory)")
                ->check(CLI::ExistingDirectory);
            sub.add_option("--db", a->db,
                           "history store of the history and gate tools: PATH, sqlite:PATH or postgresql://... "
                           "(default $XDG_DATA_HOME/keet/history.sqlite)");
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_mcp(ctx, *a); }; });
          }};
}

}  // namespace keet::app
