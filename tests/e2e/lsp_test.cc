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

// Runs `keet lsp ARGS` with the messages on its standard input.
std::vector<json> session(const std::string& args, const std::vector<json>& messages, ProcessResult* result = nullptr) {
  std::string input;
  for (const auto& m : messages) input += frame(m);
  std::string in_path = temp_path("lsp-session.in");
  write_file(in_path, input);
  // In a subshell: run_command gives the command line /dev/null as input.
  auto r = run_command("(" + shell_quote(keet_binary()) + " lsp " + args + " < " + shell_quote(in_path) + ")");
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

  const json* hover = find(messages, [](const json& m) { return m.value("id", 0) == 2; });
  ASSERT_NE(hover, nullptr);
  std::string text = (*hover)["result"]["contents"]["value"];
  EXPECT_NE(text.find("this line: **90.0%** of the kernel's stall samples (900 of 1000); 8192 executed instructions"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stalls on this line: long_scoreboard 88.9%, selected 11.1%"), std::string::npos) << text;

  const json* lens = find(messages, [](const json& m) { return m.value("id", 0) == 3; });
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
  EXPECT_NE(find(messages, [](const json& m) { return m.value("id", 0) == 4; }), nullptr);  // shutdown answered
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

}  // namespace
}  // namespace keet
