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

namespace keet::service {

struct LspOptions {
  std::string source_root;  // absolute; "" for suffix matching
  // A line gets a diagnostic when it carries at least this share of a
  // kernel's cost, or any of a finding's.
  double min_share = 0.05;
  size_t max_diagnostics = 100;                    // per file, costliest first
  std::function<void(std::string_view line)> log;  // stderr; may be empty
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
