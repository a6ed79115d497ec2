// keet ask / keet chat: the model's tools are the agent tools of
// data/mcp/tools.json that its "chat" section offers, answered by the same
// service::Tools the MCP server calls (commands run in process), with the
// chat's report bound and its privacy applied.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "app/common.h"
#include "app/in_process.h"
#include "llm/prompt.h"
#include "service/chat_tools.h"
#include "service/mcp_tools.h"
#include "support/report_writer.h"
#include "support/testing.h"
#include "util/embedded_data.h"

namespace keet {
namespace {

using nlohmann::json;

std::string no_env(const std::string&) { return ""; }

constexpr const char* kSourcePath = "/home/alice/proj/stride.cu";

// A report whose kernel's costs sit on two lines of a source file at a
// private path; the chat has read it (names for --redact-names).
struct ChatReport {
  std::string path;
  model::Report loaded;
};
const ChatReport& chat_report() {
  static const ChatReport r = [] {
    ChatReport out;
    out.path = testing::temp_path("chat-tools.ncu-rep");
    testing::write_file(out.path,
                        testing::source_lines_report("strided_copy", "_Z12strided_copyv", kSourcePath,
                                                     {{12, 600, 550, 4096, 3'000'000}, {13, 100, 0, 4096, 0}}));
    out.loaded = *app::read_report(out.path);
    return out;
  }();
  return r;
}

service::ChatTools tools(bool share, bool redact = false, std::string path = chat_report().path) {
  return service::ChatTools({app::in_process_runner(no_env), std::move(path), &chat_report().loaded, share, redact});
}

json chat_table() { return json::parse(*embedded_file("mcp/tools.json"))["chat"]; }

TEST(ChatTools, OffersTheToolsItsTableNames) {
  json offer = chat_table()["offer"];
  std::set<std::string> declared, needing_source;
  for (const auto& [name, o] : offer.items()) {
    declared.insert(name);
    if (o.value("needs_source", false)) needing_source.insert(name);
    EXPECT_NE(service::find_tool(name), nullptr) << name << " is offered to the chat but is no agent tool";
  }
  ASSERT_FALSE(needing_source.empty());
  std::set<std::string> shared, not_shared;
  for (const auto& spec : tools(true).specs()) {
    shared.insert(spec.name);
    EXPECT_EQ(spec.parameters["type"], "object") << spec.name;
    // The report is the chat's: the model neither sees nor gives it.
    EXPECT_FALSE(spec.parameters["properties"].contains("report")) << spec.name;
    for (const auto& r : spec.parameters.value("required", json::array())) EXPECT_NE(r, "report") << spec.name;
    EXPECT_EQ(spec.description, (*service::find_tool(spec.name))["description"]) << spec.name;
  }
  for (const auto& spec : tools(false).specs()) not_shared.insert(spec.name);
  EXPECT_EQ(shared, declared);
  for (const auto& name : needing_source) EXPECT_FALSE(not_shared.contains(name)) << name;
  EXPECT_EQ(not_shared.size() + needing_source.size(), shared.size());
}

// With the source shared (no privacy to apply) the chat's answer is the MCP
// tool's structured result for the chat's report, whatever report the model
// names; MCP names the report relative to its root, the chat as it was given.
TEST(ChatTools, AnswersAsTheMcpToolWithTheReportBound) {
  const auto& r = chat_report();
  service::McpOptions mcp;
  mcp.run = app::in_process_runner(no_env);
  mcp.roots = {std::filesystem::path(r.path).parent_path().string()};
  service::Tools direct(mcp, service::ReportRoots::create(mcp.roots));
  auto chat = tools(true);
  for (const char* name : {"list_kernels", "analyze_kernel", "get_metrics", "source_hotspots"}) {
    SCOPED_TRACE(name);
    auto expected = direct.call(name, {{"report", r.path}});
    ASSERT_EQ(expected.kind, service::ToolOutcome::Kind::Ok) << expected.text;
    json given = chat.answer(name, {{"report", "/etc/passwd"}});
    EXPECT_EQ(expected.structured["report"], std::filesystem::path(r.path).filename().string());
    expected.structured["report"] = r.path;
    EXPECT_EQ(given, expected.structured);
  }
  EXPECT_EQ(chat.answer("explain_term", {{"term", "long_scoreboard"}}),
            direct.call("explain_term", {{"term", "long_scoreboard"}}).structured);
}

TEST(ChatTools, WithoutSharingNoPathOrSourceText) {
  auto shared = tools(true), kept = tools(false);
  json lines = shared.answer("source_hotspots", json::object())["lines"];
  ASSERT_FALSE(lines.empty()) << lines.dump();
  EXPECT_EQ(lines[0]["file"], kSourcePath);
  EXPECT_NE(kept.answer("source_hotspots", json::object()).value("error", "").find("--share-source"),
            std::string::npos);
  // The findings place their cost on the file's lines when sharing...
  std::string open = shared.answer("analyze_kernel", json::object()).dump();
  ASSERT_NE(open.find(kSourcePath), std::string::npos) << open;
  // ...and say neither path nor source when not.
  json private_answer = kept.answer("analyze_kernel", json::object());
  std::string closed = private_answer.dump();
  EXPECT_EQ(closed.find("/home/alice"), std::string::npos) << closed;
  EXPECT_EQ(closed.find("\"file\""), std::string::npos) << closed;
  EXPECT_EQ(closed.find("\"text\""), std::string::npos) << closed;
  EXPECT_EQ(private_answer["report"], "<path>");
  EXPECT_FALSE(private_answer["kernel"]["findings"].empty());
  // Public addresses stay: the knowledge base's references are the same either way.
  json term = kept.answer("explain_term", {{"term", "long_scoreboard"}});
  ASSERT_NE(term.dump().find("https://docs.nvidia.com/"), std::string::npos) << term.dump();
  EXPECT_EQ(term, shared.answer("explain_term", {{"term", "long_scoreboard"}}));
}

TEST(ChatTools, RedactedNamesAreThePromptsLabels) {
  const auto& k = chat_report().loaded.kernels.at(0);
  std::string label = llm::kernel_label(k.display_name(), true);
  auto redacted = tools(false, true);
  json rows = redacted.answer("list_kernels", {{"mangled", true}});
  ASSERT_EQ(rows["kernels"].size(), 1u) << rows.dump();
  EXPECT_EQ(rows["kernels"][0]["name"], label);
  EXPECT_EQ(rows.dump().find("strided_copy"), std::string::npos) << rows.dump();
  // The model names kernels as it knows them: by label, or "#index".
  for (const std::string& key : {label, "#" + std::to_string(k.index)}) {
    json a = redacted.answer("analyze_kernel", {{"kernel", key}});
    ASSERT_TRUE(a.contains("kernel")) << key << ": " << a.dump();
    EXPECT_EQ(a["kernel"]["index"], k.index);
    EXPECT_EQ(a["kernel"]["name"], label);
    EXPECT_EQ(a.dump().find("strided_copy"), std::string::npos);
  }
  EXPECT_NE(tools(false).answer("list_kernels", json::object()).dump().find("strided_copy"), std::string::npos);
}

// A failure is an answer the model can read, never an exception.
TEST(ChatTools, FailuresAreAnswersTheModelReads) {
  auto chat = tools(false);
  auto error_of = [&](const std::string& name, const json& args) { return chat.answer(name, args).value("error", ""); };
  EXPECT_NE(error_of("nope", json::object()).find("unknown tool"), std::string::npos);
  EXPECT_NE(error_of("diff_reports", json::object()).find("unknown tool"), std::string::npos) << "not offered";
  EXPECT_NE(error_of("get_metrics", {{"pattern", 42}}).find("invalid arguments"), std::string::npos);
  EXPECT_NE(error_of("get_metrics", {{"pattern", "(unclosed"}}).find("invalid regular expression"), std::string::npos);
  // RE2 bounds a pattern a backtracking engine would explode on.
  json hostile = chat.answer("get_metrics", {{"pattern", "(.*)*(.*)*(.*)*zq"}});
  EXPECT_TRUE(hostile["metrics"].empty()) << hostile.dump();
  EXPECT_FALSE(error_of("analyze_kernel", {{"kernel", "no_such_kernel"}}).empty());
  auto gone = tools(false, false, testing::temp_path("no-such-report.ncu-rep"));
  EXPECT_FALSE(gone.answer("list_kernels", json::object()).value("error", "").empty());
}

}  // namespace
}  // namespace keet
