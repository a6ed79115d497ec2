// libFuzzer target: the Language Server's handling of an editor's bytes
// (service/lsp.h). The bytes are read as the LSP base protocol (Content-Length
// framing) and each message goes through method dispatch, open documents,
// diagnostics, hover, code lens, code actions and their commands over an
// index whose kernels and lines the messages can reach (file:///w/src/k.cu,
// kernel k with lines, kernel g without: found by name); the commands' runs
// are a stand-in that answers at once, and the knowledge entries are written
// under one temporary folder. Bytes that frame no message go in whole as one
// message. A crash, a sanitizer report or an escaping exception fails the target.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>

#include "service/lsp.h"

namespace {

using namespace keet;

service::LspIndex index() {
  service::LspIndex idx;
  service::LspKernel k;
  k.report = "/r.ncu-rep";
  k.identity.display = "k(float*)";
  k.identity.duration_ns = 1000;
  k.function = "k";
  k.bottleneck = "memory-bound";
  k.top_finding = "t";
  k.cost_metric = "stall samples";
  k.cost_total = 10;
  analysis::SourceRef start;
  start.file = "/x/src/k.cu";
  start.line = 2;
  k.start = start;
  idx.kernels.push_back(k);
  idx.lines.push_back({"/x/src/k.cu", 3, 0, 0.9, 9, 9, 4, {{"long_scoreboard", 0.5}}, {}});
  idx.lines.back().findings.push_back({"memory.uncoalesced_global", "F", analysis::Severity::High, 1.0, 1.5});
  idx.lines.push_back({"k.cu", 1, 0, 0.1, 1, 1, 1, {}, {}});
  k.identity.index = 1;
  k.function = "void g<(int)1>(float*)";
  k.start.reset();
  k.line_gap = service::LspLineGap::NoLineTable;
  idx.kernels.push_back(k);
  return idx;
}

service::CommandOutput stand_in(const std::vector<std::string>& args) {
  return {args.size() % 2 ? 0 : 1, "+0x0010 LDG\n", "why\n"};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  static const std::string out = (std::filesystem::temp_directory_path() / "keet-fuzz-lsp").string();
  service::LspServer server({.source_root = "",
                             .min_share = 0.05,
                             .max_diagnostics = 8,
                             .log = {},
                             .run = stand_in,
                             .disassembler = true,
                             .output_dir = out});
  server.set_report("/r.ncu-rep", index());
  server.handle(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})");
  std::istringstream in(bytes);
  std::string body, error;
  int messages = 0;
  while (messages < 64 && service::read_lsp_message(in, body, error, 1 << 20)) {
    ++messages;
    for (const auto& out : server.handle(body))
      if (out.empty()) __builtin_trap();
  }
  if (messages == 0) (void)server.handle(bytes);
  (void)service::path_of_uri(bytes);
  return 0;
}
