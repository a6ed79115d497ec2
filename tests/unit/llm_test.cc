// The LLM layer against a real loopback server speaking each provider's wire
// format: providers, verification, retries, repair, tool calling, privacy, cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/engine.h"
#include "app/in_process.h"
#include "io/sha256.h"
#include "llm/cache.h"
#include "llm/chat.h"
#include "llm/client.h"
#include "llm/config.h"
#include "llm/explain.h"
#include "llm/params.h"
#include "llm/verify.h"
#include "readers/reader.h"
#include "service/chat_tools.h"
#include "support/fake_llm_server.h"
#include "support/report_writer.h"
#include "support/testing.h"
#include "util/embedded_data.h"
#include "util/json.h"
#include "util/pattern.h"

namespace keet {
namespace {

using namespace keet::llm;
using keet::testing::FakeLlmServer;
using keet::testing::ScriptedReply;
using nlohmann::json;

const char* kKey = "sk-secret-123";

struct Fixture {
  model::Report report;
  analysis::Diagnosis diagnosis;
};

model::Metric metric(const std::string& name, double v) { return {name, model::Value::of_double(v), {}, ""}; }

// A memory-bound kernel on an 8.6 device with one finding, built by hand.
Fixture make_fixture(const std::string& cc = "8.6") {
  Fixture f;
  model::Kernel k;
  k.index = 0;
  k.mangled = "_Z6stridePfi";
  k.demangled = "stride(float*, int)";
  k.metrics = {
      metric("gpu__time_duration.sum", 239010), metric("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.75),
      metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.4),
      metric("sm__warps_active.avg.pct_of_peak_sustained_active", 45.2), metric("launch__registers_per_thread", 40)};
  f.report.kernels.push_back(k);
  analysis::KernelDiagnosis d;
  d.index = 0;
  d.mangled = k.mangled;
  d.display = k.demangled;
  d.device = "NVIDIA RTX A2000";
  d.compute_capability = cc;
  d.grid = {1024, 1, 1};
  d.block = {256, 1, 1};
  d.duration_ns = 239010;
  d.bottleneck = {analysis::BottleneckClass::Memory,
                  0.8,
                  {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.75, "%", "> 60 %", ""}},
                  "DRAM near peak"};
  analysis::Finding fi;
  fi.id = "memory.uncoalesced_global";
  fi.severity = analysis::Severity::High;
  fi.title = "Global loads touch 16 sectors per request";
  fi.explanation = "Strided access in /home/alice/proj/stride.cu wastes bandwidth.";
  fi.evidence = {{"derived:sectors_per_request", 16, "", "> 4", "sectors / requests"}};
  fi.estimated_speedup = 1.8;
  fi.advice = {"Make consecutive threads access consecutive addresses."};
  fi.source = {{"/home/alice/proj/stride.cu", 42, 0.61, "out[i] = in[i * stride];"}};
  d.findings.push_back(fi);
  f.diagnosis.kernels.push_back(d);
  return f;
}

json answer(const std::string& summary,
            const std::string& suggestion = "Make consecutive threads read consecutive addresses.",
            json finding = "memory.uncoalesced_global") {
  return {{"summary", summary},
          {"reasoning", "Each request touches 16 sectors; fixing it could give about 1.8x."},
          {"suggestions", {{{"text", suggestion}, {"finding", finding}}}},
          {"questions", {"What stride does the caller use?"}},
          {"confidence", 0.7}};
}

const std::string kGood = "The kernel is memory-bound: DRAM throughput is 91.75% of peak over 239.01 us.";

std::string structured_reply(const std::string& provider, const json& ans) {
  if (provider == "anthropic") return testing::anthropic_tool_reply("kernel_explanation", ans);
  if (provider == "ollama") return testing::ollama_text_reply(ans.dump());
  return testing::openai_text_reply(ans.dump());
}

class FakeSleeper : public Sleeper {
 public:
  std::vector<std::chrono::milliseconds> waits;
  void sleep_for(std::chrono::milliseconds d) override { waits.push_back(d); }
};

struct Harness {
  explicit Harness(const std::string& provider, Timeouts t = {}, ResponseCache* cache = nullptr,
                   const std::string& model = "test-model", std::vector<ParamOverride> params = {})
      : provider(provider), http(make_http_client(t)) {
    std::string base = provider == "openai" ? server.url() + "/v1" : server.url();
    client = std::make_unique<LlmClient>(
        ProviderConfig{provider, model, base, provider == "ollama" ? "" : kKey, std::move(params)}, *http, sleeper,
        cache);
  }
  std::string provider;
  FakeLlmServer server;
  std::unique_ptr<HttpClient> http;
  FakeSleeper sleeper;
  std::unique_ptr<LlmClient> client;
};

LlmResult explain(Harness& h, const Fixture& f, PromptOptions p = {}) {
  return explain_kernel(*h.client, f.diagnosis.kernels[0], &f.report.kernels[0], {p});
}

// ---- providers: happy path, what is sent ----

class LlmProviderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlmProviderTest, HappyPathVerifiedAndPrivate) {
  Harness h(GetParam());
  auto f = make_fixture();
  h.server.script({200, structured_reply(GetParam(), answer(kGood))});
  auto r = explain(h, f);
  ASSERT_EQ(r.status, Status::Verified) << r.error << " " << r.text;
  EXPECT_EQ(r.unsupported_claims, 0);
  EXPECT_GE(r.claims.size(), 2u);  // 91.75% and 239.01 us (16 is a hardware constant)
  EXPECT_GT(r.usage.prompt_tokens, 0);
  ASSERT_EQ(r.suggestions.size(), 1u);
  EXPECT_EQ(r.suggestions[0].finding, "memory.uncoalesced_global");
  EXPECT_FALSE(r.suggestions[0].speculative);
  EXPECT_LE(r.prompt_tokens_estimate, 2000);
  auto sent = h.server.received();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].body.find(kKey), std::string::npos);
  EXPECT_EQ(sent[0].body.find("in[i * stride]"), std::string::npos);  // no source without opt-in
  EXPECT_EQ(sent[0].body.find("/home/alice"), std::string::npos);     // no paths either
  EXPECT_NE(sent[0].body.find("memory.uncoalesced_global"), std::string::npos);
  json body = sent[0].json();
  if (GetParam() == "openai") {
    EXPECT_EQ(sent[0].path, "/v1/chat/completions");
    EXPECT_EQ(sent[0].headers["authorization"], std::string("Bearer ") + kKey);
    EXPECT_EQ(body["response_format"]["type"], "json_schema");
  } else if (GetParam() == "anthropic") {
    EXPECT_EQ(sent[0].path, "/v1/messages");
    EXPECT_EQ(sent[0].headers["x-api-key"], kKey);
    EXPECT_EQ(body["tool_choice"]["name"], "kernel_explanation");
  } else {
    EXPECT_EQ(sent[0].path, "/api/chat");
    EXPECT_TRUE(body["format"].is_object());
    EXPECT_EQ(body["stream"], false);
  }
}

