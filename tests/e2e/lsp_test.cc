// End-to-end: `keet lsp` as an editor runs it, one whole session piped
// through the real binary, on KEET's own example source
// (examples/transpose/transpose.cu) and a report whose cubin's line table
// names that file as it was on another machine (tests/support: the memory-bound
// scenario kernel as transposeNaive, its cost on the example's lines). The
// Neovim test (tests/lsp/nvim_test.sh) does the same through a real client.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "service/lsp.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using nlohmann::json;
using namespace keet::testing;
namespace fs = std::filesystem;

std::string example_source() { return source_dir() + "/examples/transpose/transpose.cu"; }

int line_of(const std::string& source, std::string_view text) {
  int n = line_holding(source, text);
  EXPECT_NE(n, 0) << text << " not in " << source;
  return n;
}

std::string write_report(const std::string& path) {
  write_file(path, transpose_example_report(example_source()));
  return path;
}

std::string frame(const json& m) {
  std::string body = m.dump();
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::vector<json> unframe(const std::string& out) {
  std::istringstream in(out);
  std::vector<json> messages;
  std::string body, error;
  while (service::read_lsp_message(in, body, error)) messages.push_back(json::parse(body));
  EXPECT_EQ(error, "");
  return messages;
}

// Runs `keet lsp ARGS` with the messages on its standard input; `env`
// ("env NAME=VALUE ") goes before keet.
std::vector<json> session(const std::string& args, const std::vector<json>& messages, ProcessResult* result = nullptr,
                          const std::string& env = "") {
  std::string input;
  for (const auto& m : messages) input += frame(m);
  std::string in_path = temp_path("lsp-session.in");
  write_file(in_path, input);
  // In a subshell: run_command gives the command line /dev/null as input.
  auto r = run_command("(" + env + shell_quote(keet_binary()) + " lsp " + args + " < " + shell_quote(in_path) + ")");
  if (result) *result = r;
  return unframe(r.out);
}

json request(int id, const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}
json notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::vector<json> editor_session(const std::string& args, const std::string& file, ProcessResult* r = nullptr) {
  std::string uri = service::uri_of_path(file);
  return session(
      args,
      {request(1, "initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", json::object()}}),
       notification("initialized", json::object()),
       notification(
           "textDocument/didOpen",
           {{"textDocument", {{"uri", uri}, {"languageId", "cuda"}, {"version", 1}, {"text", read_file(file)}}}}),
       request(2, "textDocument/hover",
               {{"textDocument", {{"uri", uri}}},
                {"position", {{"line", line_of(file, "out[x * N + y]") - 1}, {"character", 2}}}}),
       request(3, "textDocument/codeLens", {{"textDocument", {{"uri", uri}}}}), request(4, "shutdown", nullptr),
       notification("exit", nullptr)},
      r);
}

const json* find(const std::vector<json>& messages, const std::function<bool(const json&)>& which) {
  for (const auto& m : messages)
    if (which(m)) return &m;
  return nullptr;
}

TEST(LspE2E, ASessionPutsTheReportOnTheExampleSourceLines) {
  std::string report = write_report(temp_path("lsp-transpose.ncu-rep"));
  ProcessResult r;
  auto messages = editor_session(shell_quote(report), example_source(), &r);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("1 kernels, 3 source lines with cost"), std::string::npos) << r.err;
  const std::string src = example_source();
  const int move = line_of(src, "out[x * N + y]");

  const json* pub =
      find(messages, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  ASSERT_NE(pub, nullptr) << r.out;
  const auto& diags = (*pub)["params"]["diagnostics"];
  ASSERT_EQ(diags.size(), 2u) << pub->dump(1);  // the y line holds 4% (< 5%)
  EXPECT_EQ(diags[0]["range"]["start"]["line"], move - 1);
  EXPECT_EQ(diags[0]["severity"], 3);  // a medium finding: information
  EXPECT_EQ(diags[0]["code"], "memory.uncoalesced_global");
  EXPECT_NE(diags[0]["message"].get<std::string>().find("90.0% of transposeNaive's stall samples"), std::string::npos)
      << diags[0].dump();
  EXPECT_EQ(diags[1]["range"]["start"]["line"], line_of(src, "int x =") - 1);
  EXPECT_EQ(diags[1]["severity"], 4);

  const json* hover = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 2; });
  ASSERT_NE(hover, nullptr);
  std::string text = (*hover)["result"]["contents"]["value"];
  EXPECT_NE(text.find("this line: **90.0%** of the kernel's stall samples (900 of 1000); 8192 executed instructions"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stalls on this line: long_scoreboard 88.9%, selected 11.1%"), std::string::npos) << text;

  const json* lens = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 3; });
  ASSERT_NE(lens, nullptr);
  ASSERT_EQ((*lens)["result"].size(), 1u) << lens->dump();
  EXPECT_EQ((*lens)["result"][0]["range"]["start"]["line"], line_of(src, "__global__ void transposeNaive") - 1);
  std::string title = (*lens)["result"][0]["command"]["title"];
  EXPECT_TRUE(title.starts_with("keet: 60.00 us · memory-bound")) << title;
}

