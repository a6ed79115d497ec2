#include "llm/explain.h"
#include "util/json.h"

#include <fmt/format.h>

namespace keet::llm {

using nlohmann::json;

namespace {

// `cached` stays true only while every answer came from the cache.
void account(LlmResult& r, const ChatResponse& res) {
  r.usage += res.usage;
  r.cached = r.cached && res.cached;
}

bool usable(const ChatResponse& res, const ChatRequest& req) { return !req.output || res.structured; }

std::string repair_request(const std::string& problem) {
  return fmt::format(
      "Your previous reply could not be used: {}. Reply again with only the JSON object that "
      "matches the schema.",
      problem);
}

bool has_finding(const analysis::KernelDiagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return true;
  return false;
}

// Verifies the narrative and each suggestion; marks unsupported numbers in place.
void fill_from_answer(LlmResult& r, const json& ans, const analysis::KernelDiagnosis& d, const VerifyContext& ctx) {
  r.claims.clear();
  r.unsupported_claims = 0;
  r.arch_violations.clear();
  r.contradictions.clear();
  r.suggestions.clear();
  std::string text = ans.value("summary", "");
  if (auto reasoning = ans.value("reasoning", ""); !reasoning.empty()) text += "\n\n" + reasoning;
  auto v = verify_text(text, ctx);
  r.text = mark_unsupported(text, v.claims);
  apply_verification(r, v);
  for (const auto& s : ans.value("suggestions", json::array())) {
    Suggestion sug{s.value("text", ""), std::nullopt, true};
    if (s.contains("finding") && s["finding"].is_string() && has_finding(d, s["finding"].get<std::string>())) {
      sug.finding = s["finding"].get<std::string>();
      sug.speculative = false;
    }
    auto sv = verify_text(sug.text, {ctx.known, ctx.devices, std::nullopt});
    sug.text = mark_unsupported(sug.text, sv.claims);
    apply_verification(r, sv);
    r.suggestions.push_back(std::move(sug));
  }
  r.questions = ans.value("questions", std::vector<std::string>{});
  if (ans.contains("confidence") && ans["confidence"].is_number()) r.confidence = ans["confidence"].get<double>();
}

Verification as_verification(const LlmResult& r) {
  Verification v;
  v.claims = r.claims;
  v.unsupported = r.unsupported_claims;
  v.arch_violations = r.arch_violations;
  v.contradictions = r.contradictions;
  return v;
}

}  // namespace

LlmResult unavailable(const LlmClient& client, std::string why) {
  LlmResult r;
  r.provider = client.config().provider;
  r.model = client.config().model;
  r.error = std::move(why);
  return r;
}

std::optional<ChatResponse> send_with_repair(LlmClient& client, ChatRequest& req, LlmResult& r) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto res = client.send(req);
    if (res) account(r, *res);
    if (res && usable(*res, req)) return *res;
    if (!res && res.error().kind != LlmError::Kind::Malformed) {
      r.error = res.error().message;
      r.cached = false;
      return std::nullopt;
    }
    std::string problem = res ? res->structured_error : res.error().message;
    r.error = "malformed answer after one repair attempt: " + problem;
    if (res && !res->text.empty()) req.messages.push_back({Role::Assistant, res->text});
    req.messages.push_back({Role::User, repair_request(problem)});
  }
  r.cached = false;
  return std::nullopt;
}

LlmResult explain_kernel(LlmClient& client, const analysis::KernelDiagnosis& d, const model::Kernel* k,
                         const ExplainOptions& opt) {
  LlmResult r = unavailable(client, "");
  r.cached = true;
  Prompt p = explain_prompt(d, k, opt.prompt);
  r.prompt_tokens_estimate = p.estimated_tokens;
  ChatRequest req{client.config().model,
                  {{Role::System, p.system}, {Role::User, p.user}},
                  {},
                  OutputSchema{"kernel_explanation", "The explanation of the kernel's performance", answer_schema()},
                  opt.max_tokens};
  auto first = send_with_repair(client, req, r);
  if (!first) return r;
  VerifyContext ctx{known_values(d, k), {d.device_info()}, d.bottleneck};
  fill_from_answer(r, *first->structured, d, ctx);
  r.error.clear();
  if (r.status == Status::Verified) return r;
  // One self-correction round: tell the model exactly what failed verification.
  std::string feedback = as_verification(r).feedback();
  req.messages.push_back({Role::Assistant, json_text(*first->structured)});
  req.messages.push_back({Role::User, "KEET checked your answer against the report and found problems:\n" + feedback +
                                          "Correct the answer: use only numbers from the data and advice this device "
                                          "supports. Reply with the JSON object only."});
  LlmResult retry = r;
  if (auto second = send_with_repair(client, req, retry)) {
    retry.corrected = true;
    retry.error.clear();
    fill_from_answer(retry, *second->structured, d, ctx);
    return retry;
  }
  // The correction failed to arrive: keep the first answer, flagged, with its tokens counted.
  r.usage = retry.usage;
  r.corrected = true;
  return r;
}

}  // namespace keet::llm