TEST_P(LlmProviderTest, SourceOnlyWithOptIn) {
  Harness h(GetParam());
  auto f = make_fixture();
  h.server.script({200, structured_reply(GetParam(), answer(kGood))});
  explain(h, f, {.share_source = true});
  EXPECT_NE(h.server.received().at(0).body.find("in[i * stride]"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Providers, LlmProviderTest, ::testing::Values("openai", "anthropic", "ollama"));

// ---- verification ----

TEST(LlmVerify, InventedNumberFlaggedAfterCorrection) {
  Harness h("openai");
  auto f = make_fixture();
  std::string bad = "DRAM throughput is 97% of peak.";
  h.server.script({200, structured_reply("openai", answer(bad))});
  h.server.script({200, structured_reply("openai", answer(bad))});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Flagged);
  EXPECT_TRUE(r.corrected);
  EXPECT_EQ(r.unsupported_claims, 1);
  EXPECT_NE(r.text.find("[unverified: 97%]"), std::string::npos) << r.text;
  auto sent = h.server.received();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_NE(sent[1].body.find("97%"), std::string::npos);  // the correction names the bad number
  json j = to_json(r);
  EXPECT_EQ(j["status"], "flagged");
  EXPECT_EQ(j["unsupported_claims"], 1);
}

TEST(LlmVerify, SelfCorrectionFixesAnswer) {
  Harness h("anthropic");
  auto f = make_fixture();
  h.server.script({200, structured_reply("anthropic", answer("DRAM throughput is 97% of peak."))});
  h.server.script({200, structured_reply("anthropic", answer(kGood))});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Verified) << r.text;
  EXPECT_TRUE(r.corrected);
  EXPECT_EQ(r.usage.prompt_tokens, 180);  // both rounds counted (90 each)
}

TEST(LlmVerify, ArchitectureInvalidAdvice) {
  Harness h("ollama");
  auto f = make_fixture("8.6");
  auto tma = answer(kGood, "Use TMA to stage tiles into shared memory.", nullptr);
  h.server.script({200, structured_reply("ollama", tma)});
  h.server.script({200, structured_reply("ollama", tma)});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Flagged);
  ASSERT_EQ(r.arch_violations.size(), 1u);
  EXPECT_NE(r.arch_violations[0].find("9.0"), std::string::npos);
  EXPECT_TRUE(r.suggestions.at(0).speculative);
  // The same advice on a Hopper device is fine.
  Harness h90("ollama");
  auto f90 = make_fixture("9.0");
  h90.server.script({200, structured_reply("ollama", tma)});
  EXPECT_TRUE(explain(h90, f90).arch_violations.empty());
}