TEST(LspE2E, ASourceRootThatDoesNotHoldTheFileGivesItNothing) {
  std::string report = write_report(temp_path("lsp-transpose-root.ncu-rep"));
  std::string other = temp_path("lsp-elsewhere");
  fs::create_directories(other);
  auto messages = editor_session(shell_quote(report) + " --source-root " + shell_quote(other), example_source());
  const json* pub =
      find(messages, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  ASSERT_NE(pub, nullptr);
  EXPECT_TRUE((*pub)["params"]["diagnostics"].empty());
  auto rooted = editor_session(shell_quote(report) + " --source-root " + shell_quote(source_dir()), example_source());
  pub = find(rooted, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  ASSERT_NE(pub, nullptr);
  EXPECT_EQ((*pub)["params"]["diagnostics"].size(), 2u);
}

TEST(LspE2E, AnUnreadableReportIsLoggedAndTheServerKeepsServing) {
  std::string bad = temp_path("lsp-bad.ncu-rep");
  write_file(bad, "not a report");
  ProcessResult r;
  auto messages = editor_session(shell_quote(bad), example_source(), &r);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("keet lsp: " + bad + ":"), std::string::npos) << r.err;
  const json* log = find(messages, [](const json& m) { return m.value("method", "") == "window/logMessage"; });
  ASSERT_NE(log, nullptr) << r.out;
  EXPECT_EQ((*log)["params"]["type"], 1);
  EXPECT_NE(find(messages, [](const json& m) { return m.contains("id") && m["id"] == 4; }),
            nullptr);  // shutdown answered
}

TEST(LspE2E, BrokenFramingEndsTheServerWithBadInput) {
  std::string report = write_report(temp_path("lsp-transpose-frame.ncu-rep"));
  std::string in = temp_path("lsp-broken.in");
  write_file(in, "Content-Length: nine\r\n\r\n{}");
  auto r =
      run_command("(" + shell_quote(keet_binary()) + " lsp " + shell_quote(report) + " < " + shell_quote(in) + ")");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("a Content-Length that is not a number"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(LspE2E, AWatchedFolderPublishesAReportThatAppearsInIt) {
  std::string dir = temp_path("lsp-watch");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The client opens the file first; the report lands in the folder later.
  // A script feeds the messages with pauses, as an editor would.
  std::string file = example_source(), uri = service::uri_of_path(file);
  std::string init = frame(request(1, "initialize", {{"processId", nullptr}, {"capabilities", json::object()}}));
  std::string open = frame(notification(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", uri}, {"languageId", "cuda"}, {"version", 1}, {"text", read_file(file)}}}}));
  std::string bye = frame(request(2, "shutdown", nullptr)) + frame(notification("exit", nullptr));
  std::string report = temp_path("lsp-watch-src.ncu-rep");
  write_report(report);
  for (auto [name, bytes] : {std::pair{"init", init}, {"open", open}, {"bye", bye}})
    write_file(dir + "." + name, bytes);
  std::string script = "({ cat " + shell_quote(dir + ".init") + " " + shell_quote(dir + ".open") + "; sleep 0.5; cp " +
                       shell_quote(report) + " " + shell_quote(dir + "/new.ncu-rep") + "; sleep 1.5; cat " +
                       shell_quote(dir + ".bye") + "; } | " + shell_quote(keet_binary()) + " lsp --poll 0.2 " +
                       shell_quote(dir) + ")";
  auto r = run_command(script);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<size_t> counts;
  for (const auto& m : unframe(r.out))
    if (m.value("method", "") == "textDocument/publishDiagnostics") counts.push_back(m["params"]["diagnostics"].size());
  EXPECT_EQ(counts, (std::vector<size_t>{0, 2})) << r.out << r.err;
}

// ------------------------------------------------------------------ actions

json open_example(const std::string& file) {
  return notification(
      "textDocument/didOpen",
      {{"textDocument",
        {{"uri", service::uri_of_path(file)}, {"languageId", "cuda"}, {"version", 1}, {"text", read_file(file)}}}});
}

// The code actions on the diagnostic KEET put on `line` (1-based) with `code`,
// as a client asks for them.
json code_action_request(int id, const std::string& file, int line, const std::string& code) {
  json range = {{"start", {{"line", line - 1}, {"character", 0}}}, {"end", {{"line", line - 1}, {"character", 1}}}};
  json diagnostic = {{"range", range}, {"severity", 3}, {"source", "keet"}, {"code", code}, {"message", "..."}};
  return request(id, "textDocument/codeAction",
                 {{"textDocument", {{"uri", service::uri_of_path(file)}}},
                  {"range", range},
                  {"context", {{"diagnostics", json::array({diagnostic})}}}});
}

json execute(int id, const std::string& command, json arguments) {
  return request(id, "workspace/executeCommand", {{"command", command}, {"arguments", std::move(arguments)}});
}

std::vector<std::string> titles(const json* answer) {
  std::vector<std::string> out;
  if (answer)
    for (const auto& a : (*answer)["result"]) out.push_back(a["title"].get<std::string>());
  return out;
}

// keet's cache (the entries diagnostics link to, the HTML reports) in a
// folder of the test's own: an `env` assignment.
std::string cache_env(const std::string& name) {
  std::string dir = temp_path(name);
  fs::remove_all(dir);
  return "XDG_CACHE_HOME=" + shell_quote(dir) + " ";
}

TEST(LspE2E, ActionsExplainTheFindingAndOpenTheKernelsHtmlReport) {
  std::string report = write_report(temp_path("lsp-actions.ncu-rep"));
  const std::string src = example_source();
  const int move = line_of(src, "out[x * N + y]");
  json caps = {{"window", {{"showDocument", {{"support", true}}}}}};
  ProcessResult r;
  auto messages = session(
      shell_quote(report),
      {request(1, "initialize", {{"processId", nullptr}, {"capabilities", caps}}),
       notification("initialized", json::object()), open_example(src),
       code_action_request(2, src, move, "memory.uncoalesced_global"),
       execute(3, "keet.explain", {"finding:memory.uncoalesced_global"}),
       execute(4, "keet.openHtmlReport", {report, 0}), request(5, "shutdown", nullptr), notification("exit", nullptr)},
      &r, "env " + cache_env("lsp-actions-cache"));
  ASSERT_EQ(r.rc, 0) << r.err;

  const json* pub =
      find(messages, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  ASSERT_NE(pub, nullptr) << r.out;
  std::string href = (*pub)["params"]["diagnostics"][0]["codeDescription"]["href"];
  auto entry = service::path_of_uri(href);
  ASSERT_TRUE(entry) << href;
  EXPECT_TRUE(entry->ends_with("lsp-actions-cache/keet/lsp/kb/finding-memory.uncoalesced_global.txt")) << *entry;
  EXPECT_NE(read_file(*entry).find("Uncoalesced global memory accesses"), std::string::npos);

  EXPECT_EQ(
      titles(find(messages, [](const json& m) { return m.contains("id") && m["id"] == 2; })),
      (std::vector<std::string>{"Explain finding:memory.uncoalesced_global", "Open the HTML report for this kernel"}));
  const json* explained = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 3; });
  ASSERT_NE(explained, nullptr);
  EXPECT_NE((*explained)["result"].get<std::string>().find("What to do:"), std::string::npos);

  const json* shown = find(messages, [](const json& m) { return m.value("method", "") == "window/showDocument"; });
  ASSERT_NE(shown, nullptr) << r.out;
  EXPECT_EQ((*shown)["params"]["external"], true);
  auto html = service::path_of_uri((*shown)["params"]["uri"].get<std::string>());
  ASSERT_TRUE(html);
  std::string page = read_file(*html);
  EXPECT_NE(page.find("<html"), std::string::npos);
  EXPECT_NE(page.find("transposeNaive"), std::string::npos);
  const json* answer = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 4; });
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ((*answer)["result"], *html);
}

TEST(LspE2E, AReportWithoutLineInfoMarksTheKernelsDefinitionAndSaysWhy) {
  std::string report = temp_path("lsp-no-lineinfo.ncu-rep");
  const std::string src = example_source();
  write_file(report, transpose_example_report(src, false));
  const int kernel = line_of(src, "__global__ void transposeNaive");
  std::string env = "env -u CUDA_HOME -u CUDA_PATH " + cache_env("lsp-no-lineinfo-cache") +
                    "PATH=" + shell_quote(stand_in_nvdisasm("lsp-sass-stand-in") + ":/usr/bin:/bin") + " ";
  ProcessResult r;
  auto messages = session(
      shell_quote(report),
      {request(1, "initialize", {{"processId", nullptr}, {"capabilities", json::object()}}),
       notification("initialized", json::object()), open_example(src),
       request(2, "textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path(src)}}}}),
       code_action_request(3, src, kernel, "no-lineinfo"), execute(4, "keet.showSass", {report, 0}),
       execute(5, "keet.openHtmlReport", {report, 0}), request(6, "shutdown", nullptr), notification("exit", nullptr)},
      &r, env);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("no source lines: its cubin has no line table"), std::string::npos) << r.err;

  const json* pub =
      find(messages, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  ASSERT_NE(pub, nullptr) << r.out;
  const auto& diags = (*pub)["params"]["diagnostics"];
  ASSERT_EQ(diags.size(), 1u) << pub->dump(1);
  EXPECT_EQ(diags[0]["range"]["start"]["line"], kernel - 1);
  EXPECT_EQ(diags[0]["severity"], 3);
  EXPECT_EQ(diags[0]["code"], "no-lineinfo");
  EXPECT_NE(diags[0]["message"].get<std::string>().find("compile with -lineinfo and profile again"), std::string::npos);

  const json* lens = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 2; });
  ASSERT_NE(lens, nullptr);
  ASSERT_EQ((*lens)["result"].size(), 1u) << lens->dump();
  EXPECT_EQ((*lens)["result"][0]["range"]["start"]["line"], kernel - 1);
  EXPECT_EQ(titles(find(messages, [](const json& m) { return m.contains("id") && m["id"] == 3; })),
            (std::vector<std::string>{"Explain topic:source_lines", "Open the HTML report for this kernel",
                                      "Show SASS of this hot spot"}));
  const json* sass = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 4; });
  ASSERT_NE(sass, nullptr);
  EXPECT_NE(sass->dump().find("STAND_IN.SM90"), std::string::npos) << sass->dump();
  // This client did not say it takes showDocument: the report's path comes in a message.
  const json* named = find(messages, [](const json& m) {
    return m.value("method", "") == "window/showMessage" &&
           m["params"]["message"].get<std::string>().starts_with("keet: the HTML report of transposeNaive is ");
  });
  ASSERT_NE(named, nullptr) << r.out;
}

