// The MCP server (service/mcp.h) in-process: JSON-RPC handling, capability
// and revision negotiation, each tool on reports the tests write (through the
// real commands, app::in_process_runner), the path sandbox, and the
// streamable HTTP transport driven with the request sequences a client sends.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "app/in_process.h"
#include "service/mcp.h"
#include "service/mcp_page.h"
#include "service/mcp_tools.h"
#include "service/schema_check.h"
#include "support/kineto_writer.h"
#include "support/report_writer.h"
#include "support/testing.h"
#include "util/json.h"

namespace keet {
namespace {

using nlohmann::json;
using service::HttpExchange;
using service::McpOptions;
using service::McpServer;
namespace fs = std::filesystem;

std::string no_env(const std::string&) { return ""; }

// A folder of its own per test, holding the reports the tools may read.
std::string fresh_root(const std::string& name) {
  std::string dir = testing::temp_path("mcp-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return fs::canonical(dir).string();
}

// Two kernels: the memory-bound scenario kernel and a tiny one.
std::string write_report(const std::string& dir, const std::string& file, double duration_ns, int kernels = 2) {
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  b.results.push_back(w.kernel("strided_copy", 8192, 256, testing::scenario_metrics(duration_ns)).SerializeAsString());
  for (int i = 1; i < kernels; ++i)
    b.results.push_back(w.kernel("tiny", 1, 32, {{"gpu__time_duration.sum", 1500.0 + i}}).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string path = dir + "/" + file;
  w.write(path);
  return path;
}

McpOptions options_for(const std::string& root, std::string store = "") {
  McpOptions o;
  o.run = app::in_process_runner(no_env);
  o.roots = {root};
  o.store = std::move(store);
  return o;
}

json send(McpServer& s, const json& message) {
  auto reply = s.handle_message(message.dump());
  if (!reply) return nullptr;
  return json::parse(*reply);
}

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json initialize_params(const std::string& version = "2025-06-18") {
  return {{"protocolVersion", version},
          {"capabilities", json::object()},
          {"clientInfo", {{"name", "unit-test"}, {"version", "1"}}}};
}

void initialize(McpServer& s) {
  auto r = send(s, request(0, "initialize", initialize_params()));
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(send(s, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}), nullptr);
}

json call(McpServer& s, const std::string& tool, const json& args, int id = 7) {
  return send(s, request(id, "tools/call", {{"name", tool}, {"arguments", args}}));
}

const json& declaration(const std::string& tool) {
  const json* d = service::find_tool(tool);
  EXPECT_NE(d, nullptr) << tool;
  static const json none;
  return d ? *d : none;
}

// Every number of a tool's answer is either a measure's value (beside the
// metric or quantity it is) or an identifier or count under a field that
// says what it counts; anything else is a number without its name.
const std::set<std::string> kCountFields = {
    "index",       "line",    "offset", "run",   "recorded_at", "total",  "next_offset", "launches", "zeros_omitted",
    "regressions", "missing", "new",    "pairs", "faster",      "slower", "unchanged",   "unknown",  "suggested_pairs",
    "root",        "roots"};
void expect_numbers_named(const json& j, const std::string& at, const std::string& key, const json* parent) {
  if (j.is_number()) {
    bool measure_value = key == "value" && parent && parent->is_object() && parent->contains("metric") &&
                         (*parent)["metric"].is_string() && !(*parent)["metric"].get<std::string>().empty();
    EXPECT_TRUE(measure_value || kCountFields.contains(key) || key == "grid" || key == "block")
        << "number without a metric name at " << at;
    return;
  }
  if (j.is_object())
    for (const auto& [k, v] : j.items()) expect_numbers_named(v, at + "/" + k, k, &j);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) expect_numbers_named(j[i], at + "/" + std::to_string(i), key, &j);
}

// The tool's declared size budget (data/mcp/tools.json budget_bytes).
size_t budget(const std::string& tool) { return declaration(tool).value("budget_bytes", size_t{0}); }

// A successful tools/call: structuredContent fits the declared outputSchema,
// every number is named, one short text block says what it holds (the JSON is
// not repeated as text), and the whole result is within the tool's budget.
json expect_ok(const json& reply, const std::string& tool) {
  EXPECT_TRUE(reply.contains("result")) << reply.dump();
  if (!reply.contains("result")) return nullptr;
  const auto& r = reply["result"];
  EXPECT_EQ(r["isError"], false) << r.dump();
  EXPECT_TRUE(r.contains("structuredContent")) << r.dump();
  const auto& schema = declaration(tool)["outputSchema"];
  auto bad = service::schema_violation(schema, r["structuredContent"], schema);
  EXPECT_FALSE(bad) << tool << ": " << bad.value_or("");
  expect_numbers_named(r["structuredContent"], "", "", nullptr);
  EXPECT_EQ(r["content"].size(), 1u) << r["content"].dump();
  EXPECT_EQ(r["content"][0]["type"], "text");
  EXPECT_FALSE(r["content"][0]["text"].get<std::string>().empty());
  EXPECT_FALSE(r["content"][0]["text"].get<std::string>().starts_with("{"));
  EXPECT_LE(json_text(r).size(), budget(tool)) << tool << " answered over its budget";
  return r["structuredContent"];
}

std::string expect_tool_error(const json& reply) {
  EXPECT_TRUE(reply.contains("result")) << reply.dump();
  if (!reply.contains("result")) return "";
  EXPECT_EQ(reply["result"]["isError"], true) << reply.dump();
  EXPECT_FALSE(reply["result"].contains("structuredContent"));
  std::string text = reply["result"]["content"][0]["text"];
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line expected: " << text;
  return text;
}

int error_code(const json& reply) {
  EXPECT_TRUE(reply.contains("error")) << reply.dump();
  return reply.contains("error") ? reply["error"]["code"].get<int>() : 0;
}

// ------------------------------------------------------------ the protocol

TEST(McpServer, InitializeAnswersTheClientsRevisionOrItsNewest) {
  McpServer s(options_for(fresh_root("init")));
  for (std::string v : {"2025-06-18", "2025-03-26", "2024-11-05"}) {
    auto r = send(s, request(1, "initialize", initialize_params(v)));
    EXPECT_EQ(r["result"]["protocolVersion"], v);
  }
  auto r = send(s, request(2, "initialize", initialize_params("2099-01-01")));
  EXPECT_EQ(r["id"], 2);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  EXPECT_FALSE(r["result"]["capabilities"].contains("resources"));
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "keet");
  EXPECT_FALSE(r["result"]["instructions"].get<std::string>().empty());
  EXPECT_EQ(error_code(send(s, request(3, "initialize", {{"capabilities", json::object()}}))), -32602);
}

TEST(McpServer, MalformedMessagesGetJsonRpcErrors) {
  McpServer s(options_for(fresh_root("errors")));
  auto parse = json::parse(*s.handle_message("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "));
  EXPECT_EQ(parse["error"]["code"], -32700);
  EXPECT_TRUE(parse["id"].is_null());
  auto batch = send(s, json::array({request(1, "ping")}));
  EXPECT_EQ(error_code(batch), -32600);
  EXPECT_NE(batch["error"]["message"].get<std::string>().find("batch"), std::string::npos);
  EXPECT_EQ(error_code(send(s, json("ping"))), -32600);
  EXPECT_EQ(error_code(send(s, {{"jsonrpc", "1.0"}, {"id", 4}, {"method", "ping"}})), -32600);
  EXPECT_EQ(error_code(send(s, {{"jsonrpc", "2.0"}, {"id", 5}, {"method", 17}})), -32600);
  EXPECT_EQ(error_code(send(s, {{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "ping"}})), -32600);
  EXPECT_EQ(error_code(send(s, {{"jsonrpc", "2.0"}, {"id", 6}})), -32600);
  std::string huge(McpOptions{}.max_message_bytes + 1, ' ');
  EXPECT_EQ(json::parse(*s.handle_message(huge))["error"]["code"], -32600);
}

TEST(McpServer, NotificationsAndResponsesGetNoReply) {
  McpServer s(options_for(fresh_root("notify")));
  EXPECT_EQ(s.handle_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), std::nullopt);
  EXPECT_EQ(s.handle_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})"),
            std::nullopt);
  EXPECT_EQ(s.handle_message(R"({"jsonrpc":"2.0","method":"no/such/notification"})"), std::nullopt);
  EXPECT_EQ(s.handle_message(R"({"jsonrpc":"2.0","id":9,"result":{}})"), std::nullopt);
}