// The device's chip, not only its compute capability: TU116 has no tensor cores.
TEST(LlmVerify, TensorCoreAdviceOnAChipWithout) {
  auto gtx = arch_violations("Move the GEMM to tensor cores with WMMA.", {"NVIDIA GeForce GTX 1660 SUPER", "7.5"});
  ASSERT_EQ(gtx.size(), 1u);
  EXPECT_NE(gtx[0].find("although its compute capability is 7.5"), std::string::npos) << gtx[0];
  EXPECT_TRUE(arch_violations("Move the GEMM to tensor cores with WMMA.", {"Tesla T4", "7.5"}).empty());
  EXPECT_TRUE(
      arch_violations("Tensor cores are not available on this GPU.", {"NVIDIA GeForce GTX 1660 SUPER", "7.5"}).empty());
}

TEST(LlmVerify, ClaimsExtraction) {
  auto claims = extract_claims("L2 hit 45.2%, 1,234 cycles on sm_86 (CC 8.6); 2.5x faster, 239 us, 1. list");
  std::vector<std::string> texts;
  for (const auto& c : claims) texts.push_back(c.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"45.2%", "1,234", "2.5x", "239 us"}));
  EXPECT_EQ(claims[1].value, 1234);
}

TEST(LlmVerify, MatchesConversionsAndRounding) {
  auto f = make_fixture();
  auto known = known_values(f.diagnosis.kernels[0], &f.report.kernels[0]);
  auto ok = [&](const std::string& text) {
    auto v = verify_text(text, {known, {{"", "8.6"}}, std::nullopt});
    return v.unsupported == 0 && !v.claims.empty();
  };
  EXPECT_TRUE(ok("throughput 92%"));    // rounding to the shown precision
  EXPECT_TRUE(ok("it took 0.239 ms"));  // ns -> ms
  EXPECT_TRUE(ok("occupancy 0.452"));   // percent as a fraction
  EXPECT_TRUE(ok("80% confidence"));    // fraction as a percent
  EXPECT_TRUE(ok("262,144 threads"));   // grid x block
  EXPECT_TRUE(ok("80% faster"));        // speedup 1.8x restated
  EXPECT_FALSE(ok("throughput 93%"));
  EXPECT_FALSE(ok("it took 0.25 ms"));
  EXPECT_TRUE(ok("about 90%"));  // an approximation word widens the match
}

TEST(LlmVerify, BottleneckContradiction) {
  analysis::Bottleneck b{analysis::BottleneckClass::Memory, 0.8, {}, ""};
  EXPECT_EQ(bottleneck_contradictions("This kernel is compute-bound.", b).size(), 1u);
  EXPECT_TRUE(bottleneck_contradictions("It is memory-bound, not compute-bound.", b).empty());
}

// ---- per-model request parameters (data/llm/models.json, --llm-param) ----

TEST(LlmParams, ReasoningModelsGetMaxCompletionTokensAndNoTemperature) {
  // The fake server answers 400 like the real API when a reasoning model is
  // sent max_tokens or a temperature: before the table, these were unavailable.
  for (std::string model : {"o1", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini"}) {
    Harness h("openai", {}, nullptr, model);
    auto f = make_fixture();
    h.server.script({200, structured_reply("openai", answer(kGood))});
    auto r = explain(h, f);
    EXPECT_EQ(r.status, Status::Verified) << model << ": " << r.error;
    ASSERT_EQ(h.server.received().size(), 1u) << model;
    auto body = h.server.received()[0].json();
    EXPECT_FALSE(body.contains("max_tokens")) << model;
    EXPECT_EQ(body["max_completion_tokens"], 1500) << model;
    EXPECT_FALSE(body.contains("temperature")) << model;
  }
}

TEST(LlmParams, OtherModelsKeepMaxTokensAndTemperature) {
  for (std::string provider : {"openai", "anthropic", "ollama"})
    for (std::string model : {"gpt-4o-mini", "gpt-4.1", "claude-sonnet-4-5", "llama3.1:8b", "qwen3:4b"}) {
      Harness h(provider, {}, nullptr, model);
      auto f = make_fixture();
      h.server.script({200, structured_reply(provider, answer(kGood))});
      EXPECT_EQ(explain(h, f).status, Status::Verified) << provider << ":" << model;
      auto body = h.server.received()[0].json();
      const json& sampling = provider == "ollama" ? body["options"] : body;
      EXPECT_EQ(sampling[provider == "ollama" ? "num_predict" : "max_tokens"], 1500) << provider << ":" << model;
      EXPECT_EQ(sampling["temperature"], 0.2) << provider << ":" << model;
      EXPECT_FALSE(body.contains("max_completion_tokens"));
    }
}

TEST(LlmParams, ApiErrorForAWrongParameterIsShownAndNotRetried) {
  // A user override can still send what the model refuses: the API's own
  // message reaches the user, and a 400 is not retried.
  Harness h("openai", {}, nullptr, "o3-mini", {*parse_param("max_tokens=800")});
  auto f = make_fixture();
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("HTTP 400: Unsupported parameter: 'max_tokens'"), std::string::npos) << r.error;
  EXPECT_EQ(h.server.received().size(), 1u);
  EXPECT_FALSE(h.server.received()[0].json().contains("max_completion_tokens"));
}

