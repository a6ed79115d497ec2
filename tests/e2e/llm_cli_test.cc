// End-to-end: `keet ask` and `keet chat` against a loopback server speaking each
// provider's wire format (the server runs in this test process; the binary is
// pointed at it through the providers' base-URL environment variables).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/fake_llm_server.h"
#include "support/http_proxy.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using nlohmann::json;

std::string report_path() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("vecAdd", 64, 256,
                    {{"gpu__time_duration.sum", 5120},
                     {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 88.5},
                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 10.25}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("llm-e2e.ncu-rep");
  w.write(path);
  return path;
}

// Two kernels, for chat's /kernel.
std::string two_kernel_report_path() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k0 = w.kernel("vecAdd", 64, 256,
                     {{"gpu__time_duration.sum", 5120}, {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 88.5}});
  auto k1 = w.kernel("matMul", 128, 256,
                     {{"gpu__time_duration.sum", 9000}, {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 91.0}});
  w.flush_strings(b);
  b.results.push_back(k0.SerializeAsString());
  b.results.push_back(k1.SerializeAsString());
  w.add(b);
  std::string path = temp_path("llm-e2e-two.ncu-rep");
  w.write(path);
  return path;
}

const std::string kNoProxies =
    "http_proxy= https_proxy= all_proxy= HTTP_PROXY= HTTPS_PROXY= ALL_PROXY= no_proxy= NO_PROXY= ";

std::string env_for(const std::string& provider, const FakeLlmServer& s) {
  // Proxy variables of the machine running the tests are cleared: the fake server is reached directly.
  std::string cache =
      "XDG_CACHE_HOME=" + shell_quote(temp_path("llm-e2e-cache")) + " XDG_CONFIG_HOME=/nonexistent " + kNoProxies;
  if (provider == "openai") return cache + "OPENAI_API_KEY=sk-e2e-key OPENAI_BASE_URL=" + s.url() + "/v1 ";
  if (provider == "anthropic") return cache + "ANTHROPIC_API_KEY=sk-e2e-key ANTHROPIC_BASE_URL=" + s.url() + " ";
  return cache + "OLLAMA_HOST=" + s.url() + " ";
}

std::string text_reply(const std::string& provider, const std::string& text) {
  if (provider == "anthropic") return anthropic_text_reply(text);
  if (provider == "ollama") return ollama_text_reply(text);
  return openai_text_reply(text);
}

ProcessResult keet_with(const std::string& env, const std::string& args) {
  return run_command(env + keet_binary() + " " + args);
}

class LlmCli : public ::testing::TestWithParam<std::string> {};

TEST_P(LlmCli, AskVerifiedJson) {
  FakeLlmServer server;
  server.script({200, text_reply(GetParam(), "DRAM throughput is 88.5% of peak over 5.12 us.")});
  auto r = keet_with(
      env_for(GetParam(), server),
      "ask " + shell_quote(report_path()) + " 'why is it slow?' --no-cache --format json --llm " + GetParam() + ":m");
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["llm"]["status"], "verified") << r.out;
  EXPECT_EQ(j["llm"]["provider"], GetParam());
  EXPECT_EQ(j["llm"]["unsupported_claims"], 0);
  ASSERT_EQ(server.received().size(), 1u);
  EXPECT_EQ(server.received()[0].body.find("sk-e2e-key"), std::string::npos);
}