TEST(McpServer, OnlyPingAndInitializeComeBeforeInitialize) {
  McpServer s(options_for(fresh_root("order")));
  EXPECT_EQ(send(s, request(1, "ping"))["result"], json::object());
  EXPECT_EQ(error_code(send(s, request(2, "tools/list"))), -32600);
  initialize(s);
  EXPECT_TRUE(send(s, request(3, "tools/list"))["result"]["tools"].is_array());
  auto unknown = send(s, request(4, "resources/list"));
  EXPECT_EQ(error_code(unknown), -32601);
  EXPECT_EQ(unknown["id"], 4);
  auto string_id = send(s, {{"jsonrpc", "2.0"}, {"id", "abc"}, {"method", "ping"}});
  EXPECT_EQ(string_id["id"], "abc");
  EXPECT_EQ(error_code(send(s, {{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/list"}, {"params", 3}})), -32602);
}

TEST(McpServer, ToolsListDeclaresEveryToolWithSchemas) {
  McpServer s(options_for(fresh_root("list")));
  initialize(s);
  auto tools = send(s, request(1, "tools/list"))["result"]["tools"];
  std::set<std::string> names;
  for (const auto& t : tools) {
    names.insert(t["name"].get<std::string>());
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty());
    EXPECT_EQ(t["annotations"]["readOnlyHint"], true);
    EXPECT_EQ(service::unchecked_keyword(t["inputSchema"]), std::nullopt);
    // A $ref resolves inside the declaration itself: clients compile each alone.
    std::string text = t.dump();
    for (size_t at = text.find("#/$defs/"); at != std::string::npos; at = text.find("#/$defs/", at + 1)) {
      std::string name = text.substr(at + 8, text.find('"', at) - at - 8);
      EXPECT_TRUE(t["outputSchema"]["$defs"].contains(name) || t["inputSchema"].contains("$defs")) << name;
    }
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"list_kernels", "analyze_kernel", "get_metrics", "source_hotspots", "explain_term",
                                   "diff_reports", "history", "gate", "list_reports", "timeline"}));
}

TEST(McpServer, BadToolCallsAreInvalidParams) {
  std::string root = fresh_root("params");
  write_report(root, "r.ncu-rep", 120000);
  McpServer s(options_for(root));
  initialize(s);
  EXPECT_EQ(error_code(send(s, request(1, "tools/call", {{"arguments", json::object()}}))), -32602);
  EXPECT_EQ(error_code(call(s, "no_such_tool", json::object())), -32602);
  EXPECT_EQ(error_code(call(s, "list_kernels", json::object())), -32602);  // report is required
  EXPECT_EQ(error_code(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"limit", "ten"}})), -32602);
  EXPECT_EQ(error_code(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"limit", 0}})), -32602);
  EXPECT_EQ(error_code(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"colour", "red"}})), -32602);
  auto bad = call(s, "explain_term", {{"term", std::string(501, 'x')}});
  EXPECT_EQ(error_code(bad), -32602);
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("/term"), std::string::npos);
  EXPECT_EQ(error_code(send(s, request(2, "tools/call", {{"name", "list_kernels"}, {"arguments", "r"}}))), -32602);
}

// ---------------------------------------------------------------- the tools