TEST(LlmParams, OverridesSetNestAndRemoveFields) {
  std::vector<ParamOverride> params;
  for (const char* spec : {"max_completion_tokens=4000", "temperature=", "reasoning_effort=low", "options.num_ctx=8192",
                           "seed=7", "stop=[\"END\"]"})
    params.push_back(*parse_param(spec));
  Harness h("openai", {}, nullptr, "gpt-4o", params);
  auto f = make_fixture();
  h.server.script({200, structured_reply("openai", answer(kGood))});
  EXPECT_EQ(explain(h, f).status, Status::Verified);
  auto body = h.server.received()[0].json();
  EXPECT_EQ(body["max_completion_tokens"], 4000);
  EXPECT_FALSE(body.contains("max_tokens")) << "the two token limits are alternatives";
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["reasoning_effort"], "low");
  EXPECT_EQ(body["options"]["num_ctx"], 8192);
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["stop"], json::array({"END"}));
  EXPECT_EQ(body["model"], "gpt-4o");
}

TEST(LlmParams, BadOrReservedOverridesAreRefused) {
  for (const char* spec : {"max_tokens", "=3", "a..b=1", "messages=[]", "model=gpt-4o", "response_format.type=text",
                           "tools=[]", "with space=1"}) {
    auto p = parse_param(spec);
    ASSERT_FALSE(p) << spec;
    EXPECT_EQ(p.error().code, ExitCode::BadInput) << spec;
  }
}

TEST(LlmParams, TableEntriesAreWellFormed) {
  auto text = embedded_file("llm/models.json");
  ASSERT_TRUE(text);
  json j = json::parse(*text);
  ASSERT_FALSE(j["models"].empty());
  for (const auto& m : j["models"]) {
    EXPECT_NE(find_provider(m["provider"].get<std::string>()), nullptr) << m.dump();
    EXPECT_TRUE(Pattern::compile(m["pattern"].get<std::string>())) << m.dump();
    EXPECT_TRUE(m["token_limit"].is_string() && m["temperature"].is_boolean()) << m.dump();
  }
  EXPECT_EQ(model_params("openai", "o3-mini").token_limit, "max_completion_tokens");
  EXPECT_EQ(model_params("openai", "openai/gpt-5.1").token_limit, "max_completion_tokens");
  EXPECT_EQ(model_params("openai", "gpt-4o").token_limit, "");
  EXPECT_EQ(model_params("ollama", "o3-mini").token_limit, "") << "entries hold for their provider only";
}

// ---- robustness ----

TEST(LlmRobust, RetryAfterHonoured) {
  Harness h("openai");
  auto f = make_fixture();
  h.server.script({429, R"({"error":{"message":"rate limited"}})", {{"Retry-After", "2"}}});
  h.server.script({200, structured_reply("openai", answer(kGood))});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Verified) << r.error;
  ASSERT_EQ(h.sleeper.waits.size(), 1u);
  EXPECT_EQ(h.sleeper.waits[0], std::chrono::milliseconds(2000));
}

TEST(LlmRobust, ServerErrorsExhaustRetries) {
  Harness h("anthropic");
  auto f = make_fixture();
  for (int i = 0; i < 4; ++i) h.server.script({500, R"({"error":{"message":"overloaded"}})"});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("HTTP 500"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("(after 4 attempts)"), std::string::npos) << r.error;
  EXPECT_EQ(h.server.received().size(), 4u);
  std::vector<std::chrono::milliseconds> expected{std::chrono::milliseconds(1000), std::chrono::milliseconds(2000),
                                                  std::chrono::milliseconds(4000)};
  EXPECT_EQ(h.sleeper.waits, expected);
  EXPECT_EQ(to_json(r)["status"], "unavailable");
}

TEST(LlmRobust, ReadTimeoutIsUnavailable) {
  Timeouts t;
  t.read = std::chrono::seconds(1);
  Harness h("ollama", t);
  auto f = make_fixture();
  h.server.script({200, structured_reply("ollama", answer(kGood)), {}, 2500});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_EQ(h.server.received().size(), 1u);  // a timed-out call is not repeated
}

// ---- bounds: a misbehaving server costs bounded time and memory, leaks nothing ----

TEST(LlmBounds, TricklingServerHitsTheWholeRequestDeadline) {
  Timeouts t;
  t.read = std::chrono::seconds(1);
  t.total = std::chrono::seconds(2);
  Harness h("openai", t);
  auto f = make_fixture();
  // 40 ms a byte: every read succeeds, and the whole body would take minutes.
  h.server.script({200, structured_reply("openai", answer(kGood)), {}, 0, 40});
  auto started = std::chrono::steady_clock::now();
  auto r = explain(h, f);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("no complete answer within 2 s"), std::string::npos) << r.error;
  EXPECT_LT(took, std::chrono::seconds(6));
  EXPECT_EQ(h.server.received().size(), 1u);
}