TEST_P(LlmCli, AskFlagsInventedNumbers) {
  FakeLlmServer server;
  server.script({200, text_reply(GetParam(), "DRAM throughput is 99.9% of peak.")});
  server.script({200, text_reply(GetParam(), "DRAM throughput is 99.9% of peak.")});
  auto r = keet_with(env_for(GetParam(), server),
                     "ask " + shell_quote(report_path()) + " why --no-cache --llm " + GetParam() + ":m");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("[unverified: 99.9%]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("flagged"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Providers, LlmCli, ::testing::Values("openai", "anthropic", "ollama"));

TEST(LlmCliExit, UnavailableExitsThreeOnlyWhenRequired) {
  FakeLlmServer server;
  server.script({401, R"({"error":{"message":"bad key"}})"});
  server.script({401, R"({"error":{"message":"bad key"}})"});
  std::string args = "ask " + shell_quote(report_path()) + " why --no-cache --llm openai:m";
  auto soft = keet_with(env_for("openai", server), args);
  EXPECT_EQ(soft.rc, 0) << soft.err;
  EXPECT_NE(soft.out.find("unavailable"), std::string::npos);
  EXPECT_NE(soft.out.find("vecAdd"), std::string::npos);  // the deterministic analysis is still shown
  auto hard = keet_with(env_for("openai", server), args + " --llm-required");
  EXPECT_EQ(hard.rc, 3);
}

TEST(LlmCliExit, DryRunPrintsRedactedRequest) {
  FakeLlmServer server;
  auto r =
      keet_with(env_for("anthropic", server), "ask " + shell_quote(report_path()) + " why --dry-run --llm anthropic:m");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(server.received().empty());
  // The requests go to stderr so that stdout (e.g. --format json) stays clean.
  EXPECT_NE(r.err.find("x-api-key: <redacted>"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sk-e2e-key"), std::string::npos);
  EXPECT_EQ(r.out.find("sk-e2e-key"), std::string::npos);
}

TEST(LlmCliExit, DryRunKeepsJsonOnStdoutClean) {
  FakeLlmServer server;
  auto r = keet_with(env_for("openai", server),
                     "analyze --format json --dry-run --llm openai:m " + shell_quote(report_path()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(server.received().empty());
  auto j = json::parse(r.out);  // throws (and fails the test) on anything but JSON
  EXPECT_GT(j["kernels"][0]["llm"]["prompt_tokens_estimate"].get<int>(), 0);
}

TEST(LlmCliParams, ReasoningModelIsSentWhatItAccepts) {
  // The fake server refuses max_tokens and temperature for o3-mini with the
  // API's HTTP 400, as api.openai.com does.
  FakeLlmServer server;
  server.script({200, openai_text_reply("DRAM throughput is 88.5% of peak over 5.12 us.")});
  auto r = keet_with(env_for("openai", server),
                     "ask " + shell_quote(report_path()) + " why --no-cache --format json --llm openai:o3-mini");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["llm"]["status"], "verified") << r.out;
  ASSERT_EQ(server.received().size(), 1u);
  json body = server.received()[0].json();
  EXPECT_TRUE(body.contains("max_completion_tokens")) << body.dump();
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
}

TEST(LlmCliParams, LlmParamOverridesTheBody) {
  FakeLlmServer server;
  server.script({200, openai_text_reply("DRAM throughput is 88.5% of peak.")});
  // The report path after the flags: each --llm-param takes one value.
  auto r = keet_with(env_for("openai", server),
                     "ask --no-cache --llm openai:my-new-model --llm-param max_completion_tokens=333 "
                     "--llm-param temperature= --llm-param reasoning_effort=low " +
                         shell_quote(report_path()) + " why");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(server.received().size(), 1u);
  json body = server.received()[0].json();
  EXPECT_EQ(body["max_completion_tokens"], 333);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["reasoning_effort"], "low");
  auto bad = keet_with(env_for("openai", server),
                       "ask --llm openai:m --llm-param messages=[] " + shell_quote(report_path()) + " why");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--llm-param messages"), std::string::npos) << bad.err;
}

TEST(LlmCliProxy, HttpProxyVariableIsHonouredAndNoProxyBypassesIt) {
  FakeLlmServer server;
  TestHttpProxy proxy;
  server.script({200, openai_text_reply("DRAM throughput is 88.5% of peak.")});
  server.script({200, openai_text_reply("DRAM throughput is 88.5% of peak.")});
  std::string cache =
      "XDG_CACHE_HOME=" + shell_quote(temp_path("llm-e2e-cache")) + " XDG_CONFIG_HOME=/nonexistent " + kNoProxies;
  // The base URL names a host that never resolves: only the proxy reaches it.
  std::string through =
      cache + "OPENAI_API_KEY=k OPENAI_BASE_URL=http://llm.keet-test.invalid:" + std::to_string(server.port()) +
      "/v1 HTTP_PROXY=http://carol:pr0xypass@127.0.0.1:" + std::to_string(proxy.port()) + " NO_PROXY=example.org ";
  std::string args = "ask " + shell_quote(report_path()) + " why --no-cache --llm openai:m";
  auto r = keet_with(through, args);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_FALSE(proxy.requests()[0].proxy_authorization.empty());
  EXPECT_EQ(server.received().size(), 1u);
  // NO_PROXY names the server: the request goes straight to it.
  std::string direct = cache + "OPENAI_API_KEY=k OPENAI_BASE_URL=" + server.url() + "/v1 HTTP_PROXY=" + proxy.url() +
                       " NO_PROXY=example.org,127.0.0.1 ";
  auto d = keet_with(direct, args);
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(server.received().size(), 2u);
}

TEST(LlmCliChat, LocalCommandsNeverReachTheModel) {
  FakeLlmServer server;
  server.script({200, openai_text_reply("matMul takes 9000 ns.")});
  std::string md = temp_path("chat-transcript.md");
  std::remove(md.c_str());
  std::string input = "/help\n/kernel 1\n/kernel 7\n/bogus\nhow long does it take?\n/save " + md +
                      "\n//kernel is a word\n/quit\nnever sent\n";
  server.script({200, openai_text_reply("A kernel is a function run on the GPU.")});
  auto r = run_command("(printf '%s' " + shell_quote(input) + " | " + env_for("openai", server) + keet_binary() +
                       " chat " + shell_quote(two_kernel_report_path()) + " --no-cache --llm openai:m)");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Two questions reached the model; no command did.
  ASSERT_EQ(server.received().size(), 2u) << r.out;
  for (const auto& req : server.received())
    for (const char* local : {"/help", "/kernel 1", "/bogus", "/save", "/quit", "never sent"})
      EXPECT_EQ(req.body.find(local), std::string::npos) << local;
  json first = server.received()[0].json();
  std::string system = first["messages"][0]["content"];
  EXPECT_NE(system.find("Context of the kernel in focus"), std::string::npos) << system;
  EXPECT_NE(system.find("matMul"), std::string::npos);
  EXPECT_EQ(first["messages"][1]["content"], "how long does it take?");
  json second = server.received()[1].json();
  EXPECT_EQ(second["messages"].back()["content"], "/kernel is a word") << "// sends a line beginning with /";
  EXPECT_NE(r.out.find("/kernel [N]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Now discussing kernel #1."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No kernel #7 in this session; kernels: #0 vecAdd(), #1 matMul()"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Unknown command /bogus. Commands"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Saved the conversation to"), std::string::npos) << r.out;
  auto saved = run_command("cat " + shell_quote(md));
  EXPECT_EQ(saved.out.rfind("# keet chat (openai:m)\n", 0), 0u) << saved.out;
  EXPECT_NE(saved.out.find("*Kernel in focus:* `#1 matMul()`"), std::string::npos) << saved.out;
  EXPECT_NE(saved.out.find("## You\n\nhow long does it take?\n"), std::string::npos) << saved.out;
  EXPECT_NE(saved.out.find("## openai:m (verified)\n\nmatMul takes 9000 ns.\n"), std::string::npos) << saved.out;
  EXPECT_EQ(saved.out.find("/kernel"), std::string::npos) << "/save writes the conversation, not the commands";
}

TEST(LlmCliChat, PipedSessionWithSave) {
  FakeLlmServer server;
  server.script({200, openai_tool_reply("list_kernels", json::object())});
  server.script({200, openai_text_reply("vecAdd takes 5120 ns.")});
  server.script({200, openai_text_reply("It reaches 88.5% of DRAM peak.")});
  std::string save = temp_path("chat-transcript.json");
  // The parentheses keep run_command's "</dev/null" off keet's piped stdin.
  auto r = run_command("(printf 'which kernel?\\nhow busy is DRAM?\\n/quit\\n' | " + env_for("openai", server) +
                       keet_binary() + " chat " + shell_quote(report_path()) + " --no-cache --llm openai:m --save " +
                       shell_quote(save) + ")");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(server.received().size(), 3u);
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  // The binary's chat answers the tool call with the agent tool's answer for its report.
  json second = server.received()[1].json();
  const json& tool = second["messages"].back();
  EXPECT_EQ(tool["role"], "tool");
  json listed = json::parse(tool["content"].get<std::string>());
  EXPECT_FALSE(listed.contains("error")) << listed.dump();
  EXPECT_FALSE(listed["kernels"].empty()) << listed.dump();
  EXPECT_EQ(listed["report"], "<path>") << "no path without --share-source";
  auto t = run_command("cat " + shell_quote(save));
  json j = json::parse(t.out);
  EXPECT_EQ(j["replies"].size(), 2u);
  EXPECT_EQ(j["replies"][1]["status"], "verified");
}

}  // namespace
}  // namespace keet

// `keet analyze --llm`: the deterministic analysis plus one verified narrative
// per kernel, in the contract's `llm` object, for every provider.
namespace keet {
namespace {

json explanation(const std::string& summary) {
  return {{"summary", summary},
          {"reasoning", "The engine classifies the kernel as memory-bound."},
          {"suggestions", json::array({{{"text", "Move fewer bytes: fuse with the neighbouring kernel."},
                                        {"finding", "memory.dram_bandwidth"}}})},
          {"questions", json::array()},
          {"confidence", 0.8}};
}

std::string structured(const std::string& provider, const json& ans) {
  if (provider == "anthropic") return anthropic_tool_reply("kernel_explanation", ans);
  if (provider == "ollama") return ollama_text_reply(ans.dump());
  return openai_text_reply(ans.dump());
}

class LlmAnalyze : public ::testing::TestWithParam<std::string> {};

TEST_P(LlmAnalyze, JsonCarriesAVerifiedNarrative) {
  FakeLlmServer server;
  server.script(
      {200, structured(GetParam(), explanation("DRAM throughput is 88.5% of peak; the kernel is memory-bound."))});
  auto r = keet_with(env_for(GetParam(), server),
                     "analyze --format json --no-cache --llm " + GetParam() + ":m " + shell_quote(report_path()));
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["schema"], "keet.analysis/1");
  const auto& k = j["kernels"][0];
  EXPECT_FALSE(k["findings"].empty()) << "the deterministic analysis is always there";
  EXPECT_EQ(k["llm"]["status"], "verified") << k["llm"].dump(2);
  EXPECT_EQ(k["llm"]["provider"], GetParam());
  EXPECT_EQ(k["llm"]["unsupported_claims"], 0);
  ASSERT_EQ(server.received().size(), 1u);
  EXPECT_EQ(server.received()[0].body.find("sk-e2e-key"), std::string::npos);
}

TEST_P(LlmAnalyze, UnreachableLlmKeepsTheAnalysis) {
  // Nothing listens on this port: the narrative is unavailable, the analysis
  // is printed, and only --llm-required turns that into exit 3.
  std::string env =
      "XDG_CACHE_HOME=" + shell_quote(temp_path("llm-e2e-cache2")) +
      " XDG_CONFIG_HOME=/nonexistent OPENAI_BASE_URL=http://127.0.0.1:9/v1 "
      "ANTHROPIC_BASE_URL=http://127.0.0.1:9 OLLAMA_HOST=http://127.0.0.1:9 OPENAI_API_KEY=k ANTHROPIC_API_KEY=k ";
  // No retries: the backoff has tests of its own (LlmCliRetry, the client's unit tests).
  std::string args =
      "analyze --no-cache --llm-timeout 2 --llm-retries 0 --llm " + GetParam() + ":m " + shell_quote(report_path());
  auto r = keet_with(env, args);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Bottleneck:"), std::string::npos) << r.out;
  EXPECT_EQ(keet_with(env, args + " --llm-required").rc, 3);
}

TEST_P(LlmAnalyze, MissingHttpPluginKeepsTheAnalysis) {
  // The HTTPS transport is a plugin opened on the first request; without it
  // the user is told why, and the engine's analysis is still printed.
  std::string env = "XDG_CACHE_HOME=" + shell_quote(temp_path("llm-e2e-cache3")) +
                    " XDG_CONFIG_HOME=/nonexistent KEET_HTTP_PLUGIN=/nonexistent/libkeet_http.so "
                    "OPENAI_API_KEY=k ANTHROPIC_API_KEY=k ";
  std::string args = "analyze --no-cache --llm " + GetParam() + ":m " + shell_quote(report_path());
  auto r = keet_with(env, args);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Bottleneck:"), std::string::npos) << r.out;
  EXPECT_NE((r.out + r.err).find("HTTP support unavailable"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(keet_with(env, args + " --llm-required").rc, 3);
}

INSTANTIATE_TEST_SUITE_P(Providers, LlmAnalyze, ::testing::Values("openai", "anthropic", "ollama"));

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// The engine's answer for every kernel is on stdout while keet still waits for
// a provider that has not answered: a slow or dead LLM never holds it back.
TEST(LlmCliOrder, EngineAnswerIsWrittenBeforeAnyLlmWait) {
  FakeLlmServer server;
  for (int i = 0; i < 2; ++i)
    server.script({200, structured("openai", explanation("The kernel is memory-bound.")), {}, /*delay_ms=*/4000});
  std::string out = temp_path("llm-order.txt"), done = temp_path("llm-order.rc");
  std::remove(out.c_str());
  std::remove(done.c_str());
  std::string cmd = "(" + env_for("openai", server) + keet_binary() +
                    " analyze --no-cache --llm-timeout 30 --llm openai:m " + shell_quote(two_kernel_report_path()) +
                    " >" + shell_quote(out) + " 2>/dev/null; echo $? >" + shell_quote(done) + ") &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // Both kernels' diagnoses arrive long before the first reply (4 s) would.
  std::string text;
  for (int i = 0; i < 30 && text.find("matMul") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = read(out);
  }
  EXPECT_NE(text.find("vecAdd"), std::string::npos) << text;
  EXPECT_NE(text.find("matMul"), std::string::npos) << text;
  EXPECT_EQ(text.find("LLM ("), std::string::npos) << "a narrative arrived before the engine's answer was out";
  // Then the narratives follow the engine's answer, one per kernel.
  for (int i = 0; i < 300 && read(done).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(read(done), "0\n");
  text = read(out);
  auto first_llm = text.find("LLM (");
  ASSERT_NE(first_llm, std::string::npos) << text;
  EXPECT_LT(text.find("matMul"), first_llm);
  EXPECT_LT(text.find("LLM narrative for [0]"), text.find("LLM narrative for [1]")) << text;
}

// --llm is honoured by the HTML page too: the narrative is a section of it.
TEST(LlmCliOrder, HtmlCarriesTheNarrative) {
  FakeLlmServer server;
  server.script({200, structured("openai", explanation("DRAM throughput is 88.5% of peak."))});
  auto r = keet_with(env_for("openai", server),
                     "analyze --format html --no-cache --llm openai:m " + shell_quote(report_path()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("LLM narrative"), std::string::npos);
  EXPECT_NE(r.out.find("DRAM throughput is 88.5% of peak."), std::string::npos);
  EXPECT_TRUE(r.out.ends_with("</html>\n"));
  EXPECT_EQ(server.received().size(), 1u);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

using namespace keet::testing;

// The model chooses get_metrics' pattern: a pathological one over a 100 KB
// metric name is answered at once through RE2 (std::regex took minutes or
// crashed), and the conversation goes on.
TEST(LlmCliTools, ModelSuppliedPatternIsBounded) {
  std::string name = "k" + std::string(100000, ',') + "x";
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("longNames", 1, 32, {{"gpu__time_duration.sum", 1000}, {name, 1}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("llm-long-names.ncu-rep");
  w.write(path);
  FakeLlmServer server;
  server.script({200, openai_tool_reply("get_metrics", {{"kernel", "0"}, {"pattern", "(a|,)*>"}}, "c1")});
  server.script({200, openai_tool_reply("get_metrics", {{"kernel", "0"}, {"pattern", "(.*)*(.*)*zq"}}, "c2")});
  server.script({200, openai_text_reply("It takes 1000 ns.")});
  auto r = run_command("timeout 60 env " + env_for("openai", server) + keet_binary() + " ask " + shell_quote(path) +
                       " 'which metrics?' --no-cache --llm openai:m");
  ASSERT_EQ(r.rc, 0) << r.err;  // 124 would be the timeout
  ASSERT_EQ(server.received().size(), 3u);
  EXPECT_NE(r.out.find("1000 ns"), std::string::npos) << r.out;
}

// --redact-names: the tools' answers name kernels by the labels the prompt
// uses, the model may ask for a kernel by its label, and no request carries
// a kernel's name.
TEST(LlmCliTools, RedactedNamesAreThePromptsLabelsInToolAnswers) {
  FakeLlmServer server;
  server.script({200, openai_tool_reply("list_kernels", json::object(), "c1")});
  server.script({200, openai_text_reply("The second kernel takes 9000 ns.")});
  auto r = run_command(env_for("openai", server) + keet_binary() + " ask " + shell_quote(two_kernel_report_path()) +
                       " 'which kernel is slowest?' --no-cache --llm openai:m --redact-names");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto sent = server.received();
  ASSERT_EQ(sent.size(), 2u);
  for (const auto& request : sent) {
    EXPECT_EQ(request.body.find("matMul"), std::string::npos);
    EXPECT_EQ(request.body.find("vecAdd"), std::string::npos);
  }
  json second = sent[1].json();
  json listed = json::parse(second["messages"].back()["content"].get<std::string>());
  ASSERT_EQ(listed["kernels"].size(), 2u) << listed.dump();
  for (const auto& row : listed["kernels"]) {
    std::string label = row["name"];
    EXPECT_EQ(label.rfind("kernel_", 0), 0u) << label;
    EXPECT_NE(sent[0].body.find(label), std::string::npos) << label << " is not a label the prompt uses";
  }
}

// The tool answer the model received last: the content of the second
// request's last message, parsed.
json last_tool_answer(const FakeLlmServer& server) {
  auto sent = server.received();
  if (sent.size() < 2) return nullptr;
  return json::parse(sent[1].json()["messages"].back()["content"].get<std::string>(), nullptr, false);
}

// `keet ask -`: the report piped in is the tools' report too (the commands
// read the bytes the process already holds).
TEST(LlmCliTools, AReportOnStandardInputIsTheToolsReport) {
  FakeLlmServer server;
  server.script({200, openai_tool_reply("list_kernels", json::object(), "c1")});
  server.script({200, openai_text_reply("matMul takes 9000 ns.")});
  auto r = run_command("(" + env_for("openai", server) + keet_binary() +
                       " ask - 'which kernel is slowest?' --no-cache --llm openai:m < " +
                       shell_quote(two_kernel_report_path()) + ")");
  ASSERT_EQ(r.rc, 0) << r.err;
  json listed = last_tool_answer(server);
  ASSERT_TRUE(listed.contains("kernels")) << listed.dump();
  ASSERT_EQ(listed["kernels"].size(), 2u) << listed.dump();
  EXPECT_EQ(listed["kernels"][0]["name"], "matMul()");  // the most time first
}

// keet ask --allow-partial on a truncated report: the tools read what it
// holds, as the chat did, rather than answer the reader's error.
TEST(LlmCliTools, AllowPartialReachesTheTools) {
  std::string path = temp_path("llm-cut.ncu-rep");  // the second of two blocks is cut short
  std::ofstream(path, std::ios::binary) << cut_short_report({"first", "second"}, 8);
  FakeLlmServer server;
  server.script({200, openai_tool_reply("list_kernels", json::object(), "c1")});
  server.script({200, openai_text_reply("first takes 1000 ns.")});
  auto r = run_command(env_for("openai", server) + keet_binary() + " ask --allow-partial " + shell_quote(path) +
                       " 'how long?' --no-cache --llm openai:m");
  ASSERT_EQ(r.rc, 0) << r.err;
  json listed = last_tool_answer(server);
  ASSERT_TRUE(listed.contains("kernels")) << listed.dump();
  ASSERT_EQ(listed["kernels"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["kernels"][0]["name"], "first()");
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

using namespace keet::testing;

// The real binary on a pseudo-terminal (util-linux script): a retry is
// announced as it happens; with stderr not a terminal, only the answer.
TEST(LlmCliRetry, ATerminalSeesTheRetriesAPipeDoesNot) {
  if (run_command("command -v script").rc != 0) GTEST_SKIP() << "script (util-linux) is not installed";
  auto ask = [&](bool tty) {
    FakeLlmServer server;
    server.script({503, R"({"error":{"message":"overloaded"}})", {{"Retry-After", "0.1"}}});
    server.script({200, openai_text_reply("vecAdd takes 5120 ns.")});
    std::string cmd = env_for("openai", server) + keet_binary() + " ask " + shell_quote(two_kernel_report_path()) +
                      " 'how long?' --no-cache --llm openai:m";
    return tty ? run_command("script -qec " + shell_quote(cmd) + " /dev/null") : run_command(cmd);
  };
  auto on_tty = ask(true);
  ASSERT_EQ(on_tty.rc, 0) << on_tty.out << on_tty.err;
  EXPECT_NE(on_tty.out.find("retrying (2/"), std::string::npos) << on_tty.out;  // the pty carries stderr too
  auto piped = ask(false);
  ASSERT_EQ(piped.rc, 0) << piped.err;
  EXPECT_EQ(piped.err.find("retrying"), std::string::npos) << piped.err;
}

// --llm-retries N: N more attempts after a 503, then the engine's analysis alone.
TEST(LlmCliRetry, TheUserSetsHowOftenARequestIsRetried) {
  for (int retries : {0, 1}) {
    FakeLlmServer server;
    for (int i = 0; i < 3; ++i) server.script({503, R"({"error":{"message":"overloaded"}})", {{"Retry-After", "0.1"}}});
    auto r =
        run_command(env_for("openai", server) + keet_binary() + " analyze --format json --no-cache --llm openai:m" +
                    " --llm-retries " + std::to_string(retries) + " " + shell_quote(report_path()));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(server.received().size(), static_cast<size_t>(retries + 1)) << retries;
    auto llm = json::parse(r.out)["kernels"][0]["llm"];
    EXPECT_EQ(llm["status"], "unavailable") << llm;
    EXPECT_NE(llm.dump().find("503"), std::string::npos) << llm;
    EXPECT_EQ(llm.dump().find("after 1 attempts"), std::string::npos) << llm;
  }
  EXPECT_NE(run_keet("analyze --llm-retries 11 " + shell_quote(report_path())).rc, 0);
}

}  // namespace
}  // namespace keet
