// The Language Server (service/lsp.h) in-process: framing, the message
// sequence an editor sends, diagnostics on the lines an index names, hover,
// code lenses on kernel definitions, path matching, and bad messages. The
// index is written here as data; tests/e2e/lsp_test.cc and the Neovim test
// (tests/lsp) build it from real reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "service/lsp.h"
#include "service/lsp_index.h"
#include "support/testing.h"

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

// --------------------------------------------------------------- actions

// The command lines a server ran; a base, so that it is made before the
// server that records into it.
struct Recorded {
  std::vector<std::vector<std::string>> ran;
};

// A server whose commands are recorded, not run: the HTML report "written" is
// the -o path the command line names.
struct ActionSession : Recorded, Session {
  explicit ActionSession(bool disassembler = false, int exit_code = 0)
      : Recorded(), Session(options(disassembler, exit_code, ran)) {}
  static service::LspOptions options(bool disassembler, int exit_code, std::vector<std::vector<std::string>>& ran) {
    service::LspOptions o;
    o.output_dir = testing::temp_path("lsp-actions-out");
    o.disassembler = disassembler;
    o.run = [&ran, exit_code](const std::vector<std::string>& args) {
      ran.push_back(args);
      return service::CommandOutput{exit_code, "+0x0010  LDG.E R2, [R2.64]\n", exit_code ? "no such kernel\n" : ""};
    };
    return o;
  }
  json actions(const std::string& path, const json& diagnostic) {
    return request("textDocument/codeAction", {{"textDocument", {{"uri", service::uri_of_path(path)}}},
                                               {"range", diagnostic["range"]},
                                               {"context", {{"diagnostics", json::array({diagnostic})}}}});
  }
  std::vector<std::string> titles(const std::string& path, const json& diagnostic) {
    std::vector<std::string> out;
    json answer = actions(path, diagnostic);  // named: a range-for would not keep the temporary alive
    for (const auto& a : answer["result"]) out.push_back(a["title"].get<std::string>());
    return out;
  }
};

// transposeNaive as a build without -lineinfo gives it: no lines, its gap said.
LspIndex index_without_lines(std::string function = "transposeNaive") {
  LspIndex idx = index_for("src/transpose.cu");
  idx.lines.clear();
  idx.kernels[0].function = std::move(function);
  idx.kernels[0].top_finding_id = "memory.uncoalesced_global";
  idx.kernels[0].line_gap = service::LspLineGap::NoLineTable;
  return idx;
}

TEST(LspActions, ADiagnosticOffersItsTermAndTheKernelsHtmlReport) {
  ActionSession s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  json pub = s.open("/p/src/transpose.cu");
  const json& finding = pub["params"]["diagnostics"][0];
  EXPECT_EQ(
      s.titles("/p/src/transpose.cu", finding),
      (std::vector<std::string>{"Explain finding:memory.uncoalesced_global", "Open the HTML report for this kernel"}));
  // A hot line without a finding is about its top stall; with a disassembler
  // there is still no SASS action: the line is a source line.
  const json& hot = pub["params"]["diagnostics"][1];
  EXPECT_EQ(s.titles("/p/src/transpose.cu", hot)[0], "Explain stall:wait");
  // Another source's diagnostic, or one KEET no longer has, gets nothing.
  json other = finding;
  other["source"] = "clangd";
  EXPECT_TRUE(s.actions("/p/src/transpose.cu", other)["result"].empty());
  other = finding;
  other["code"] = "memory.something_else";
  EXPECT_TRUE(s.actions("/p/src/transpose.cu", other)["result"].empty());
}

