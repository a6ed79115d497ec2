// End-to-end: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk,
// from the npm registry: scripts/fetch-mcp-client) drives the real keet mcp
// over stdio: initialize, tools/list, ping, and every tool on a report the
// tests write and on a fixture report; the SDK checks each structuredContent
// against the tool's outputSchema, and tests/mcp/client.mjs validates it again
// with Ajv. The streamable HTTP test runs the same client against the server
// named by KEET_MCP_HTTP_URL (keet serve's /mcp), and skips when it is unset.
// Without npm, node or the registry the tests skip, saying why.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/in_process.h"
#include "service/mcp.h"
#include "support/kineto_writer.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using nlohmann::json;
namespace fs = std::filesystem;

// build/mcp-client with the SDK installed, or nullopt and why not.
std::optional<std::string> client_dir(std::string& why) {
  if (run_command("command -v node").rc != 0) {
    why = "node is not installed (scripts/bootstrap installs npm and node)";
    return std::nullopt;
  }
  std::string dir = (fs::path(build_dir()) / "mcp-client").string();
  auto r = run_command(shell_quote(source_dir() + "/scripts/fetch-mcp-client") + " " + shell_quote(dir));
  if (r.rc != 0) {
    why = "MCP SDK unavailable (scripts/fetch-mcp-client: " + r.err + ")";
    return std::nullopt;
  }
  return dir;
}

#define REQUIRE_CLIENT(dir)    \
  std::string why_;            \
  auto dir = client_dir(why_); \
  if (!dir) GTEST_SKIP() << why_;

json run_client(const std::string& dir, const json& plan, const std::string& name) {
  std::string plan_file = temp_path(name + ".plan.json");
  std::ofstream(plan_file) << plan.dump();
  // Node resolves the SDK from the script's folder, so the script runs from
  // there, under a name of its own (ctest -j runs these tests side by side).
  std::string script = dir + "/client-" + name + ".mjs";
  fs::copy_file(source_dir() + "/tests/mcp/client.mjs", script, fs::copy_options::overwrite_existing);
  auto r = run_command("timeout 120 node " + shell_quote(script) + " " + shell_quote(plan_file));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  json out = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(out.is_discarded()) << "client printed no JSON: " << r.out << r.err;
  return out.is_discarded() ? json::object() : out;
}

std::string writer_report(const std::string& dir, const std::string& file, double duration_ns) {
  write_file(dir + "/" + file, scenario_and_tiny_report(duration_ns));
  return dir + "/" + file;
}

json tool_call(const std::string& tool, json args) { return {{"tool", tool}, {"arguments", std::move(args)}}; }

// The call succeeded, the SDK accepted the structuredContent against the
// declared outputSchema and Ajv agrees.
void expect_valid(const json& entry) {
  SCOPED_TRACE(entry.dump().substr(0, 2000));
  EXPECT_EQ(entry.value("sdkAccepted", false), true);
  EXPECT_EQ(entry.value("isError", true), false);
  ASSERT_TRUE(entry.contains("structured") && entry["structured"].is_object());
  EXPECT_EQ(entry.value("ajvValid", false), true) << entry.value("ajvErrors", "");
  EXPECT_FALSE(entry.value("text", "").empty());
}

const json& find_call(const json& out, size_t i) {
  static const json none = json::object();
  if (!out.contains("calls") || out["calls"].size() <= i) {
    ADD_FAILURE() << "call " << i << " missing: " << out.dump().substr(0, 2000);
    return none;
  }
  return out["calls"][i];
}

void expect_session(const json& out) {
  ASSERT_FALSE(out.contains("fatal")) << out["fatal"];
  EXPECT_EQ(out.value("protocolVersion", ""), "2025-06-18");
  EXPECT_EQ(out["serverInfo"].value("name", ""), "keet");
  EXPECT_TRUE(out["capabilities"].contains("tools"));
  EXPECT_EQ(out.value("ping", false), true);
  EXPECT_EQ(out["tools"], json({"list_kernels", "analyze_kernel", "get_metrics", "source_hotspots", "explain_term",
                                "diff_reports", "history", "gate", "list_reports", "timeline"}));
}