TEST(LlmBounds, HugeBodyIsRefusedAtTheCap) {
  Timeouts t;
  t.max_body_bytes = 1 << 20;
  Harness h("openai", t);
  auto f = make_fixture();
  h.server.script({200, structured_reply("openai", answer(kGood)), {}, 0, 0, size_t{64} << 20});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("response longer than 1048576 bytes"), std::string::npos) << r.error;
}

TEST(LlmBounds, LongRetryAfterIsNotWaitedFor) {
  Harness h("openai");
  auto f = make_fixture();
  h.server.script({429, R"({"error":{"message":"rate limited"}})", {{"Retry-After", "3600"}}});
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_TRUE(h.sleeper.waits.empty());
  EXPECT_EQ(h.server.received().size(), 1u);
  EXPECT_NE(r.error.find("retry after 3600 s"), std::string::npos) << r.error;
}

TEST(LlmBounds, CircuitBreakerStopsAfterRepeatedFailures) {
  Harness h("openai");
  auto f = make_fixture();
  for (int i = 0; i < 8; ++i) h.server.script({503, R"({"error":{"message":"down"}})"});
  for (int kernel = 0; kernel < 9; ++kernel) EXPECT_EQ(explain(h, f).status, Status::Unavailable);
  EXPECT_EQ(h.server.received().size(), 8u);  // two kernels' worth of attempts, then none
  auto last = explain(h, f);
  EXPECT_NE(last.error.find("failed 2 requests in a row"), std::string::npos) << last.error;
}

TEST(LlmBounds, RunBudgetBoundsAllWaiting) {
  Harness h("openai");
  h.client = std::make_unique<LlmClient>(
      ProviderConfig{"openai", "m", h.server.url() + "/v1", kKey}, *h.http, h.sleeper, nullptr,
      RetryPolicy{.max_attempts = 10, .breaker_after = 100, .run_budget = std::chrono::milliseconds(5000)});
  auto f = make_fixture();
  for (int i = 0; i < 30; ++i) h.server.script({500, R"({"error":{"message":"x"}})"});
  for (int kernel = 0; kernel < 5; ++kernel) explain(h, f);
  std::chrono::milliseconds waited{0};
  for (auto w : h.sleeper.waits) waited += w;
  EXPECT_LT(waited, std::chrono::milliseconds(5000));
  auto r = explain(h, f);
  EXPECT_NE(r.error.find("budget"), std::string::npos) << r.error;
}

TEST(LlmBounds, EchoedCredentialsAreRedacted) {
  for (std::string provider : {"openai", "anthropic"}) {
    Harness h(provider);
    auto f = make_fixture();
    std::string echo = "invalid credentials: Authorization: Bearer " + std::string(kKey) + ", x-api-key " + kKey;
    h.server.script({401, json{{"error", {{"message", echo}}}}.dump()});
    auto r = explain(h, f);
    EXPECT_EQ(r.status, Status::Unavailable);
    EXPECT_EQ(r.error.find(kKey), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("<redacted>"), std::string::npos) << r.error;
    EXPECT_EQ(to_json(r).dump().find(kKey), std::string::npos);
    h.server.script({401, "plain text page " + std::string(280, '.') + std::string(kKey)});
    auto plain = explain(h, f);  // a key cut in half by the shortening is redacted before it
    EXPECT_EQ(plain.error.find("sk-s"), std::string::npos) << plain.error;
  }
}

TEST(LlmRobust, MalformedThenRepairThenUnavailable) {
  Harness h("openai");
  auto f = make_fixture();
  std::string full = structured_reply("openai", answer(kGood));
  h.server.script({200, full.substr(0, full.size() / 2)});                            // cut-off body
  h.server.script({200, testing::openai_text_reply(R"({"summary": "x", "reason)")});  // invalid JSON content
  auto r = explain(h, f);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("repair"), std::string::npos) << r.error;
  auto sent = h.server.received();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_NE(sent[1].body.find("could not be used"), std::string::npos);
}

TEST(LlmRobust, RepairSucceeds) {
  Harness h("openai");
  auto f = make_fixture();
  h.server.script({200, testing::openai_text_reply(R"({"summary": 3})")});  // schema mismatch
  h.server.script({200, structured_reply("openai", answer(kGood))});
  EXPECT_EQ(explain(h, f).status, Status::Verified);
}

TEST(LlmRobust, DryRunSendsNothingAndRedactsKey) {
  FakeLlmServer server;
  auto http = make_http_client({});
  FakeSleeper sleeper;
  std::ostringstream out;
  LlmClient client({"openai", "m", server.url() + "/v1", kKey}, *http, sleeper, nullptr, {}, &out);
  auto f = make_fixture();
  auto r = explain_kernel(client, f.diagnosis.kernels[0], &f.report.kernels[0]);
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_TRUE(server.received().empty());
  EXPECT_EQ(out.str().find(kKey), std::string::npos);
  EXPECT_NE(out.str().find("Bearer <redacted>"), std::string::npos);
  EXPECT_NE(out.str().find("/v1/chat/completions"), std::string::npos);
}

TEST(LlmRobust, CacheHitCostsNoTokens) {
  std::string path = testing::temp_path("llm-cache-test.sqlite");
  std::remove(path.c_str());
  ResponseCache cache(path);
  Harness h("openai", {}, &cache);
  auto f = make_fixture();
  h.server.script({200, structured_reply("openai", answer(kGood))});
  auto first = explain(h, f);
  auto second = explain(h, f);
  EXPECT_EQ(h.server.received().size(), 1u);
  EXPECT_EQ(second.status, Status::Verified);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.usage.prompt_tokens, 0);
  EXPECT_GT(first.usage.prompt_tokens, 0);
  std::ifstream db(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(db)), {});
  EXPECT_EQ(bytes.find(kKey), std::string::npos);
}

