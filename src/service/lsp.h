// The Language Server (`keet lsp`, LSP 3.17): KEET's reading of Nsight
// Compute reports shown on the source lines they attribute cost to,
// independent of the transport.
//
// - Diagnostics (textDocument/publishDiagnostics) on the lines of an open
//   file that carry a kernel's cost or a finding's: the line's share of the
//   kernel's stall samples (or executed instructions), its top stall reasons,
//   and the finding with its estimated gain.
// - Hover: the same, in full, for any line with cost.
// - Code lens on each kernel's definition: duration, bottleneck, top finding.
//   A kernel that marks no line (a build without -lineinfo) is found by its
//   name in the open file, and gets its lens there and an information
//   diagnostic saying why no line is marked and how to fix it.
// - Code actions on KEET's diagnostics, run by workspace/executeCommand:
//   "Explain <term>" (the knowledge base's entry, as window/showMessage),
//   "Open the HTML report for this kernel" (written, then window/showDocument
//   when the client can, else its path in a message) and, for a kernel with
//   no line table when a disassembler was found, "Show SASS of this hot spot"
//   (`keet source`'s instruction table, as a message). A diagnostic about a
//   knowledge-base term links to that entry (codeDescription, a file:// URI
//   of the entry written as text under `output_dir`).
//
// A path in a report maps to an open file by `source_root` (the file lies
// under it and the report's path ends with the file's path relative to it) or,
// without one, by the longest shared trailing path (at least the file name).
//
// Thread safety: all members may be called from several threads (the stdin
// loop and the report watcher of app/cmd_lsp.cc).
//
//   LspServer server({.source_root = "", .log = ...});
//   for each message read with read_lsp_message:
//     for (auto& out : server.handle(body)) write_lsp_message(std::cout, out);
//   server.set_report(path, index);   // publishes to open files
#pragma once
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "service/lsp_index.h"
#include "service/mcp.h"

namespace keet::service {

struct LspOptions {
  std::string source_root;  // absolute; "" for suffix matching
  // A line gets a diagnostic when it carries at least this share of a
  // kernel's cost, or any of a finding's.
  double min_share = 0.05;
  size_t max_diagnostics = 100;                    // per file, costliest first
  std::function<void(std::string_view line)> log;  // stderr; may be empty
  // Runs keet's commands in process (app::in_process_runner) for the HTML
  // report and SASS actions; empty: those actions are not offered.
  CommandRunner run;
  // Whether nvdisasm or cuobjdump was found: "Show SASS" is offered only then.
  bool disassembler = false;
  // Where the knowledge entries diagnostics link to and the kernels' HTML
  // reports are written; "": no links and no HTML report action.
  std::string output_dir;
};

class LspServer {
 public:
  explicit LspServer(LspOptions options);
  ~LspServer();

  // Handles one JSON-RPC message; returns the messages to send in order
  // (a response, notifications).
  std::vector<std::string> handle(std::string_view message);
  // Puts (or replaces) what one report says; returns publishDiagnostics for
  // the open files it changes. Before `initialize`, returns nothing.
  std::vector<std::string> set_report(const std::string& path, LspIndex index);
  // A window/logMessage notification (what a report gave, a report that
  // failed to load; type 1 error, 3 info): returned when the client is
  // initialized, else held and sent after the answer to `initialize`, as the
  // protocol asks.
  std::vector<std::string> log_message(std::string_view text, int type);

  bool exited() const;    // after the "exit" notification
  int exit_code() const;  // 0 when "shutdown" came first, else 1 (LSP)

 private:
  struct State;
  std::unique_ptr<State> state_;
  mutable std::mutex mutex_;
};

// Content-Length framing (LSP base protocol). Reads one message body into
// `body`; false at end of input. A missing or oversized length is an error
// the stream cannot recover from: `error` says why and false is returned.
bool read_lsp_message(std::istream& in, std::string& body, std::string& error, size_t max_bytes = size_t{64} << 20);
void write_lsp_message(std::ostream& out, std::string_view body);

// file:// URI <-> path (percent-encoding decoded / applied).
std::optional<std::string> path_of_uri(std::string_view uri);
std::string uri_of_path(std::string_view path);

}  // namespace keet::service