TEST(McpClientE2E, StdioEveryToolOnATestWriterReport) {
  REQUIRE_CLIENT(dir);
  std::string root = temp_path("mcp-e2e-root");
  fs::remove_all(root);
  fs::create_directories(root);
  writer_report(root, "before.ncu-rep", 100000);
  writer_report(root, "after.ncu-rep", 150000);
  std::ofstream(root + "/broken.ncu-rep") << "NVR\0 not a report";
  KinetoWriter trace;
  for (int i = 0; i < 8; ++i) trace.launch("void k<float>(float*)", i * 100.0, i * 100.0 + 8, 30);
  fs::create_directories(root + "/runs");
  write_file(root + "/runs/step.pt.trace.json", trace.json());
  std::string store = "sqlite:" + root + "/history.sqlite";
  auto rec = run_keet("record " + shell_quote(root + "/before.ncu-rep") + " --tag main --db " + shell_quote(store));
  ASSERT_EQ(rec.rc, 0) << rec.err;
  json plan = {
      {"transport", "stdio"},
      {"command", keet_binary()},
      {"args", {"mcp", "--root", root, "--db", store}},
      {"calls",
       {tool_call("list_kernels", {{"report", "after.ncu-rep"}}),
        tool_call("analyze_kernel", {{"report", "after.ncu-rep"}, {"kernel", "strided_copy"}}),
        tool_call("get_metrics", {{"report", "after.ncu-rep"}, {"pattern", "^dram__|^gpu__"}}),
        tool_call("source_hotspots", {{"report", "after.ncu-rep"}}),
        tool_call("explain_term", {{"term", "long_scoreboard"}}),
        tool_call("diff_reports", {{"before", "before.ncu-rep"}, {"after", "after.ncu-rep"}}),
        tool_call("history", json::object()), tool_call("gate", {{"report", "after.ncu-rep"}, {"baseline", "main"}}),
        tool_call("analyze_kernel", {{"report", "broken.ncu-rep"}}),
        tool_call("list_kernels", {{"report", "/etc/passwd"}}),
        tool_call("list_kernels", {{"report", "after.ncu-rep"}, {"limit", "many"}}),
        tool_call(
            "diff_reports",
            {{"before", "before.ncu-rep"}, {"after", "after.ncu-rep"}, {"pairs", json::parse("[[1, 0], [0, 1]]")}}),
        tool_call("list_reports", {{"kind", "kineto"}}),
        tool_call("timeline", {{"trace", "runs/step.pt.trace.json"}})}}};
  auto out = run_client(*dir, plan, "stdio-writer");
  expect_session(out);
  for (size_t i = 0; i < 8; ++i) expect_valid(find_call(out, i));
  EXPECT_EQ(find_call(out, 0)["structured"]["total"], 2);
  EXPECT_EQ(find_call(out, 1)["structured"]["kernel"]["bottleneck"]["class"], "memory");
  EXPECT_EQ(find_call(out, 5)["structured"]["summary"]["slower"], 1);
  EXPECT_EQ(find_call(out, 6)["structured"]["kernels"].size(), 2u);
  EXPECT_EQ(find_call(out, 7)["structured"]["passed"], false);
  // A malformed report: a tool result with isError and the reader's one line.
  const auto& broken = find_call(out, 8);
  EXPECT_EQ(broken.value("isError", false), true);
  auto cli = run_keet("list " + shell_quote(root + "/broken.ncu-rep"));
  ASSERT_EQ(cli.rc, 2);
  EXPECT_NE(cli.err.find(broken.value("text", "?")), std::string::npos) << broken.dump() << " vs " << cli.err;
  EXPECT_EQ(find_call(out, 9).value("isError", false), true);
  EXPECT_NE(find_call(out, 9).value("text", "").find("outside the folders"), std::string::npos);
  // Arguments that break the inputSchema are a JSON-RPC error the SDK raises.
  EXPECT_EQ(find_call(out, 10).value("sdkAccepted", true), false);
  EXPECT_EQ(find_call(out, 10).value("code", 0), -32602);
  EXPECT_NE(out.value("stderr", "").find("keet mcp:"), std::string::npos) << "logs belong on stderr";
  // Explicit pairs: the tiny kernel forced against the scenario kernel and back, each said to be forced.
  const auto& forced = find_call(out, 11);
  expect_valid(forced);
  ASSERT_EQ(forced["structured"]["pairs"].size(), 2u) << forced.dump();
  for (const auto& p : forced["structured"]["pairs"]) {
    EXPECT_EQ(p["paired_by"], "forced");
    EXPECT_NE(p["pairing"].get<std::string>().find("the kernel names differ"), std::string::npos) << p.dump();
  }
  // The traces under the root, found by their bytes, and one read as a run.
  expect_valid(find_call(out, 12));
  ASSERT_EQ(find_call(out, 12)["structured"]["reports"].size(), 1u);
  EXPECT_EQ(find_call(out, 12)["structured"]["reports"][0]["path"], "runs/step.pt.trace.json");
  expect_valid(find_call(out, 13));
  EXPECT_EQ(find_call(out, 13)["structured"]["launches"], 8);
  EXPECT_EQ(find_call(out, 13)["structured"]["kernels"][0]["short_name"], "k");
}