TEST(LlmRobust, CacheKeyIncludesTheEndpoint) {
  std::string path = testing::temp_path("llm-cache-endpoint.sqlite");
  std::remove(path.c_str());
  ResponseCache cache(path);
  auto f = make_fixture();
  Harness one("openai", {}, &cache), two("openai", {}, &cache);
  one.server.script({200, structured_reply("openai", answer(kGood))});
  two.server.script({200, structured_reply("openai", answer(kGood))});
  EXPECT_FALSE(explain(one, f).cached);
  auto other = explain(two, f);  // same provider, model and prompt; another server
  EXPECT_FALSE(other.cached);
  EXPECT_EQ(two.server.received().size(), 1u);
  EXPECT_TRUE(explain(one, f).cached);
}

// ---- tool calling ----

// The chat's real tools (service::ChatTools, commands run in process) over a
// report file holding the fixture kernel's metrics.
std::unique_ptr<service::ChatTools> real_tools(const Fixture& f, bool share = false) {
  std::vector<std::pair<std::string, double>> metrics;
  for (const auto& m : f.report.kernels[0].metrics) metrics.emplace_back(m.name, *m.value.as_number());
  std::string path = testing::temp_path("llm-chat-tools.ncu-rep");
  testing::write_file(path, testing::one_kernel_report(f.report.kernels[0].mangled, 1024, 256, metrics));
  auto getenv = [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v ? v : "");
  };
  return std::make_unique<service::ChatTools>(
      service::ChatToolOptions{app::in_process_runner(getenv), path, &f.report, share, false});
}
ToolContext tools_for(const Fixture& f, const service::ChatTools& tools) {
  return {&f.report, &f.diagnosis, false, &tools};
}

TEST(LlmChat, MultiStepToolCallingOpenAI) {
  Harness h("openai");
  auto f = make_fixture();
  auto tools = real_tools(f);
  h.server.script({200, testing::openai_tool_reply("list_kernels", json::object(), "c1")});
  h.server.script({200, testing::openai_tool_reply("get_metrics", {{"kernel", "0"}, {"pattern", "dram__"}}, "c2")});
  h.server.script({200, testing::openai_text_reply("DRAM throughput is 91.75% of peak; the kernel is memory-bound.")});
  ChatSession chat(*h.client, tools_for(f, *tools), {});
  auto r = chat.turn("Why is kernel 0 slow?");
  EXPECT_EQ(r.status, Status::Verified) << r.error << r.text;
  auto sent = h.server.received();
  ASSERT_EQ(sent.size(), 3u);
  json third = sent[2].json();
  auto msgs = third["messages"];
  EXPECT_EQ(msgs[msgs.size() - 1]["role"], "tool");
  EXPECT_EQ(msgs[msgs.size() - 1]["tool_call_id"], "c2");
  EXPECT_NE(msgs[msgs.size() - 1]["content"].get<std::string>().find("91.75"), std::string::npos);
  // list_kernels, analyze_kernel, get_metrics, explain_term: no source_hotspots without --share-source
  EXPECT_EQ(sent[0].json()["tools"].size(), 4u);
  EXPECT_EQ(chat.transcript()["messages"].size(), 7u);
}

