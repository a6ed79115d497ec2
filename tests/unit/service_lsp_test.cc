// The Language Server (service/lsp.h) in-process: framing, the message
// sequence an editor sends, diagnostics on the lines an index names, hover,
// code lenses on kernel definitions, path matching, and bad messages. The
// index is written here as data; tests/e2e/lsp_test.cc and the Neovim test
// (tests/lsp) build it from real reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "service/lsp.h"
#include "service/lsp_index.h"

namespace keet {
namespace {

using nlohmann::json;
using service::LspIndex;
using service::LspServer;

constexpr std::string_view kTransposeSource =
    "#include <cuda_runtime.h>\n"                                           // 1
    "\n"                                                                    // 2
    "__global__ void transposeNaive(float* out, const float* in, int n)\n"  // 3
    "{\n"                                                                   // 4
    "  int x = blockIdx.x * 32 + threadIdx.x;\n"                            // 5
    "  int y = blockIdx.y * 32 + threadIdx.y;\n"                            // 6
    "  out[x * n + y] = in[y * n + x];\n"                                   // 7
    "}\n";                                                                  // 8

// One kernel, two costly lines: line 7 (a high finding's 90%) and line 5.
LspIndex index_for(const std::string& report_file) {
  LspIndex idx;
  service::LspKernel k;
  k.report = "/runs/transpose.ncu-rep";
  k.identity.index = 0;
  k.identity.display = "transposeNaive(float*, const float*, int)";
  k.identity.duration_ns = 123456;
  k.function = "transposeNaive";
  k.bottleneck = "memory-bound";
  k.top_finding = "Uncoalesced global accesses";
  k.top_speedup = 1.6;
  k.cost_metric = "stall samples";
  k.cost_total = 1000;
  idx.kernels.push_back(k);
  service::LspLine hot{report_file, 7, 0, 0.70, 700, 700, 40, {{"long_scoreboard", 0.6}, {"lg_throttle", 0.2}}, {}};
  hot.findings.push_back(
      {"memory.uncoalesced_global", "Uncoalesced global accesses", analysis::Severity::High, 0.9, 1.6});
  idx.lines.push_back(hot);
  idx.lines.push_back({report_file, 5, 0, 0.08, 80, 80, 20, {{"wait", 0.5}}, {}});
  idx.lines.push_back({report_file, 6, 0, 0.01, 10, 10, 20, {}, {}});  // under --min-share: hover only
  return idx;
}

struct Session {
  LspServer server;
  int next_id = 1;
  explicit Session(service::LspOptions o = {}) : server(std::move(o)) {}
  std::vector<json> send(const json& m) {
    std::vector<json> out;
    for (const auto& s : server.handle(m.dump())) out.push_back(json::parse(s));
    return out;
  }
  json request(const std::string& method, json params) {
    auto out = send({{"jsonrpc", "2.0"}, {"id", next_id++}, {"method", method}, {"params", std::move(params)}});
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? json() : out[0];
  }
  std::vector<json> notify(const std::string& method, json params) {
    return send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  json open(const std::string& path, std::string_view text = kTransposeSource) {
    auto out =
        notify("textDocument/didOpen",
               {{"textDocument",
                 {{"uri", service::uri_of_path(path)}, {"languageId", "cuda"}, {"version", 1}, {"text", text}}}});
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? json() : out[0];
  }
  void start() {
    auto init = request("initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", json::object()}});
    EXPECT_TRUE(init["result"]["capabilities"]["hoverProvider"].get<bool>());
    EXPECT_TRUE(notify("initialized", json::object()).empty());
  }
};

std::vector<int> lines_of(const json& publish) {
  std::vector<int> out;
  for (const auto& d : publish["params"]["diagnostics"]) out.push_back(d["range"]["start"]["line"].get<int>() + 1);
  return out;
}

TEST(Lsp, DiagnosticsFallOnTheLinesTheReportNamesCostliestFirst) {
  Session s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("/home/ci/build/src/transpose.cu"));
  s.start();
  json pub = s.open("/work/project/src/transpose.cu");
  EXPECT_EQ(pub["method"], "textDocument/publishDiagnostics");
  EXPECT_EQ(lines_of(pub), (std::vector<int>{7, 5}));  // line 6 holds 1% (< 5%)
  const auto& first = pub["params"]["diagnostics"][0];
  EXPECT_EQ(first["severity"], 2);  // a high finding, 70% of the kernel here
  EXPECT_EQ(first["code"], "memory.uncoalesced_global");
  EXPECT_EQ(first["source"], "keet");
  EXPECT_EQ(first["message"],
            "70.0% of transposeNaive's stall samples (stalls: long_scoreboard 60.0%, lg_throttle 20.0%); "
            "Uncoalesced global accesses: 90.0% of its cost on this line, est. speedup 1.60x");
  // The range covers the code, not its indentation.
  EXPECT_EQ(first["range"]["start"]["character"], 2);
  EXPECT_EQ(first["range"]["end"]["character"], 33);
  EXPECT_EQ(pub["params"]["diagnostics"][1]["severity"], 4);  // a hot line, no finding
}