TEST(McpClientE2E, StdioOnAFixtureReport) {
  KEET_REQUIRE_SHARED();
  REQUIRE_CLIENT(dir);
  auto reports = fixture_reports();
  ASSERT_FALSE(reports.empty());
  // The smallest fixture keeps the run short.
  std::string report = *std::ranges::min_element(reports, {}, [](const std::string& p) { return fs::file_size(p); });
  std::string root = fs::path(report).parent_path().string();
  json plan = {{"transport", "stdio"},
               {"command", keet_binary()},
               {"args", {"mcp", "--root", root}},
               {"calls",
                {tool_call("list_kernels", {{"report", report}, {"limit", 10}}),
                 tool_call("analyze_kernel", {{"report", report}, {"top", 0}}),
                 tool_call("get_metrics", {{"report", report}, {"pattern", "^sm__"}, {"limit", 20}}),
                 tool_call("source_hotspots", {{"report", report}, {"top", 5}}),
                 tool_call("diff_reports", {{"before", report}, {"after", report}})}}};
  auto out = run_client(*dir, plan, "stdio-fixture");
  expect_session(out);
  for (size_t i = 0; i < 5; ++i) expect_valid(find_call(out, i));
  EXPECT_GT(find_call(out, 0)["structured"].value("total", 0), 0);
  EXPECT_EQ(find_call(out, 4)["structured"]["summary"]["slower"], 0);
}

// keet serve mounts the same server at /mcp: KEET_MCP_HTTP_URL names it
// (http://127.0.0.1:PORT/mcp), KEET_MCP_HTTP_REPORT a report it may read.
TEST(McpClientE2E, StreamableHttpAgainstKeetServe) {
  const char* url = std::getenv("KEET_MCP_HTTP_URL");
  if (!url || !*url)
    GTEST_SKIP() << "KEET_MCP_HTTP_URL is unset: no keet serve to reach (set it to http://127.0.0.1:PORT/mcp)";
  REQUIRE_CLIENT(dir);
  json calls = {tool_call("explain_term", {{"term", "dram__throughput"}})};
  const char* report = std::getenv("KEET_MCP_HTTP_REPORT");
  if (report && *report) {
    calls.push_back(tool_call("list_kernels", {{"report", report}}));
    calls.push_back(tool_call("analyze_kernel", {{"report", report}}));
  }
  auto out = run_client(*dir, {{"transport", "http"}, {"url", url}, {"calls", calls}}, "http");
  expect_session(out);
  EXPECT_FALSE(out.value("sessionId", "").empty()) << "initialize issues an Mcp-Session-Id";
  for (size_t i = 0; i < calls.size(); ++i) expect_valid(find_call(out, i));
  EXPECT_EQ(out.value("terminated", false), true);
}

// McpServer::handle_http mounted at /mcp of a loopback cpp-httplib server,
// as keet serve mounts it, so the SDK's streamable HTTP client reaches the
// real handler before keet serve exists on this branch.
class LoopbackMount {
 public:
  explicit LoopbackMount(service::McpOptions opt) : mcp_(std::move(opt)) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      service::HttpExchange ex{req.method, {}, req.body};
      for (const auto& [k, v] : req.headers) {
        std::string name = k;
        std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
        ex.headers[name] = v;
      }
      auto reply = mcp_.handle_http(ex);
      res.status = reply.status;
      std::string type;
      for (const auto& [k, v] : reply.headers)
        if (k == "Content-Type")
          type = v;
        else
          res.set_header(k, v);
      if (!reply.body.empty()) res.set_content(reply.body, type.c_str());
    };
    server_.Post("/mcp", handle);
    server_.Get("/mcp", handle);
    server_.Delete("/mcp", handle);
    // cpp-httplib closes a connection after 5 requests by default, and Node's
    // fetch then fails a request it already sent on it ("other side closed").
    server_.set_keep_alive_max_count(1000);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoopbackMount() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  service::McpServer mcp_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(McpClientE2E, StreamableHttpThroughALoopbackMount) {
  REQUIRE_CLIENT(dir);
  std::string root = temp_path("mcp-e2e-http");
  fs::remove_all(root);
  fs::create_directories(root);
  writer_report(root, "r.ncu-rep", 120000);
  service::McpOptions opt;
  opt.run = app::in_process_runner([](const std::string&) { return std::string(); });
  opt.roots = {root};
  LoopbackMount mount(std::move(opt));
  json calls = {tool_call("list_kernels", {{"report", "r.ncu-rep"}}),
                tool_call("analyze_kernel", {{"report", "r.ncu-rep"}}),
                tool_call("explain_term", {{"term", "dram__throughput"}}),
                tool_call("analyze_kernel", {{"report", "nothing-here.ncu-rep"}})};
  auto out = run_client(*dir, {{"transport", "http"}, {"url", mount.url()}, {"calls", calls}}, "http-mount");
  expect_session(out);
  EXPECT_EQ(out.value("sessionId", "").size(), 32u);
  for (size_t i = 0; i < 3; ++i) expect_valid(find_call(out, i));
  EXPECT_EQ(find_call(out, 3).value("isError", false), true);
  EXPECT_EQ(out.value("terminated", false), true);
}

}  // namespace
}  // namespace keet