TEST(McpTools, ListAndAnalyseATestWriterReport) {
  std::string root = fresh_root("analyse");
  write_report(root, "r.ncu-rep", 120000, 3);
  McpServer s(options_for(root));
  initialize(s);
  // strided_copy once, tiny twice with one launch configuration: two rows.
  auto list = expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}}), "list_kernels");
  EXPECT_EQ(list["total"], 2);
  EXPECT_EQ(list["launches"], 3);
  EXPECT_EQ(list["truncated"], false);
  EXPECT_EQ(list["next_offset"], nullptr);
  EXPECT_EQ(list["report"], "r.ncu-rep") << "relative to its root: no server path";
  const auto& copy = list["kernels"][0];  // the most time first
  EXPECT_EQ(copy["name"], "strided_copy()");
  EXPECT_FALSE(copy.contains("mangled"));
  EXPECT_EQ(copy["duration"], json({{"metric", "duration_ns"}, {"value", 120000.0}, {"unit", "ns"}}));
  EXPECT_FALSE(copy.contains("total_duration"));  // one launch: its duration says it all
  EXPECT_EQ(copy["grid"], json({8192, 1, 1}));
  const auto& tiny_row = list["kernels"][1];
  EXPECT_EQ(tiny_row["name"], "tiny()");
  EXPECT_EQ(tiny_row["index"], 1);
  EXPECT_EQ(tiny_row["launches"], 2);
  EXPECT_EQ(tiny_row["indices"], "1-2");
  EXPECT_EQ(tiny_row["total_duration"]["value"], 1501.0 + 1502.0);
  EXPECT_EQ(tiny_row["min_duration"]["value"], 1501.0);
  EXPECT_EQ(tiny_row["max_duration"]["value"], 1502.0);
  EXPECT_EQ(tiny_row["duration"]["value"], 1501.5);
  auto first = expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"limit", 1}}), "list_kernels");
  EXPECT_EQ(first["kernels"].size(), 1u);
  EXPECT_EQ(first["truncated"], true);
  ASSERT_EQ(first["next_offset"], 1);
  auto second =
      expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"limit", 1}, {"offset", 1}}), "list_kernels");
  EXPECT_EQ(second["kernels"][0]["name"], "tiny()");
  EXPECT_EQ(second["offset"], 1);
  EXPECT_EQ(second["truncated"], false);
  auto by_index = expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"sort", "index"}, {"launches", "all"}}),
                            "list_kernels");
  ASSERT_EQ(by_index["total"], 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(by_index["kernels"][i]["index"], i);
  auto only = expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"kernel", "regex:^tiny"}}), "list_kernels");
  EXPECT_EQ(only["total"], 1);
  EXPECT_EQ(only["launches"], 2);
  auto named = expect_ok(call(s, "list_kernels", {{"report", "r.ncu-rep"}, {"mangled", true}}), "list_kernels");
  EXPECT_EQ(named["kernels"][1]["full_name"], "tiny()");
  EXPECT_TRUE(named["kernels"][1].contains("mangled"));

  auto a =
      expect_ok(call(s, "analyze_kernel", {{"report", "r.ncu-rep"}, {"kernel", "strided_copy"}}), "analyze_kernel");
  const auto& k = a["kernel"];
  EXPECT_EQ(a["format"], "ncu-rep");
  EXPECT_EQ(k["index"], 0);
  EXPECT_EQ(k["bottleneck"]["class"], "memory");
  EXPECT_EQ(k["compute_capability"], "9.0");
  ASSERT_TRUE(k["limiter"]["binding"].is_object());
  EXPECT_EQ(k["limiter"]["binding"]["utilization"]["unit"], "%");
  ASSERT_FALSE(k["findings"].empty());
  // The evidence is the report's own numbers, each beside its metric.
  bool dram = false;
  for (const auto& f : k["findings"])
    for (const auto& e : f["evidence"])
      dram |= e["metric"] == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" && e["value"] == 81.0;
  for (const auto& e : k["bottleneck"]["evidence"]) dram |= e["value"] == 81.0;
  EXPECT_TRUE(dram) << k.dump();
  EXPECT_EQ(a["total"], static_cast<int64_t>(k["findings"].size()));  // the default page holds them all here
  auto top1 = expect_ok(call(s, "analyze_kernel", {{"report", "r.ncu-rep"}, {"top", 1}}), "analyze_kernel");
  ASSERT_EQ(top1["kernel"]["findings"].size(), 1u);
  EXPECT_EQ(top1["total"], a["total"]);
  if (a["total"].get<int>() > 1) {
    EXPECT_EQ(top1["next_offset"], 1);
    auto next =
        expect_ok(call(s, "analyze_kernel", {{"report", "r.ncu-rep"}, {"top", 1}, {"offset", 1}}), "analyze_kernel");
    EXPECT_EQ(next["kernel"]["findings"][0]["id"], k["findings"][1]["id"]);
  }
  auto tiny = expect_ok(call(s, "analyze_kernel", {{"report", "r.ncu-rep"}, {"kernel", "2"}}), "analyze_kernel");
  EXPECT_EQ(tiny["kernel"]["index"], 2);
  EXPECT_EQ(tiny["kernel"]["name"], "tiny()");
  EXPECT_FALSE(tiny["kernel"].contains("mangled"));
  auto mangled = expect_ok(call(s, "analyze_kernel", {{"report", "r.ncu-rep"}, {"kernel", "2"}, {"mangled", true}}),
                           "analyze_kernel");
  EXPECT_EQ(mangled["kernel"]["full_name"], "tiny()");
  EXPECT_TRUE(mangled["kernel"].contains("mangled"));
}