// A number the model read in a tool answer (a measure) is backed even when
// the diagnosis does not hold it: here the L1 hit rate, which
// the hand-built diagnosis leaves out and get_metrics answers.
TEST(LlmChat, NumbersFromToolAnswersAreVerified) {
  Harness h("openai");
  auto f = make_fixture();
  f.report.kernels[0].metrics.push_back(metric("l1tex__t_sector_hit_rate.pct", 37.25));
  auto tools = real_tools(f);
  f.report.kernels[0].metrics.pop_back();  // the report file has it; the chat's loaded report does not
  std::string reply = "The L1 hit rate is 37.25%.";
  h.server.script({200, testing::openai_text_reply(reply)});
  h.server.script({200, testing::openai_text_reply(reply)});
  ChatSession without(*h.client, tools_for(f, *tools), {});
  EXPECT_NE(without.turn("What is the L1 hit rate?").status, Status::Verified) << "not backed before any tool call";
  Harness h2("openai");
  h2.server.script(
      {200, testing::openai_tool_reply("get_metrics", {{"kernel", "0"}, {"names", {"l1tex__t_sector_hit_rate.pct"}}})});
  h2.server.script({200, testing::openai_text_reply(reply)});
  ChatSession with(*h2.client, tools_for(f, *tools), {});
  auto r = with.turn("What is the L1 hit rate?");
  EXPECT_EQ(r.status, Status::Verified) << r.error << r.text;
}

TEST(LlmChat, ToolExchangeAnthropicAndOllama) {
  for (std::string p : {"anthropic", "ollama"}) {
    Harness h(p);
    auto f = make_fixture();
    auto tools = real_tools(f);
    bool anth = p == "anthropic";
    h.server.script({200, anth ? testing::anthropic_tool_reply("analyze_kernel", {{"kernel", "0"}})
                               : testing::ollama_tool_reply("analyze_kernel", {{"kernel", "0"}})});
    std::string text = "The engine estimates 1.8x from fixing uncoalesced loads.";
    h.server.script({200, anth ? testing::anthropic_text_reply(text) : testing::ollama_text_reply(text)});
    ChatSession chat(*h.client, tools_for(f, *tools), {});
    auto r = chat.turn("What should I fix?");
    EXPECT_EQ(r.status, Status::Verified) << p << r.error;
    json second = h.server.received().at(1).json();
    const json& last = second["messages"].back();
    if (anth) {
      EXPECT_EQ(last["content"][0]["type"], "tool_result");
      EXPECT_EQ(last["content"][0]["tool_use_id"], "toolu_1");
    } else {
      EXPECT_EQ(last["role"], "tool");
      EXPECT_EQ(last["tool_name"], "analyze_kernel");
    }
  }
}

TEST(LlmChat, FailedCorrectionKeepsFirstReplyFlagged) {
  Harness h("openai");
  auto f = make_fixture();
  auto tools = real_tools(f);
  h.server.script({200, testing::openai_text_reply("DRAM throughput is 97% of peak.")});
  h.server.script({401, R"({"error":{"message":"bad key"}})"});
  ChatSession chat(*h.client, tools_for(f, *tools), {});
  auto r = chat.turn("How busy is DRAM?");
  EXPECT_EQ(r.status, Status::Flagged) << r.error;
  EXPECT_NE(r.text.find("[unverified: 97%]"), std::string::npos) << r.text;
  EXPECT_EQ(h.server.received().size(), 2u);
}

TEST(LlmChat, ToolRoundLimit) {
  Harness h("openai");
  auto f = make_fixture();
  auto tools = real_tools(f);
  for (int i = 0; i < 5; ++i) h.server.script({200, testing::openai_tool_reply("list_kernels", json::object())});
  ChatOptions opt;
  opt.max_tool_rounds = 3;
  ChatSession chat(*h.client, tools_for(f, *tools), opt);
  auto r = chat.turn("loop forever");
  EXPECT_EQ(r.status, Status::Unavailable);
  EXPECT_NE(r.error.find("3 tool rounds"), std::string::npos);
  EXPECT_EQ(h.server.received().size(), 3u);
}

// What the model sends is bounded before any tool sees it.
TEST(LlmChat, ToolArgumentsAreBounded) {
  auto f = make_fixture();
  auto tools = real_tools(f);
  auto ctx = tools_for(f, *tools);
  // What the chat sends the model: the answer as JSON text.
  auto run_tool = [](const ToolContext& c, const ToolCall& call) { return json_text(tool_answer(c, call)); };
  auto long_args = run_tool(ctx, {"c", "get_metrics", {{"kernel", "0"}, {"pattern", std::string(10000, 'a')}}});
  EXPECT_NE(long_args.find("longer than 4096 bytes"), std::string::npos) << long_args;
  EXPECT_NE(run_tool(ctx, {"e", "get_metrics", json::array({1, 2})}).find("JSON object"), std::string::npos);
  EXPECT_LT(run_tool(ctx, {"f", std::string(100000, 'n'), json::object()}).size(), 300u);
  ToolContext none{&f.report, &f.diagnosis, false, nullptr};
  EXPECT_TRUE(tool_specs(none).empty());
  EXPECT_NE(run_tool(none, {"g", "list_kernels", json::object()}).find("unknown tool"), std::string::npos);
}

// ---- configuration and prompt ----

