// The verified LLM answer; its JSON form is the contract's `llm` object
// (docs/contracts.md, schemas/analysis.schema.json "llm"), plus a few additive fields.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/provider.h"
#include "llm/verify.h"

namespace keet::llm {

struct Suggestion {
  std::string text;
  std::optional<std::string> finding;  // a finding id of the diagnosis, or none
  bool speculative = false;            // not tied to a finding the engine made
};

enum class Status { Verified, Flagged, Unavailable };
std::string_view status_name(Status s);

struct LlmResult {
  Status status = Status::Unavailable;
  std::string provider, model;
  std::string text;  // shown to the user; unsupported numbers marked
  std::vector<Suggestion> suggestions;
  std::vector<Claim> claims;
  int unsupported_claims = 0;
  std::vector<std::string> arch_violations;
  std::vector<std::string> contradictions;
  std::vector<std::string> questions;
  std::optional<double> confidence;
  Usage usage;
  int prompt_tokens_estimate = 0;
  bool cached = false;     // every call came from the cache (no tokens spent)
  bool corrected = false;  // a self-correction round was needed
  std::string error;       // why the result is unavailable
};

// The contract's `llm` object.
nlohmann::json to_json(const LlmResult& r);
// The human-readable block printed after the deterministic analysis.
std::string render_text(const LlmResult& r);
// How a reply's notes (suggestions, questions, rejected advice, contradictions,
// unverified numbers) are introduced, one per line: the text form and chat's
// CommonMark differ only in these.
struct NoteStyle {
  std::string_view suggestion, question, not_for_device, contradiction, unverified;
};
std::string reply_notes(const LlmResult& r, const NoteStyle& style);

// Applies a verification to a result (status, claims, violations).
void apply_verification(LlmResult& r, const Verification& v);

}  // namespace keet::llm
