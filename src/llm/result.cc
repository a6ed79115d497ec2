#include "llm/result.h"

#include <fmt/format.h>

namespace keet::llm {

using nlohmann::json;

std::string_view status_name(Status s) {
  switch (s) {
    case Status::Verified:
      return "verified";
    case Status::Flagged:
      return "flagged";
    case Status::Unavailable:
      return "unavailable";
  }
  return "unavailable";
}

namespace {

json optional_text(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

json claims_json(const std::vector<Claim>& claims) {
  json out = json::array();
  for (const auto& c : claims)
    out.push_back(
        {{"text", c.text}, {"value", c.value}, {"unit", c.unit}, {"supported_by", optional_text(c.supported_by)}});
  return out;
}

json suggestions_json(const std::vector<Suggestion>& s) {
  json out = json::array();
  for (const auto& x : s)
    out.push_back({{"text", x.text}, {"finding", optional_text(x.finding)}, {"speculative", x.speculative}});
  return out;
}

}  // namespace

json to_json(const LlmResult& r) {
  json j = {{"status", status_name(r.status)},
            {"provider", r.provider},
            {"model", r.model},
            {"text", r.text},
            {"suggestions", suggestions_json(r.suggestions)},
            {"claims", claims_json(r.claims)},
            {"unsupported_claims", r.unsupported_claims},
            {"arch_violations", r.arch_violations},
            {"usage", {{"prompt_tokens", r.usage.prompt_tokens}, {"completion_tokens", r.usage.completion_tokens}}},
            // Additive fields (the contract's schema may grow).
            {"contradictions", r.contradictions},
            {"questions", r.questions},
            {"confidence", r.confidence ? json(*r.confidence) : json(nullptr)},
            {"prompt_tokens_estimate", r.prompt_tokens_estimate},
            {"cached", r.cached},
            {"corrected", r.corrected}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

std::string reply_notes(const LlmResult& r, const NoteStyle& style) {
  std::string out;
  for (const auto& s : r.suggestions)
    out += fmt::format("{}{}{}\n", style.suggestion, s.text, s.finding ? " [" + *s.finding + "]" : " [speculative]");
  for (const auto& q : r.questions) out += fmt::format("{}{}\n", style.question, q);
  for (const auto& a : r.arch_violations) out += fmt::format("{}{}\n", style.not_for_device, a);
  for (const auto& c : r.contradictions) out += fmt::format("{}{}\n", style.contradiction, c);
  if (r.unsupported_claims > 0)
    out += fmt::format("{}{} number(s) not backed by the report are marked [unverified]\n", style.unverified,
                       r.unsupported_claims);
  return out;
}

std::string render_text(const LlmResult& r) {
  std::string out = fmt::format("LLM ({}:{}) - {}\n", r.provider, r.model, status_name(r.status));
  if (r.status == Status::Unavailable) return out + "  unavailable: " + r.error + "\n";
  out += r.text + "\n";
  out += reply_notes(r, {"  * ", "  ? ", "  ! not for this device: ", "  ! ", "  ! "});
  out += fmt::format("  tokens: {} prompt, {} completion{}\n", r.usage.prompt_tokens, r.usage.completion_tokens,
                     r.cached ? " (cached)" : "");
  return out;
}

void apply_verification(LlmResult& r, const Verification& v) {
  r.claims.insert(r.claims.end(), v.claims.begin(), v.claims.end());
  r.unsupported_claims += v.unsupported;
  for (const auto& a : v.arch_violations)
    if (std::find(r.arch_violations.begin(), r.arch_violations.end(), a) == r.arch_violations.end())
      r.arch_violations.push_back(a);
  for (const auto& c : v.contradictions)
    if (std::find(r.contradictions.begin(), r.contradictions.end(), c) == r.contradictions.end())
      r.contradictions.push_back(c);
  bool clean = r.unsupported_claims == 0 && r.arch_violations.empty() && r.contradictions.empty();
  r.status = clean ? Status::Verified : Status::Flagged;
}

}  // namespace keet::llm