TEST(LlmConfig, Precedence) {
  std::string dir = testing::temp_path("llm-config");
  std::filesystem::create_directories(dir + "/keet");
  std::ofstream(dir + "/keet/config.json")
      << R"({"llm": "anthropic:claude-x", "providers": {"anthropic": {"base_url": "http://h:1/"}}})";
  std::map<std::string, std::string> env = {{"XDG_CONFIG_HOME", dir}, {"ANTHROPIC_API_KEY", "k"}};
  Getenv get = [&](const std::string& n) { return env.count(n) ? env[n] : ""; };
  auto s = resolve_settings("", get);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->provider.provider, "anthropic");
  EXPECT_EQ(s->provider.base_url, "http://h:1");
  env["KEET_LLM"] = "ollama:llama3.1:8b";
  env["OLLAMA_HOST"] = "127.0.0.1:11434";
  s = resolve_settings("", get);
  EXPECT_EQ(s->provider.model, "llama3.1:8b");
  EXPECT_EQ(s->provider.base_url, "http://127.0.0.1:11434");
  s = resolve_settings("openai:gpt-x", get);
  EXPECT_EQ(s->provider.base_url, "https://api.openai.com/v1");
  EXPECT_FALSE(resolve_settings("nope:m", get));
  EXPECT_FALSE(resolve_settings("openai", get));
}

TEST(LlmPrompt, BudgetAndRedaction) {
  auto f = make_fixture();
  for (int i = 0; i < 30; ++i) f.diagnosis.kernels[0].findings.push_back(f.diagnosis.kernels[0].findings[0]);
  Prompt p = explain_prompt(f.diagnosis.kernels[0], &f.report.kernels[0], {.redact_names = true});
  EXPECT_LE(p.estimated_tokens, 2000);
  EXPECT_EQ(p.user.find("stride(float"), std::string::npos);
  EXPECT_NE(p.user.find("kernel_"), std::string::npos);
  EXPECT_GT(p.metric_rows_dropped, 0);
}

// NVIDIA's sample reports: every kernel's prompt stays within the budget.
TEST(LlmPrompt, SampleReportsWithinBudget) {
  KEET_REQUIRE_SHARED();
  auto dir = testing::oracle_examples();
  if (!dir) GTEST_SKIP() << "no oracle examples";
  int kernels = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(*dir)) {
    if (entry.path().extension() != ".ncu-rep") continue;
    auto report = readers::load_file(entry.path().string());
    ASSERT_TRUE(report) << report.error().message;
    std::vector<const model::Kernel*> all;
    for (const auto& k : report->kernels) all.push_back(&k);
    auto diagnosis = analysis::analyze(*report, all);
    for (size_t i = 0; i < diagnosis.kernels.size(); ++i) {
      Prompt p = explain_prompt(diagnosis.kernels[i], all[i], {});
      EXPECT_LE(p.estimated_tokens, 2000) << entry.path();
      std::cout << "[prompt] " << entry.path().filename().string() << " #" << diagnosis.kernels[i].index << " "
                << diagnosis.kernels[i].display << ": " << p.estimated_tokens << " tokens, " << p.metric_rows
                << " metric rows, " << diagnosis.kernels[i].findings.size() << " findings\n";
      ++kernels;
    }
  }
  EXPECT_GT(kernels, 0);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// Cache keys and redacted names rest on SHA-256 from libcrypto (opened on
// first use); the FIPS 180-2 test vectors pin it.
TEST(LlmCache, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(io::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(io::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// What make_http_client hands back when libkeet_http.so cannot be opened: a
// transport that is simply not there. (The real plugin is loaded once per
// process, so its absence is exercised end to end in llm_cli_test.)
class MissingTransport : public llm::HttpClient {
 public:
  int calls = 0;
  std::expected<llm::HttpResponse, llm::HttpError> post(const llm::HttpRequest&) override {
    ++calls;
    return std::unexpected(llm::HttpError{llm::HttpFailure::Unavailable, "HTTP support unavailable (test)"});
  }
};

class CountingSleeper : public llm::Sleeper {
 public:
  int sleeps = 0;
  void sleep_for(std::chrono::milliseconds) override { ++sleeps; }
};

TEST(LlmClientRetries, MissingTransportIsNotRetried) {
  MissingTransport http;
  CountingSleeper sleeper;
  llm::LlmClient client(llm::ProviderConfig{"openai", "m", "http://127.0.0.1:9/v1", "k"}, http, sleeper, nullptr);
  llm::ChatRequest req;
  req.model = "m";
  req.messages.push_back({llm::Role::User, "why is it slow?"});
  auto res = client.send(req);
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().kind, llm::LlmError::Kind::Unreachable);
  EXPECT_NE(res.error().message.find("HTTP support unavailable"), std::string::npos);
  EXPECT_EQ(http.calls, 1);
  EXPECT_EQ(client.http_calls(), 1);
  EXPECT_EQ(sleeper.sleeps, 0);
}

}  // namespace
}  // namespace keet