TEST(McpTools, MetricsByNameAndPatternAreBounded) {
  std::string root = fresh_root("metrics");
  write_report(root, "r.ncu-rep", 120000);
  McpServer s(options_for(root));
  initialize(s);
  auto named =
      expect_ok(call(s, "get_metrics",
                     {{"report", "r.ncu-rep"}, {"names", {"launch__sm_count", "gpu__time_duration.sum", "no__such"}}}),
                "get_metrics");
  EXPECT_EQ(named["total"], 2);
  EXPECT_EQ(named["missing"], json({"no__such"}));
  bool sm = false;
  for (const auto& m : named["metrics"]) sm |= m["metric"] == "launch__sm_count" && m["value"] == 132.0;
  EXPECT_TRUE(sm) << named.dump();
  auto dram = expect_ok(call(s, "get_metrics", {{"report", "r.ncu-rep"}, {"pattern", "^GPU__DRAM"}}), "get_metrics");
  ASSERT_EQ(dram["metrics"].size(), 1u);
  EXPECT_EQ(dram["metrics"][0]["metric"], "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(dram["metrics"][0]["unit"], "%");
  auto bounded = expect_ok(call(s, "get_metrics", {{"report", "r.ncu-rep"}, {"limit", 3}}), "get_metrics");
  EXPECT_EQ(bounded["metrics"].size(), 3u);
  EXPECT_EQ(bounded["truncated"], true);
  EXPECT_GT(bounded["total"].get<int>(), 3);
  EXPECT_EQ(bounded["next_offset"], 3);
  // Zeros are counted, not hidden: with zeros: true the total grows by them.
  auto all = expect_ok(call(s, "get_metrics", {{"report", "r.ncu-rep"}}), "get_metrics");
  auto with_zeros = expect_ok(call(s, "get_metrics", {{"report", "r.ncu-rep"}, {"zeros", true}}), "get_metrics");
  EXPECT_EQ(with_zeros["zeros_omitted"], 0);
  EXPECT_EQ(with_zeros["total"].get<int>(), all["total"].get<int>() + all["zeros_omitted"].get<int>());
  for (const auto& m : all["metrics"]) EXPECT_NE(m["value"], 0.0) << m.dump();
  auto bad = expect_tool_error(call(s, "get_metrics", {{"report", "r.ncu-rep"}, {"pattern", "(unclosed"}}));
  EXPECT_NE(bad.find("invalid regular expression"), std::string::npos) << bad;
}

TEST(McpTools, SourceHotspotsSaysWhenTheReportHasNoSourceCounters) {
  std::string root = fresh_root("source");
  write_report(root, "r.ncu-rep", 120000);
  McpServer s(options_for(root));
  initialize(s);
  auto src = expect_ok(call(s, "source_hotspots", {{"report", "r.ncu-rep"}}), "source_hotspots");
  EXPECT_EQ(src["level"], "none");
  EXPECT_TRUE(src["lines"].empty());
  EXPECT_FALSE(src["notes"].empty());
}

TEST(McpTools, ExplainTerm) {
  McpServer s(options_for(fresh_root("explain")));
  initialize(s);
  auto e = expect_ok(call(s, "explain_term", {{"term", "long_scoreboard"}, {"count", 2}}), "explain_term");
  ASSERT_FALSE(e["entries"].empty());
  EXPECT_LE(e["entries"].size(), 2u);
  EXPECT_EQ(e["entries"][0]["kind"], "stall");
  auto dash = call(s, "explain_term", {{"term", "--help"}});  // a term, never a flag
  EXPECT_FALSE(dash["result"]["content"][0]["text"].get<std::string>().starts_with("usage"));
}

// list_reports names every file KEET reads under the roots, told by its
// bytes and not its name, relative to its root; the other tools take those
// paths as they are. Hidden folders and other files are left out.
TEST(McpTools, ListReportsNamesEveryReadableFileByItsContent) {
  std::string root = fresh_root("list_reports"), second = fresh_root("list_reports_second");
  write_report(root, "a.ncu-rep", 100000);
  fs::create_directories(root + "/runs/step");
  fs::create_directories(root + "/.cache");
  write_report(root + "/runs", "renamed.bin", 90000);
  write_report(root + "/.cache", "hidden.ncu-rep", 90000);
  testing::KinetoWriter trace;
  for (int i = 0; i < 3; ++i) trace.launch("void k<float>(float*)", i * 100.0, i * 100.0 + 8, 50);
  testing::write_file(root + "/runs/step/trace.json", trace.json());
  testing::write_file(root + "/notes.txt", "not a report");
  write_report(second, "other.ncu-rep", 80000);
  auto o = options_for(root);
  o.roots.push_back(second);
  McpServer s(std::move(o));
  initialize(s);
  auto all = expect_ok(call(s, "list_reports", json::object()), "list_reports");
  EXPECT_EQ(all["total"], 4);
  EXPECT_EQ(all["roots"], 2);
  EXPECT_EQ(all["walk_cut"], false);
  std::vector<std::string> paths, formats;
  for (const auto& r : all["reports"]) {
    paths.push_back(r["path"]);
    formats.push_back(r["format"]);
  }
  EXPECT_EQ(paths,
            (std::vector<std::string>{"a.ncu-rep", "runs/renamed.bin", "runs/step/trace.json", "other.ncu-rep"}));
  EXPECT_EQ(formats, (std::vector<std::string>{"ncu-rep", "ncu-rep", "kineto", "ncu-rep"}));
  EXPECT_EQ(all["reports"][3]["root"], 1);
  EXPECT_EQ(all["reports"][0]["size"]["value"], fs::file_size(root + "/a.ncu-rep"));
  EXPECT_EQ(all.dump().find(root), std::string::npos) << "no server path in the answer";
  EXPECT_EQ(expect_ok(call(s, "list_reports", {{"kind", "kineto"}}), "list_reports")["total"], 1);
  EXPECT_EQ(expect_ok(call(s, "list_reports", {{"pattern", "RENAMED"}}), "list_reports")["total"], 1);
  auto page = expect_ok(call(s, "list_reports", {{"limit", 1}, {"offset", 1}}), "list_reports");
  EXPECT_EQ(page["reports"][0]["path"], "runs/renamed.bin");
  EXPECT_EQ(page["next_offset"], 2);
  // The paths it gives are the other tools' arguments, under either root.
  expect_ok(call(s, "list_kernels", {{"report", "runs/renamed.bin"}}), "list_kernels");
  expect_ok(call(s, "list_kernels", {{"report", "other.ncu-rep"}}), "list_kernels");
  expect_ok(call(s, "timeline", {{"trace", "runs/step/trace.json"}}), "timeline");
  EXPECT_NE(expect_tool_error(call(s, "list_reports", {{"pattern", "(unclosed"}})).find("invalid regular expression"),
            std::string::npos);
}

// timeline is keet timeline's answer: the verdicts (costliest first, with
// advice), the GPU's busy time, steps, and the kernels by GPU time as a page.
TEST(McpTools, TimelineOfAPyTorchTraceIsTheCommandsAnswer) {
  std::string root = fresh_root("timeline_tool");
  testing::KinetoWriter trace;
  for (int i = 0; i < 30; ++i) trace.launch("void gemm<float>(float*)", i * 200.0, i * 200.0 + 10, 20);
  for (int i = 0; i < 10; ++i) trace.launch("void relu<float>(float*)", 6000 + i * 50.0, 6000 + i * 50.0 + 5, 4);
  trace.memcpy("Memcpy HtoD (Pageable -> Device)", 7000, 2000, 64 << 20, 900);
  testing::write_file(root + "/run.pt.trace.json", trace.json());
  McpServer s(options_for(root));
  initialize(s);
  auto reply = call(s, "timeline", {{"trace", "run.pt.trace.json"}, {"top", 1}});
  auto t = expect_ok(reply, "timeline");
  EXPECT_EQ(t["trace"], "run.pt.trace.json");
  EXPECT_EQ(t["source"], "kineto");
  EXPECT_EQ(t["gpus"], json::array({"NVIDIA H100 80GB HBM3"}));
  EXPECT_EQ(t["launches"], 40);
  ASSERT_EQ(t["kernels"].size(), 1u);
  EXPECT_EQ(t["total"], 2);
  EXPECT_EQ(t["next_offset"], 1);
  EXPECT_EQ(t["kernels"][0]["short_name"], "gemm");
  auto cli = app::in_process_runner(no_env)({"timeline", root + "/run.pt.trace.json", "--format", "json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  auto doc = json::parse(cli.out);
  ASSERT_EQ(t["verdicts"].size(), doc["verdicts"].size());
  ASSERT_FALSE(t["verdicts"].empty());
  for (size_t i = 0; i < doc["verdicts"].size(); ++i) {
    EXPECT_EQ(t["verdicts"][i]["title"], doc["verdicts"][i]["title"]);
    EXPECT_EQ(t["verdicts"][i]["advice"], doc["verdicts"][i]["advice"]);
  }
  EXPECT_EQ(t["gpu_busy"]["value"], doc["gpu_busy_ns"]);
  std::string text = reply["result"]["content"][0]["text"];
  EXPECT_NE(text.find("kineto run of"), std::string::npos) << text;
  EXPECT_NE(text.find("- " + doc["verdicts"][0]["title"].get<std::string>()), std::string::npos) << text;
  EXPECT_EQ(reply.dump().find(root), std::string::npos) << "no server path in the answer";
  auto second = expect_ok(call(s, "timeline", {{"trace", "run.pt.trace.json"}, {"top", 1}, {"offset", 1}}), "timeline");
  EXPECT_EQ(second["kernels"][0]["short_name"], "relu");
  EXPECT_NE(expect_tool_error(call(s, "timeline", {{"trace", "absent.json"}})).find("no such report"),
            std::string::npos);
}

// Every Kineto fixture trace (V100 to B200, HIP, 8-rank sets, up to 19,370
// kernels): timeline answers within its budget and its outputSchema.
TEST(McpTools, TimelineOfEveryKinetoFixtureFitsItsSchemaAndBudget) {
  KEET_REQUIRE_SHARED();
  std::string root = *testing::shared_dir() + "/fixtures/kineto";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " is absent";
  McpServer s(options_for(root));
  initialize(s);
  auto listed = expect_ok(call(s, "list_reports", {{"kind", "kineto"}, {"limit", 1000}}), "list_reports");
  EXPECT_GE(listed["total"].get<int>(), 30) << "the fixtures' traces, found by their bytes";
  size_t largest = 0;
  for (const auto& r : listed["reports"]) {
    SCOPED_TRACE(r["path"].get<std::string>());
    auto reply = call(s, "timeline", {{"trace", r["path"]}});
    expect_ok(reply, "timeline");
    largest = std::max(largest, json_text(reply["result"]).size());
  }
  std::cout << "timeline: the largest answer over the Kineto fixtures is " << largest << " bytes\n";
}

TEST(McpTools, DiffHistoryAndGateOverTheConfiguredStore) {
  std::string root = fresh_root("loop");
  std::string before = write_report(root, "before.ncu-rep", 100000);
  std::string after = write_report(root, "after.ncu-rep", 150000);
  std::string store = "sqlite:" + root + "/history.sqlite";
  auto run = app::in_process_runner(no_env);
  auto rec = run({"record", before, "--tag", "main", "--db", store});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  McpServer s(options_for(root, store));
  initialize(s);
  auto d =
      expect_ok(call(s, "diff_reports", {{"before", "before.ncu-rep"}, {"after", "after.ncu-rep"}}), "diff_reports");
  EXPECT_EQ(d["summary"]["slower"], 1);
  EXPECT_EQ(d["threshold"]["value"], 0.02);
  bool slower = false;
  for (const auto& p : d["pairs"]) slower |= p["verdict"] == "slower" && p["change"]["value"].get<double>() > 0.49;
  EXPECT_TRUE(slower) << d.dump();
  auto one =
      expect_ok(call(s, "diff_reports", {{"before", "before.ncu-rep"}, {"after", "after.ncu-rep"}, {"limit", 1}}),
                "diff_reports");
  EXPECT_EQ(one["pairs"].size(), 1u);
  EXPECT_EQ(one["truncated"], true);

  auto h = expect_ok(call(s, "history", {{"kernel", "regex:^strided_copy"}}), "history");
  ASSERT_EQ(h["kernels"].size(), 1u);
  EXPECT_EQ(h["kernels"][0]["points"][0]["tag"], "main");
  EXPECT_EQ(h["kernels"][0]["points"][0]["duration"]["value"], 100000.0);
  EXPECT_FALSE(h["kernels"][0]["points"][0].contains("snapshot"));
  auto full = expect_ok(call(s, "history", {{"kernel", "regex:^strided_copy"}, {"detail", true}}), "history");
  EXPECT_FALSE(full["kernels"][0]["points"][0]["snapshot"]["metrics"].empty());

  auto failed = expect_ok(call(s, "gate", {{"report", "after.ncu-rep"}, {"baseline", "main"}}), "gate");
  EXPECT_EQ(failed["passed"], false);  // a regression is an answer, not an error
  EXPECT_EQ(failed["regressions"], 1);
  auto passed = expect_ok(call(s, "gate", {{"report", "before.ncu-rep"}, {"baseline", "main"}}), "gate");
  EXPECT_EQ(passed["passed"], true);
  auto lenient = expect_ok(call(s, "gate", {{"report", "after.ncu-rep"}, {"max_slowdown", "60%"}}), "gate");
  EXPECT_EQ(lenient["passed"], true);
  auto none = expect_tool_error(call(s, "gate", {{"report", "after.ncu-rep"}, {"baseline", "nightly"}}));
  EXPECT_NE(none.find("no baseline 'nightly'"), std::string::npos) << none;
}

// One kernel per (name, grid), 256 threads a block.
std::string write_kernels(const std::string& dir, const std::string& file,
                          const std::vector<std::pair<std::string, uint64_t>>& kernels) {
  testing::ReportWriter w;
  testing::ReportWriter::Block b;
  for (const auto& [name, grid] : kernels)
    b.results.push_back(w.kernel(name, grid, 256, testing::scenario_metrics(100000)).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  w.write(dir + "/" + file);
  return dir + "/" + file;
}

TEST(McpTools, DiffSaysHowEachPairWasMadeAndTakesPairs) {
  std::string root = fresh_root("diff-pairs");
  write_kernels(root, "old.ncu-rep", {{"oldName", 64}});
  write_kernels(root, "new.ncu-rep", {{"newName", 128}});
  McpServer s(options_for(root));
  initialize(s);
  auto one = expect_ok(call(s, "diff_reports", {{"before", "old.ncu-rep"}, {"after", "new.ncu-rep"}}), "diff_reports");
  ASSERT_EQ(one["pairs"].size(), 1u);
  EXPECT_EQ(one["pairs"][0]["paired_by"], "only_kernel");
  EXPECT_EQ(one["pairs"][0]["pairing"],
            "position, the only kernel of each report: the kernel names differ (oldName -> newName)");
  EXPECT_TRUE(one["suggested_pairs"].empty());

  // Two kernels each: "same" pairs by name; the renamed one has another grid, so it is suggested, not paired.
  write_kernels(root, "two-old.ncu-rep", {{"same", 8}, {"oldName", 64}});
  write_kernels(root, "two-new.ncu-rep", {{"newName", 128}, {"same", 8}});
  auto reply = call(s, "diff_reports", {{"before", "two-old.ncu-rep"}, {"after", "two-new.ncu-rep"}});
  auto two = expect_ok(reply, "diff_reports");
  ASSERT_EQ(two["pairs"].size(), 1u);
  EXPECT_EQ(two["pairs"][0]["paired_by"], "name");
  EXPECT_EQ(two["pairs"][0]["pairing"], "");
  EXPECT_EQ(two["missing"][0]["name"], "oldName()");
  EXPECT_EQ(two["new"][0]["name"], "newName()");
  EXPECT_EQ(two["suggested_pairs"], json::parse("[[1, 0]]"));
  EXPECT_NE(reply["result"]["content"][0]["text"].get<std::string>().find("try pairs [[1,0]]"), std::string::npos)
      << reply.dump();

  // The suggestion passed back as pairs: a forced pair, said so.
  auto forced =
      expect_ok(call(s, "diff_reports",
                     {{"before", "two-old.ncu-rep"}, {"after", "two-new.ncu-rep"}, {"pairs", two["suggested_pairs"]}}),
                "diff_reports");
  ASSERT_EQ(forced["pairs"].size(), 2u);
  EXPECT_EQ(forced["pairs"][0]["paired_by"], "forced");
  EXPECT_EQ(forced["pairs"][0]["pairing"], "--pair 1:0: the kernel names differ (oldName -> newName)");
  EXPECT_TRUE(forced["missing"].empty() && forced["new"].empty());

  // A pair naming no kernel is keet diff's one-line error; a pair not of two indices is refused before anything runs.
  auto absent = expect_tool_error(
      call(s, "diff_reports",
           {{"before", "two-old.ncu-rep"}, {"after", "two-new.ncu-rep"}, {"pairs", json::parse("[[5, 0]]")}}));
  EXPECT_NE(absent.find("--pair 5:0: the first report has no kernel 5"), std::string::npos) << absent;
  for (auto bad : {json::parse("[[1]]"), json::parse("[[1, 2, 3]]"), json::parse("[[-1, 0]]"),
                   json::parse("[[\"1\", 0]]"), json::parse("[\"1:0\"]")})
    EXPECT_EQ(error_code(call(s, "diff_reports",
                              {{"before", "two-old.ncu-rep"}, {"after", "two-new.ncu-rep"}, {"pairs", bad}})),
              -32602)
        << bad.dump();
}

TEST(McpTools, MalformedReportIsAToolErrorWithTheReadersLine) {
  std::string root = fresh_root("malformed");
  std::ofstream(root + "/bad.ncu-rep") << "NVR\0 this is not a report";
  std::string good = write_report(root, "good.ncu-rep", 120000);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(root + "/cut.ncu-rep", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  McpServer s(options_for(root));
  initialize(s);
  for (std::string tool : {"list_kernels", "analyze_kernel", "get_metrics", "source_hotspots", "gate"}) {
    auto text = expect_tool_error(call(s, tool, {{"report", "bad.ncu-rep"}}));
    auto cli = app::in_process_runner(no_env)({"list", root + "/bad.ncu-rep"});
    EXPECT_NE(cli.exit_code, 0);
    EXPECT_NE(cli.err.find(text), std::string::npos) << tool << ": " << text << " vs " << cli.err;
    EXPECT_EQ(text.find(root), std::string::npos) << tool << " names the server's folder: " << text;
  }
  auto cut = expect_tool_error(call(s, "analyze_kernel", {{"report", "cut.ncu-rep"}}));
  EXPECT_NE(cut.find("cut.ncu-rep"), std::string::npos) << cut;  // the reader's line names the file
  expect_tool_error(call(s, "diff_reports", {{"before", "good.ncu-rep"}, {"after", "bad.ncu-rep"}}));
}

TEST(McpTools, ReportPathsStayUnderTheRoots) {
  std::string root = fresh_root("sandbox");
  std::string outside = fresh_root("sandbox-outside");
  std::string secret = write_report(outside, "secret.ncu-rep", 120000);
  fs::create_symlink(secret, root + "/link.ncu-rep");
  fs::create_directories(root + "/sub");
  write_report(root + "/sub", "ok.ncu-rep", 120000);
  McpServer s(options_for(root));
  initialize(s);
  for (std::string path : {secret, std::string("link.ncu-rep"), std::string("../mcp-sandbox-outside/secret.ncu-rep"),
                           std::string("/etc/passwd")}) {
    auto text = expect_tool_error(call(s, "list_kernels", {{"report", path}}));
    EXPECT_NE(text.find("outside the folders"), std::string::npos) << path << ": " << text;
  }
  EXPECT_NE(expect_tool_error(call(s, "list_kernels", {{"report", "missing.ncu-rep"}})).find("no such report"),
            std::string::npos);
  EXPECT_NE(expect_tool_error(call(s, "list_kernels", {{"report", "sub"}})).find("not a regular file"),
            std::string::npos);
  expect_ok(call(s, "list_kernels", {{"report", "sub/ok.ncu-rep"}}), "list_kernels");
  expect_ok(call(s, "list_kernels", {{"report", root + "/sub/../sub/ok.ncu-rep"}}), "list_kernels");

  auto small = options_for(root);
  small.max_report_bytes = 100;
  McpServer limited(std::move(small));
  initialize(limited);
  EXPECT_NE(
      expect_tool_error(call(limited, "list_kernels", {{"report", "sub/ok.ncu-rep"}})).find("over this server's limit"),
      std::string::npos);
}

TEST(McpTools, FixtureReports) {
  KEET_REQUIRE_SHARED();
  auto reports = testing::fixture_reports();
  ASSERT_FALSE(reports.empty());
  std::string report = reports.front();
  McpServer s(options_for(fs::path(report).parent_path().string()));
  initialize(s);
  auto list = expect_ok(call(s, "list_kernels", {{"report", report}, {"limit", 5}}), "list_kernels");
  ASSERT_GT(list["total"].get<int>(), 0);
  expect_ok(call(s, "analyze_kernel", {{"report", report}, {"top", 0}}), "analyze_kernel");
  expect_ok(call(s, "get_metrics", {{"report", report}, {"pattern", "^sm__"}}), "get_metrics");
  expect_ok(call(s, "source_hotspots", {{"report", report}}), "source_hotspots");
  expect_ok(call(s, "diff_reports", {{"before", report}, {"after", report}}), "diff_reports");
}

// ---------------------------------------------------------- streamable HTTP

HttpExchange post(const json& body, const std::string& session = "", const std::string& version = "2025-06-18") {
  HttpExchange ex{
      "POST", {{"content-type", "application/json"}, {"accept", "application/json, text/event-stream"}}, body.dump()};
  if (!session.empty()) ex.headers["mcp-session-id"] = session;
  if (!version.empty()) ex.headers["mcp-protocol-version"] = version;
  return ex;
}

std::string header(const service::HttpReply& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

TEST(McpHttp, ASessionFromInitializeToDelete) {
  std::string root = fresh_root("http");
  write_report(root, "r.ncu-rep", 120000);
  McpServer s(options_for(root));
  auto init = s.handle_http(post(request(1, "initialize", initialize_params()), "", ""));
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(header(init, "Content-Type"), "application/json");
  std::string sid = header(init, "Mcp-Session-Id");
  ASSERT_EQ(sid.size(), 32u);
  EXPECT_TRUE(std::ranges::all_of(sid, [](char c) { return c >= 0x21 && c <= 0x7e; }));
  EXPECT_EQ(json::parse(init.body)["result"]["protocolVersion"], "2025-06-18");

  auto note = s.handle_http(post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, sid));
  EXPECT_EQ(note.status, 202);
  EXPECT_TRUE(note.body.empty());
  auto tools = s.handle_http(post(request(2, "tools/list"), sid));
  ASSERT_EQ(tools.status, 200);
  EXPECT_EQ(json::parse(tools.body)["result"]["tools"].size(), 10u);
  auto listed = s.handle_http(
      post(request(3, "tools/call", {{"name", "list_kernels"}, {"arguments", {{"report", "r.ncu-rep"}}}}), sid));
  ASSERT_EQ(listed.status, 200);
  expect_ok(json::parse(listed.body), "list_kernels");
  auto unknown_method = s.handle_http(post(request(4, "prompts/list"), sid));
  EXPECT_EQ(unknown_method.status, 200);  // a JSON-RPC error travels in a 200
  EXPECT_EQ(error_code(json::parse(unknown_method.body)), -32601);
  EXPECT_EQ(s.handle_http(post({{"jsonrpc", "2.0"}, {"id", 9}, {"result", json::object()}}, sid)).status, 202);

  // A second client gets a session of its own.
  auto other = s.handle_http(post(request(1, "initialize", initialize_params("2025-03-26")), "", ""));
  EXPECT_NE(header(other, "Mcp-Session-Id"), sid);
  EXPECT_EQ(json::parse(other.body)["result"]["protocolVersion"], "2025-03-26");

  EXPECT_EQ(s.handle_http(post(request(5, "tools/list"))).status, 400);                      // no session id
  EXPECT_EQ(s.handle_http(post(request(6, "tools/list"), "0123456789abcdef")).status, 404);  // unknown session
  EXPECT_EQ(s.handle_http({"DELETE", {{"mcp-session-id", sid}}, ""}).status, 200);
  EXPECT_EQ(s.handle_http(post(request(7, "tools/list"), sid)).status, 404);  // ended
  EXPECT_EQ(s.handle_http({"DELETE", {{"mcp-session-id", sid}}, ""}).status, 404);
  EXPECT_EQ(s.handle_http({"DELETE", {}, ""}).status, 400);
}

TEST(McpHttp, RefusesWhatTheTransportDoesNotAllow) {
  auto opt = options_for(fresh_root("http-refuse"));
  opt.allowed_origins = {"https://ide.example"};
  McpServer s(std::move(opt));
  auto get = s.handle_http({"GET", {{"accept", "text/event-stream"}}, ""});
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(header(get, "Allow"), "POST, DELETE");
  auto init = request(1, "initialize", initialize_params());
  auto with_origin = [&](const std::string& origin) {
    auto ex = post(init, "", "");
    ex.headers["origin"] = origin;
    return s.handle_http(ex).status;
  };
  EXPECT_EQ(with_origin("http://evil.example"), 403);
  EXPECT_EQ(with_origin("http://localhost.evil.example"), 403);
  EXPECT_EQ(with_origin("http://127.0.0.1.evil.example:80"), 403);
  EXPECT_EQ(with_origin("null"), 403);
  EXPECT_EQ(with_origin("http://localhost:6274"), 200);
  EXPECT_EQ(with_origin("http://127.0.0.1"), 200);
  EXPECT_EQ(with_origin("http://[::1]:8080"), 200);
  EXPECT_EQ(with_origin("https://IDE.example"), 200);

  auto ex = post(init, "", "");
  ex.headers["content-type"] = "text/plain";
  EXPECT_EQ(s.handle_http(ex).status, 415);
  ex = post(init, "", "");
  ex.headers["accept"] = "text/html";
  EXPECT_EQ(s.handle_http(ex).status, 406);
  EXPECT_EQ(s.handle_http(post(init, "", "1999-01-01")).status, 400);
  ex = post(init, "", "");
  ex.body = "{\"jsonrpc\":";
  auto parse = s.handle_http(ex);
  EXPECT_EQ(parse.status, 400);
  EXPECT_EQ(json::parse(parse.body)["error"]["code"], -32700);
  ex.body = std::string(McpOptions{}.max_message_bytes + 1, ' ');
  EXPECT_EQ(s.handle_http(ex).status, 413);
  EXPECT_EQ(s.handle_http({"PUT", {}, ""}).status, 405);
}

// At the session limit a new session takes the place of one idle for
// session_idle, never of one in use: a client opening sessions in a loop is
// refused (503) rather than ending everyone else's.
TEST(McpHttp, PastTheLimitOnlyAnIdleSessionMakesRoom) {
  auto now = std::chrono::steady_clock::now();
  auto opt = options_for(fresh_root("http-limit"));
  opt.max_sessions = 2;
  opt.session_idle = std::chrono::seconds(600);
  opt.clock = [&now] { return now; };
  McpServer s(std::move(opt));
  auto open = [&] { return s.handle_http(post(request(1, "initialize", initialize_params()), "", "")); };
  std::string first = header(open(), "Mcp-Session-Id"), second = header(open(), "Mcp-Session-Id");
  auto refused = open();
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(header(refused, "Retry-After"), "30");
  EXPECT_EQ(header(refused, "Mcp-Session-Id"), "");
  EXPECT_EQ(s.handle_http(post(request(2, "ping"), first)).status, 200) << "the sessions in use go on";
  now += std::chrono::seconds(400);
  EXPECT_EQ(s.handle_http(post(request(2, "ping"), first)).status, 200);
  now += std::chrono::seconds(300);  // `second` idle 700 s, `first` 300 s
  std::string third = header(open(), "Mcp-Session-Id");
  EXPECT_FALSE(third.empty());
  EXPECT_EQ(s.handle_http(post(request(2, "ping"), second)).status, 404) << "the idle one made room";
  EXPECT_EQ(s.handle_http(post(request(2, "ping"), first)).status, 200);
  EXPECT_EQ(s.handle_http(post(request(2, "ping"), third)).status, 200);
  EXPECT_EQ(s.handle_http({"DELETE", {{"mcp-session-id", first}}, ""}).status, 200);
  EXPECT_FALSE(header(open(), "Mcp-Session-Id").empty()) << "an ended session makes room at once";
}

TEST(McpTools, TableIsComplete) {
  // The embedded table loaded whole: a declaration the checker cannot check would be left out.
  EXPECT_EQ(service::tool_declarations().size(), 10u);
  for (const auto& t : service::tool_declarations()) {
    EXPECT_EQ(service::unchecked_keyword(t["outputSchema"]), std::nullopt) << t["name"];
    EXPECT_FALSE(t["title"].get<std::string>().empty());
    // Every tool states its budget and the list that pages within it, and
    // its answer declares the page fields.
    auto b = service::budget_of(t);
    EXPECT_GE(b.bytes, 2048u) << t["name"];
    EXPECT_LE(b.bytes, 16384u) << t["name"];
    ASSERT_FALSE(b.list.empty()) << t["name"];
    std::string pointer = "/properties" + b.list;
    for (size_t at = pointer.find('/', 12); at != std::string::npos; at = pointer.find('/', at + 13))
      pointer.insert(at, "/properties");
    EXPECT_EQ(t["outputSchema"].value(json::json_pointer(pointer + "/type"), ""), "array")
        << t["name"] << " " << pointer;
    for (const char* field : {"total", "offset", "next_offset", "truncated"})
      EXPECT_TRUE(t["outputSchema"]["properties"].contains(field)) << t["name"] << " lacks " << field;
  }
}

// Every answer is made by the table's shapes: one the projection would
// misread (a misspelt operation, a shape named and not declared) fails here.
TEST(McpTools, ShapesAreWellFormed) {
  EXPECT_EQ(service::answer_shapes().problem(), std::nullopt);
  EXPECT_GE(service::agent_tool_table()["shapes"].size(), 20u);
}

// ------------------------------------------------------------- size budgets

TEST(McpPage, IndicesFoldIntoRanges) {
  EXPECT_EQ(service::index_ranges({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(service::index_ranges({5}), "5");
  EXPECT_EQ(service::index_ranges({}), "");
}

json rows(int n, size_t bytes_each) {
  json out = json::array();
  for (int i = 0; i < n; ++i) out.push_back({{"index", i}, {"text", std::string(bytes_each, 'x')}});
  return out;
}

TEST(McpPage, AnAnswerOverItsBudgetLosesRowsNotItsShape) {
  json answer = {{"rows", rows(50, 200)}};
  service::set_page(answer, 50, 10, 100);
  std::string text = "summary";
  service::fit_budget({4096, "/rows"}, answer, text);
  EXPECT_LE(service::result_bytes(text, answer), 4096u);
  size_t kept = answer["rows"].size();
  EXPECT_GT(kept, 5u);
  EXPECT_LT(kept, 50u);
  EXPECT_EQ(answer["rows"][0]["index"], 0);  // the page's own first row stays first
  EXPECT_EQ(answer["next_offset"], 10 + static_cast<int>(kept));
  EXPECT_EQ(answer["truncated"], true);
  EXPECT_NE(text.find("cut to the 4096-byte size budget"), std::string::npos) << text;
  // One more row would not have fitted: the page is the largest that does.
  json bigger = {{"rows", rows(static_cast<int>(kept) + 1, 200)}};
  service::set_page(bigger, kept + 1, 10, 100);
  std::string t2 = "summary";
  EXPECT_GT(
      service::result_bytes(t2 + "; rows 11-99 of 100 (cut to the 4096-byte size budget), next_offset 99", bigger),
      4096u);
}

TEST(McpPage, OneRowStaysSoThatPagingMovesOn) {
  json answer = {{"rows", rows(3, 8000)}};
  service::set_page(answer, 3, 0, 3);
  std::string text = "summary";
  service::fit_budget({4096, "/rows"}, answer, text);
  EXPECT_EQ(answer["rows"].size(), 1u);
  EXPECT_EQ(answer["next_offset"], 1);
}

TEST(McpPage, AnAnswerWithinItsBudgetIsUntouched) {
  json answer = {{"rows", rows(3, 10)}};
  service::set_page(answer, 3, 0, 3);
  json before = answer;
  std::string text = "summary";
  service::fit_budget({4096, "/rows"}, answer, text);
  EXPECT_EQ(answer, before);
  EXPECT_EQ(text, "summary; rows 1-3 of 3");
}

// Many distinct kernels with long names: more than one page, and the budget
// (not the limit) ends a page asked to hold them all; the pages meet.
TEST(McpTools, ALongListIsPagedWithinTheBudget) {
  std::string root = fresh_root("budget");
  std::vector<std::pair<std::string, uint64_t>> kernels;
  for (int i = 0; i < 300; ++i) kernels.push_back({fmt::format("kernel_with_a_rather_long_name_{:03}", i), 64});
  write_kernels(root, "many.ncu-rep", kernels);
  McpServer s(options_for(root));
  initialize(s);
  auto first = expect_ok(call(s, "list_kernels", {{"report", "many.ncu-rep"}, {"limit", 1000}, {"sort", "index"}}),
                         "list_kernels");
  EXPECT_EQ(first["total"], 300);
  EXPECT_EQ(first["truncated"], true);
  size_t n = first["kernels"].size();
  ASSERT_GT(n, 10u);
  ASSERT_LT(n, 300u);
  EXPECT_EQ(first["next_offset"], n);
  auto second = expect_ok(
      call(s, "list_kernels",
           {{"report", "many.ncu-rep"}, {"limit", 1000}, {"sort", "index"}, {"offset", first["next_offset"]}}),
      "list_kernels");
  EXPECT_EQ(second["kernels"][0]["index"], n);  // nothing skipped, nothing repeated
  auto metrics =
      expect_ok(call(s, "get_metrics", {{"report", "many.ncu-rep"}, {"limit", 2000}, {"zeros", true}}), "get_metrics");
  EXPECT_EQ(metrics["offset"], 0);
}

// Every tool at its default arguments on real reports: the figures of
// docs/mcp.md, held to each tool's declared budget by expect_ok.
TEST(McpTools, EveryToolStaysWithinItsBudgetOnFixtures) {
  KEET_REQUIRE_SHARED();
  const std::vector<std::string> wanted = {"bwd29__self-join-MiSTIC/profile.ncu-rep", "piragi__fuzigrad/output.ncu-rep",
                                           "Lashi0812__CudaProgramming/profile.ncu-rep",
                                           "AveryClapp__ESMM-Research/ee5ce73/profile.ncu-rep"};
  std::vector<std::string> reports;
  for (const auto& r : testing::fixture_reports())
    for (const auto& w : wanted)
      if (r.ends_with("/" + w)) reports.push_back(r);
  if (reports.size() < 2) GTEST_SKIP() << "the fixtures named here are absent";
  std::string store = "sqlite:" + fresh_root("budget-store") + "/h.sqlite";
  auto run = app::in_process_runner(no_env);
  for (const auto& r : reports) ASSERT_EQ(run({"record", r, "--db", store}).exit_code, 0) << r;
  auto o = options_for(fs::path(reports.front()).parent_path().string(), store);
  o.roots.clear();
  for (const auto& r : reports) o.roots.push_back(fs::path(r).parent_path().string());
  McpServer s(std::move(o));
  initialize(s);
  for (const auto& r : reports) {
    SCOPED_TRACE(r);
    expect_ok(call(s, "list_kernels", {{"report", r}}), "list_kernels");
    expect_ok(call(s, "list_kernels", {{"report", r}, {"launches", "all"}, {"limit", 1000}, {"mangled", true}}),
              "list_kernels");
    expect_ok(call(s, "analyze_kernel", {{"report", r}}), "analyze_kernel");
    expect_ok(call(s, "analyze_kernel", {{"report", r}, {"top", 0}}), "analyze_kernel");
    expect_ok(call(s, "get_metrics", {{"report", r}}), "get_metrics");
    expect_ok(call(s, "get_metrics", {{"report", r}, {"limit", 2000}, {"zeros", true}}), "get_metrics");
    expect_ok(call(s, "source_hotspots", {{"report", r}}), "source_hotspots");
    expect_ok(call(s, "source_hotspots", {{"report", r}, {"top", 200}}), "source_hotspots");
    expect_ok(call(s, "diff_reports", {{"before", reports.front()}, {"after", r}}), "diff_reports");
    expect_ok(call(s, "diff_reports", {{"before", reports.front()}, {"after", r}, {"limit", 1000}, {"detail", true}}),
              "diff_reports");
    expect_ok(call(s, "gate", {{"report", r}, {"detail", true}, {"limit", 1000}}), "gate");
  }
  expect_ok(call(s, "explain_term", {{"term", "long_scoreboard"}, {"count", 10}}), "explain_term");
  expect_ok(call(s, "history", json::object()), "history");
  auto h = expect_ok(call(s, "history", {{"detail", true}, {"runs", 500}, {"limit", 1000}}), "history");
  EXPECT_EQ(h["truncated"], true);  // 150 and more kernels in full do not fit 16 KB
}

}  // namespace
}  // namespace keet
