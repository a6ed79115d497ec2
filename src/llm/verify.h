// Verification of LLM text: every number must be a report value or derived from
// one (unit conversion, percent vs fraction, rounding to the shown precision);
// advice must fit the device's feature table; the text must not contradict the
// engine's bottleneck class. Rules and vocabularies: data/llm/verify.json and
// data/arch/features.json; feature availability: analysis/gpu_features.h.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::llm {

// A number the verifier accepts, in base units of its dimension.
struct KnownValue {
  double value = 0;
  std::string unit;    // as the report or engine states it ("nsecond", "%", "x", "")
  std::string source;  // ncu metric name, or "derived:<name>"
};

// Everything a kernel's report and diagnosis back: every numeric metric, the
// launch configuration, durations, evidence, derived values, speedups.
std::vector<KnownValue> known_values(const analysis::KernelDiagnosis& d, const model::Kernel* k);

struct Claim {
  std::string text;  // the number as written, with its unit ("91.8%")
  double value = 0;
  std::string unit;
  std::optional<std::string> supported_by;
  size_t offset = 0;         // position of `text` in the verified string
  int decimals = 0;          // digits after the point as written: the rounding allowed
  bool approximate = false;  // "about 90%": a relative tolerance applies
};

// Numbers in prose that state a measurement (identifiers such as L2, sm_86,
// list markers and small counts are skipped).
std::vector<Claim> extract_claims(std::string_view text);

// The source of a known value that matches the claim, if any.
std::optional<std::string> support_for(const Claim& c, const std::vector<KnownValue>& known);

// "TMA (Tensor Memory Accelerator) needs compute capability 9.0; this device is 8.6": the
// check of analysis/gpu_features.h, which also guards the engine's own advice.
std::vector<std::string> arch_violations(std::string_view text, const analysis::DeviceInfo& device);

// Statements such as "compute-bound" that disagree with the engine's class.
std::vector<std::string> bottleneck_contradictions(std::string_view text, const analysis::Bottleneck& b);

struct VerifyContext {
  std::vector<KnownValue> known;
  std::vector<analysis::DeviceInfo> devices;       // devices the advice must fit (name and compute capability)
  std::optional<analysis::Bottleneck> bottleneck;  // absent when the text spans kernels
};

struct Verification {
  std::vector<Claim> claims;
  int unsupported = 0;
  std::vector<std::string> arch_violations;
  std::vector<std::string> contradictions;
  bool clean() const { return unsupported == 0 && arch_violations.empty() && contradictions.empty(); }
  // What to tell the model in the self-correction round.
  std::string feedback() const;
};

Verification verify_text(std::string_view text, const VerifyContext& ctx);

// The text with each unsupported number replaced by "[unverified: 97%]".
std::string mark_unsupported(std::string_view text, const std::vector<Claim>& claims);

}  // namespace keet::llm