TEST(Lsp, AFileOfTheSameNameElsewhereIsNotTheReportsFileWhenABetterMatchExists) {
  Session s;
  auto idx = index_for("/home/ci/build/src/transpose.cu");
  idx.lines.push_back({"/home/ci/build/other/transpose.cu", 2, 0, 0.5, 500, 500, 0, {}, {}});
  s.server.set_report("/runs/transpose.ncu-rep", idx);
  s.start();
  EXPECT_EQ(lines_of(s.open("/work/project/src/transpose.cu")), (std::vector<int>{7, 5}));
  EXPECT_EQ(lines_of(s.open("/work/project/other/transpose.cu")), (std::vector<int>{2}));
  EXPECT_TRUE(lines_of(s.open("/work/project/src/kernel.cu")).empty());
}

TEST(Lsp, SourceRootRequiresTheFileUnderItAndItsRelativePathInTheReport) {
  Session s({.source_root = "/work/project"});
  s.server.set_report("/runs/transpose.ncu-rep", index_for("/home/ci/build/src/transpose.cu"));
  s.start();
  EXPECT_EQ(lines_of(s.open("/work/project/src/transpose.cu")), (std::vector<int>{7, 5}));
  EXPECT_TRUE(lines_of(s.open("/work/elsewhere/src/transpose.cu")).empty());
  EXPECT_TRUE(lines_of(s.open("/work/project/other/transpose.cu")).empty());  // report says src/transpose.cu
}

