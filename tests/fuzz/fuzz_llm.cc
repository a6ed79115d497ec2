// libFuzzer target: what KEET does with an LLM's reply. The bytes are the
// bodies of a provider's HTTP 200 replies (split at "\n\x1e\n", one per
// request; the first byte picks openai, anthropic or ollama), served by an
// in-process HTTP stand-in to the real client, so they go through that
// provider's wire parsing (text, structured output, tool calls), the repair
// round, the tools the model asks for (service::ChatTools over a fixed report), answer
// verification and the LLM result's JSON and text. The same bytes also go
// straight to verify_text/mark_unsupported and parse_structured. A crash, a
// sanitizer report or an escaping exception fails the target.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/engine.h"
#include "io/file.h"
#include "llm/chat.h"
#include "llm/explain.h"
#include "llm/prompt.h"
#include "llm/verify.h"
#include "readers/reader.h"
#include "report_writer.h"
#include "service/chat_tools.h"
#include "util/json.h"

namespace {

using namespace keet;

// One small kernel on an 8.6 device with enough metrics for findings, known
// values and a bottleneck: the diagnosis the replies are checked against.
struct Fixed {
  model::Report report;
  analysis::Diagnosis diagnosis;
  Fixed() {
    testing::ReportWriter w;
    testing::ReportWriter::Block b;
    auto k = w.kernel("void gemm_kernel<float>(float*, float const*, int)", 4096, 256,
                      {{"gpu__time_duration.sum", 300000},
                       {"device__attribute_compute_capability_major", 8},
                       {"device__attribute_compute_capability_minor", 6},
                       {"launch__sm_count", 26},
                       {"launch__grid_size", 4096},
                       {"launch__block_size", 256},
                       {"launch__waves_per_multiprocessor", 26.25},
                       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 91},
                       {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 22},
                       {"smsp__issue_active.avg.pct_of_peak_sustained_active", 30},
                       {"smsp__warps_eligible.avg.per_cycle_active", 0.5},
                       {"sm__warps_active.avg.pct_of_peak_sustained_active", 40}});
    w.flush_strings(b);
    b.results.push_back(k.SerializeAsString());
    w.add(b);
    auto src = io::memory_source("fixed.ncu-rep", w.bytes());
    auto r = readers::load(*src);
    if (!r || r->kernels.empty()) __builtin_trap();  // the fixture itself must read
    report = std::move(*r);
    diagnosis = analysis::analyze(report, {&report.kernels.front()});
  }
};
const Fixed& fixed() {
  static const Fixed f;
  return f;
}

// Serves the fuzz bodies in order as 200 replies; then refuses, as a dead server would.
class ScriptedHttp : public llm::HttpClient {
 public:
  explicit ScriptedHttp(std::vector<std::string> bodies) : bodies_(std::move(bodies)) {}
  std::expected<llm::HttpResponse, llm::HttpError> post(const llm::HttpRequest&) override {
    if (next_ >= bodies_.size()) return std::unexpected(llm::HttpError{llm::HttpFailure::Other, "no more replies"});
    return llm::HttpResponse{200, {{"content-type", "application/json"}}, bodies_[next_++]};
  }

 private:
  std::vector<std::string> bodies_;
  size_t next_ = 0;
};

class NoSleep : public llm::Sleeper {
 public:
  void sleep_for(std::chrono::milliseconds) override {}
};

std::vector<std::string> split_bodies(std::string_view s) {
  std::vector<std::string> out;
  constexpr std::string_view sep = "\n\x1e\n";
  for (size_t at; (at = s.find(sep)) != std::string_view::npos && out.size() < 16; s.remove_prefix(at + sep.size()))
    out.emplace_back(s.substr(0, at));
  out.emplace_back(s);
  return out;
}

void touch(const llm::LlmResult& r) {
  if (json_text(llm::to_json(r)).empty()) __builtin_trap();
  (void)llm::render_text(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kProviders[] = {"openai", "anthropic", "ollama"};
  const auto& fx = fixed();
  const auto& kd = fx.diagnosis.kernels.front();
  const model::Kernel* kernel = &fx.report.kernels.front();
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  llm::ProviderConfig cfg{kProviders[data[0] % 3], "fuzz-model", "http://127.0.0.1:9", "sk-fuzz"};
  NoSleep nap;

  {  // keet analyze --llm: structured answer, repair round, verification.
    ScriptedHttp http(split_bodies(bytes));
    llm::LlmClient client(cfg, http, nap);
    touch(llm::explain_kernel(client, kd, kernel));
  }
  {  // keet ask / chat: the model's tool calls go through the chat's tools (bound report,
     // argument checks, privacy), whose commands answer with the last body as their JSON.
    auto bodies = split_bodies(bytes);
    ScriptedHttp http(bodies);
    llm::LlmClient client(cfg, http, nap);
    bool share = (data[0] & 4) != 0, redact = (data[0] & 8) != 0;
    service::ChatTools tools({[out = bodies.back()](const std::vector<std::string>&) {
                                return service::CommandOutput{0, out, ""};
                              },
                              "fixed.ncu-rep", &fx.report, share, redact});
    llm::ChatSession chat(client, {&fx.report, &fx.diagnosis, redact, &tools}, {});
    touch(chat.turn("Why is this kernel slow?"));
    (void)json_text(chat.transcript());
  }
  // The verifier and the structured-output parser on the raw bytes.
  std::string text(bytes);
  llm::VerifyContext ctx{llm::known_values(kd, kernel), {kd.device_info()}, kd.bottleneck};
  auto v = llm::verify_text(text, ctx);
  (void)llm::mark_unsupported(text, v.claims);
  (void)v.feedback();
  (void)llm::parse_structured(text, llm::answer_schema());
  return 0;
}