// Real reports without line information (../shared's fixtures): a build
// without -lineinfo (SASS offsets only) and a template kernel profiled without
// source counters, each found by its name in a source written here.
TEST(LspE2E, FixturesWithoutLineInfoMarkTheKernelsDefinitionByName) {
  KEET_REQUIRE_SHARED();
  struct Case {
    std::string report, source, code;
  };
  const std::string dir = *shared_dir() + "/fixtures/public/";
  for (const auto& c : std::vector<Case>{
           {dir + "Lashi0812__CudaProgramming/profiling/profiles/smemTranspose.ncu-rep",
            "#include <cuda_runtime.h>\n\n__global__ void transposeSmem(const float *in, float *out, int nx, int ny)\n"
            "{\n}\n",
            "no-lineinfo"},
           {dir + "AveryClapp__ESMM-Research/b644635/profile.ncu-rep",
            "template <const int BM, const int BN, const int BK, const int TM>\n"
            "__global__ void one_blocktiling(int M, int N, int K, const float *A, const float *B, float *C)\n{\n}\n",
            "no-source-counters"}}) {
    if (!fs::exists(c.report)) GTEST_SKIP() << c.report << " is absent";
    std::string file = temp_path("lsp-fixture-" + c.code + ".cu");
    write_file(file, c.source);
    ProcessResult r;
    auto messages =
        session(shell_quote(c.report),
                {request(1, "initialize", {{"processId", nullptr}, {"capabilities", json::object()}}),
                 notification("initialized", json::object()), open_example(file),
                 request(2, "textDocument/codeLens", {{"textDocument", {{"uri", service::uri_of_path(file)}}}}),
                 request(3, "shutdown", nullptr), notification("exit", nullptr)},
                &r, "env " + cache_env("lsp-fixture-cache"));
    ASSERT_EQ(r.rc, 0) << r.err;
    const json* pub =
        find(messages, [](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
    ASSERT_NE(pub, nullptr) << r.out;
    const auto& diags = (*pub)["params"]["diagnostics"];
    ASSERT_EQ(diags.size(), 1u) << c.report << "\n" << pub->dump(1);
    EXPECT_EQ(diags[0]["code"], c.code);
    EXPECT_EQ(diags[0]["range"]["start"]["line"], 2 - (c.code == "no-source-counters")) << c.report;
    const json* lens = find(messages, [](const json& m) { return m.contains("id") && m["id"] == 2; });
    ASSERT_NE(lens, nullptr);
    ASSERT_FALSE((*lens)["result"].empty()) << c.report;
    EXPECT_EQ((*lens)["result"][0]["range"]["start"]["line"], diags[0]["range"]["start"]["line"]);
  }
}

}  // namespace
}  // namespace keet