TEST(Lsp, HoverGivesTheLinesCostStallsAndFinding) {
  Session s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  s.open("/p/src/transpose.cu");
  std::string uri = service::uri_of_path("/p/src/transpose.cu");
  json h = s.request("textDocument/hover",
                     {{"textDocument", {{"uri", uri}}}, {"position", {{"line", 6}, {"character", 4}}}});
  std::string text = h["result"]["contents"]["value"];
  EXPECT_EQ(h["result"]["contents"]["kind"], "markdown");
  EXPECT_NE(text.find("`transposeNaive(float*, const float*, int)` (transpose.ncu-rep, kernel 0)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("this line: **70.0%** of the kernel's stall samples (700 of 1000); 40 executed instructions"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stalls on this line: long_scoreboard 60.0%, lg_throttle 20.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("**Uncoalesced global accesses** (high): 90.0% of its cost is on this line; est. speedup 1.60x"),
            std::string::npos)
      << text;
  // A line under --min-share has no diagnostic but still a hover; a line with no cost has none.
  json quiet = s.request("textDocument/hover",
                         {{"textDocument", {{"uri", uri}}}, {"position", {{"line", 5}, {"character", 0}}}});
  EXPECT_NE(quiet["result"]["contents"]["value"].get<std::string>().find("**1.0%**"), std::string::npos);
  json none = s.request("textDocument/hover",
                        {{"textDocument", {{"uri", uri}}}, {"position", {{"line", 0}, {"character", 0}}}});
  EXPECT_TRUE(none["result"].is_null());
}

TEST(Lsp, CodeLensSitsOnTheKernelsDefinition) {
  Session s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  s.open("/p/src/transpose.cu");
  json lens =
      s.request("textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path("/p/src/transpose.cu")}}}});
  ASSERT_EQ(lens["result"].size(), 1u) << lens.dump();
  EXPECT_EQ(lens["result"][0]["range"]["start"]["line"], 2);
  EXPECT_EQ(lens["result"][0]["command"]["title"],
            "keet: 123.46 us · memory-bound · Uncoalesced global accesses (est. speedup 1.60x)");
  // A Triton kernel is a Python def.
  s.open("/p/kern.py", "import triton\n@triton.jit\ndef transposeNaive(x_ptr, n):\n    pass\n");
  lens = s.request("textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path("/p/kern.py")}}}});
  ASSERT_EQ(lens["result"].size(), 1u);
  EXPECT_EQ(lens["result"][0]["range"]["start"]["line"], 2);
  // A call of the kernel is not its definition.
  s.open("/p/main.cu", "int main() {\n  transposeNaive<<<1, 1>>>(a, b, n);\n}\n");
  lens = s.request("textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path("/p/main.cu")}}}});
  EXPECT_TRUE(lens["result"].empty()) << lens.dump();
}

TEST(Lsp, AReportReadLaterPublishesToOpenFilesAndCloseClears) {
  Session s;
  s.start();
  EXPECT_TRUE(lines_of(s.open("/p/src/transpose.cu")).empty());
  auto out = s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(lines_of(json::parse(out[0])), (std::vector<int>{7, 5}));
  // The report gone (its file deleted): its diagnostics go too.
  out = s.server.set_report("/runs/transpose.ncu-rep", {});
  EXPECT_TRUE(lines_of(json::parse(out[0])).empty());
  auto closed =
      s.notify("textDocument/didClose", {{"textDocument", {{"uri", service::uri_of_path("/p/src/transpose.cu")}}}});
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_TRUE(closed[0]["params"]["diagnostics"].empty());
}

TEST(Lsp, LinesPastTheEndOfAnEditedFileAreNotShown) {
  Session s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  EXPECT_EQ(lines_of(s.open("/p/src/transpose.cu", "a\nb\nc\nd\ne\nf")), (std::vector<int>{5}));
}

TEST(Lsp, ProtocolErrorsAndShutdown) {
  Session s;
  auto early = s.request("textDocument/hover", json::object());
  EXPECT_EQ(early["error"]["code"], -32002);
  auto bad = s.server.handle("{not json");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(json::parse(bad[0])["error"]["code"], -32700);
  s.start();
  EXPECT_EQ(s.request("workspace/symbol", json::object())["error"]["code"], -32601);
  EXPECT_TRUE(s.notify("$/cancelRequest", {{"id", 3}}).empty());
  EXPECT_EQ(s.request("textDocument/hover",
                      {{"textDocument", {{"uri", "file:///p/x.cu"}}}, {"position", json::object()}})["result"],
            nullptr);  // a file not opened with us
  EXPECT_TRUE(s.request("shutdown", nullptr)["result"].is_null());
  EXPECT_FALSE(s.server.exited());
  s.notify("exit", nullptr);
  EXPECT_TRUE(s.server.exited());
  EXPECT_EQ(s.server.exit_code(), 0);

  Session rude;
  rude.start();
  rude.notify("exit", nullptr);
  EXPECT_EQ(rude.server.exit_code(), 1);  // exit without shutdown
}

TEST(Lsp, LogMessagesWaitForInitialize) {
  Session s;
  EXPECT_TRUE(s.server.log_message("r.ncu-rep: 1 kernels", 3).empty());  // the client has not spoken yet
  auto out = s.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].contains("result"));  // the answer first, then what was held
  EXPECT_EQ(out[1]["method"], "window/logMessage");
  EXPECT_EQ(out[1]["params"]["message"], "keet: r.ncu-rep: 1 kernels");
  EXPECT_EQ(out[1]["params"]["type"], 3);
  EXPECT_EQ(s.server.log_message("later", 1).size(), 1u);
}

TEST(Lsp, FramingReadsContentLengthMessagesAndRefusesBrokenOnes) {
  std::istringstream in(
      "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
      "content-length: 4\r\n\r\nnull");
  std::string body, error;
  ASSERT_TRUE(service::read_lsp_message(in, body, error));
  EXPECT_EQ(body, "{}");
  ASSERT_TRUE(service::read_lsp_message(in, body, error));
  EXPECT_EQ(body, "null");
  EXPECT_FALSE(service::read_lsp_message(in, body, error));
  EXPECT_EQ(error, "");  // a clean end

  for (auto [input, why] : std::vector<std::pair<std::string, std::string>>{
           {"Content-Type: x\r\n\r\n{}", "a message without Content-Length"},
           {"Content-Length: twelve\r\n\r\n", "a Content-Length that is not a number"},
           {"Content-Length: 99999999999\r\n\r\n", "a message of 99999999999 bytes (at most 67108864)"},
           {"Content-Length: 10\r\n\r\n{}", "input ended inside a message"},
           {"garbage\r\n\r\n", "a header line without ':'"}}) {
    std::istringstream bad(input);
    EXPECT_FALSE(service::read_lsp_message(bad, body, error));
    EXPECT_EQ(error, why) << input;
  }
  std::ostringstream out;
  service::write_lsp_message(out, "{\"a\":1}");
  EXPECT_EQ(out.str(), "Content-Length: 7\r\n\r\n{\"a\":1}");
}

TEST(Lsp, PathsAndUris) {
  EXPECT_EQ(service::shared_suffix("/home/ci/src/k.cu", "/work/src/k.cu"), 2);
  EXPECT_EQ(service::shared_suffix("src\\k.cu", "/work/src/k.cu"), 2);
  EXPECT_EQ(service::shared_suffix("./k.cu", "/work/src/k.cu"), 1);
  EXPECT_EQ(service::shared_suffix("/a/k.cuh", "/a/k.cu"), 0);
  EXPECT_EQ(service::rooted_match("/x/src/k.cu", "/w/src/k.cu", "/w"), 2);
  EXPECT_EQ(service::rooted_match("/x/k.cu", "/w/src/k.cu", "/w"), 0);
  EXPECT_EQ(service::rooted_match("/x/src/k.cu", "/v/src/k.cu", "/w"), 0);
  EXPECT_EQ(service::uri_of_path("/a b/ü.cu"), "file:///a%20b/%C3%BC.cu");
  EXPECT_EQ(service::path_of_uri("file:///a%20b/%C3%BC.cu"), "/a b/ü.cu");
  EXPECT_EQ(service::path_of_uri("file://localhost/x.cu"), "/x.cu");
  EXPECT_EQ(service::path_of_uri("file://server/x.cu"), std::nullopt);
  EXPECT_EQ(service::path_of_uri("untitled:Untitled-1"), std::nullopt);
  EXPECT_EQ(service::path_of_uri("file:///bad%zz"), "/bad%zz");
}

}  // namespace
}  // namespace keet