TEST(LspActions, DiagnosticsLinkTheirKnowledgeEntryAsAFile) {
  ActionSession s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  json pub = s.open("/p/src/transpose.cu");
  std::string href = pub["params"]["diagnostics"][0]["codeDescription"]["href"];
  auto path = service::path_of_uri(href);
  ASSERT_TRUE(path) << href;
  EXPECT_TRUE(path->ends_with("/kb/finding-memory.uncoalesced_global.txt")) << *path;
  EXPECT_NE(testing::read_file(*path).find("(finding:memory.uncoalesced_global)"), std::string::npos);
  // Without a folder to write the entries to, no link.
  Session plain;
  plain.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  plain.start();
  EXPECT_FALSE(plain.open("/p/src/transpose.cu")["params"]["diagnostics"][0].contains("codeDescription"));
}

TEST(LspActions, AKernelWithoutLineInfoIsFoundByNameAndSaysWhy) {
  ActionSession s(true);
  s.server.set_report("/runs/transpose.ncu-rep", index_without_lines());
  s.start();
  json pub = s.open("/p/src/transpose.cu");
  ASSERT_EQ(pub["params"]["diagnostics"].size(), 1u) << pub.dump();
  const json& d = pub["params"]["diagnostics"][0];
  EXPECT_EQ(d["range"]["start"]["line"], 2);  // the definition
  EXPECT_EQ(d["severity"], 3);
  EXPECT_EQ(d["code"], "no-lineinfo");
  EXPECT_NE(d["message"].get<std::string>().find("no line of transposeNaive is marked"), std::string::npos);
  EXPECT_NE(d["message"].get<std::string>().find("compile with -lineinfo and profile again"), std::string::npos);
  EXPECT_TRUE(d["codeDescription"]["href"].get<std::string>().ends_with("/kb/topic-source_lines.txt"));
  json lens =
      s.request("textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path("/p/src/transpose.cu")}}}});
  ASSERT_EQ(lens["result"].size(), 1u);
  EXPECT_EQ(lens["result"][0]["range"]["start"]["line"], 2);
  EXPECT_EQ(s.titles("/p/src/transpose.cu", d),
            (std::vector<std::string>{"Explain topic:source_lines", "Open the HTML report for this kernel",
                                      "Show SASS of this hot spot"}));
  // No disassembler: no SASS action.
  ActionSession bare(false);
  bare.server.set_report("/runs/transpose.ncu-rep", index_without_lines());
  bare.start();
  json d2 = bare.open("/p/src/transpose.cu")["params"]["diagnostics"][0];
  EXPECT_EQ(bare.titles("/p/src/transpose.cu", d2).size(), 2u);
}

TEST(LspActions, TemplateKernelsAreFoundByTheirBaseName) {
  constexpr std::string_view source =
      "template <int Tile>\n"
      "__global__ void transposeTiled(float* out, const float* in)\n"
      "{\n"
      "}\n"
      "namespace {\n"
      "__global__ void helper(int* p) {}\n"
      "}\n";
  for (std::string name : {"void transposeTiled<(int)32>(float *, const float *)", "transposeTiled<32>",
                           "void (anonymous namespace)::helper(int *)"}) {
    ActionSession s;
    s.server.set_report("/r.ncu-rep", index_without_lines(name));
    s.start();
    json pub = s.open("/p/tiled.cu", source);
    ASSERT_EQ(pub["params"]["diagnostics"].size(), 1u) << name;
    EXPECT_EQ(pub["params"]["diagnostics"][0]["range"]["start"]["line"],
              name.find("helper") != std::string::npos ? 5 : 1)
        << name;
  }
}

TEST(LspActions, ExplainShowsTheEntryAndCommandsCheckTheirArguments) {
  ActionSession s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  auto out = s.send({{"jsonrpc", "2.0"},
                     {"id", 7},
                     {"method", "workspace/executeCommand"},
                     {"params", {{"command", "keet.explain"}, {"arguments", {"finding:memory.uncoalesced_global"}}}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["method"], "window/showMessage");
  EXPECT_NE(out[0]["params"]["message"].get<std::string>().find("What to do:"), std::string::npos);
  EXPECT_EQ(out[1]["id"], 7);
  auto error_of = [&](json params) {
    return s.request("workspace/executeCommand", std::move(params))["error"]["code"];
  };
  EXPECT_EQ(error_of({{"command", "keet.explain"}, {"arguments", {"no:such"}}}), -32602);
  EXPECT_EQ(error_of({{"command", "keet.rm"}, {"arguments", json::array()}}), -32602);
  // Only a report this server read, and a kernel of it.
  EXPECT_EQ(error_of({{"command", "keet.openHtmlReport"}, {"arguments", {"/etc/passwd", 0}}}), -32602);
  EXPECT_EQ(error_of({{"command", "keet.openHtmlReport"}, {"arguments", {"/runs/transpose.ncu-rep", 9}}}), -32602);
  EXPECT_EQ(error_of({{"command", "keet.showSass"}, {"arguments", {"/runs/transpose.ncu-rep", 0}}}), -32803);
  EXPECT_TRUE(s.ran.empty());
}

TEST(LspActions, TheHtmlReportIsWrittenThenShownOrNamed) {
  ActionSession s;
  s.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  s.start();
  json open_html = {{"command", "keet.openHtmlReport"}, {"arguments", {"/runs/transpose.ncu-rep", 0}}};
  auto out = s.send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "workspace/executeCommand"}, {"params", open_html}});
  ASSERT_EQ(s.ran.size(), 1u);
  const auto& args = s.ran[0];
  ASSERT_GE(args.size(), 10u);
  EXPECT_EQ((std::vector<std::string>(args.begin(), args.begin() + 8)),
            (std::vector<std::string>{"analyze", "/runs/transpose.ncu-rep", "-s", "0", "-c", "1", "--format", "html"}));
  // One file per report and kernel under the output folder: its name, a hash of its path, its index.
  EXPECT_NE(args[9].find("/lsp-actions-out/html/transpose-"), std::string::npos) << args[9];
  EXPECT_TRUE(args[9].ends_with("-k0.html")) << args[9];
  // This client did not say it takes showDocument: the path, in a message.
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["method"], "window/showMessage");
  EXPECT_NE(out[0]["params"]["message"].get<std::string>().find(args[9]), std::string::npos);
  EXPECT_EQ(out[1]["result"], args[9]);

  ActionSession shows;
  shows.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  shows.request("initialize", {{"capabilities", {{"window", {{"showDocument", {{"support", true}}}}}}}});
  out = shows.send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "workspace/executeCommand"}, {"params", open_html}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["method"], "window/showDocument");
  EXPECT_EQ(out[0]["params"]["external"], true);
  EXPECT_EQ(out[0]["params"]["uri"], service::uri_of_path(shows.ran[0][9]));
  // The client's answer to our request is taken quietly.
  EXPECT_TRUE(shows.send({{"jsonrpc", "2.0"}, {"id", out[0]["id"]}, {"result", {{"success", true}}}}).empty());

  ActionSession failing(false, 2);
  failing.server.set_report("/runs/transpose.ncu-rep", index_for("src/transpose.cu"));
  failing.start();
  out = failing.send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "workspace/executeCommand"}, {"params", open_html}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["params"]["type"], 1);
  EXPECT_EQ(out[1]["error"]["message"], "keet: the HTML report of transposeNaive failed: no such kernel");
}

TEST(LspActions, ShowSassRunsKeetSourceOnTheKernel) {
  ActionSession s(true);
  s.server.set_report("/runs/transpose.ncu-rep", index_without_lines());
  s.start();
  auto out = s.send({{"jsonrpc", "2.0"},
                     {"id", 3},
                     {"method", "workspace/executeCommand"},
                     {"params", {{"command", "keet.showSass"}, {"arguments", {"/runs/transpose.ncu-rep", 0}}}}});
  ASSERT_EQ(s.ran.size(), 1u);
  EXPECT_EQ(s.ran[0],
            (std::vector<std::string>{"source", "/runs/transpose.ncu-rep", "-s", "0", "-c", "1", "--top", "10"}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0]["params"]["message"].get<std::string>().find("LDG.E R2"), std::string::npos);
}

}  // namespace
}  // namespace keet
