// Which hardware features a GPU has, per chip and not only per compute
// capability, and whether a piece of advice asks for one it lacks.
//
// One check guards every sentence of advice KEET prints: the engine's rules,
// stall reasons, library and block-size advice, and every LLM answer
// (llm/verify.cc). Features and their spellings: data/arch/features.json;
// availability per compute capability: data/arch/compute_capabilities.json;
// chips that lack a feature their compute capability has (GTX 16xx: no tensor
// cores at 7.5): data/arch/gpus.json "chip_features".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/arch.h"

namespace keet::analysis {

// A device as far as advice is concerned: its compute capability row and
// what its chip lacks. Unknown (no compute capability) means nothing can be
// ruled out by architecture.
class DeviceFeatures {
 public:
  DeviceFeatures() = default;
  DeviceFeatures(std::string_view device_name, std::string_view compute_capability);
  bool known() const { return arch_ != nullptr; }
  // False when the device is unknown: callers keep only architecture-free advice then.
  bool has(std::string_view feature) const;
  // Why the device lacks it, in one clause ("needs compute capability 9.0; this
  // device is 8.6", "the GeForce GTX 1660 SUPER (Turing TU116/TU117) has none, although
  // its compute capability is 7.5"); empty when it has it.
  std::string why_not(std::string_view feature) const;
  const std::string& name() const { return name_; }
  const std::string& cc() const { return cc_; }
  // The features.json features it lacks, one bit each in file order.
  uint64_t lacking() const { return lacking_; }

 private:
  uint64_t lacking_ = 0;
  std::string name_, cc_;
  const ArchSpec* arch_ = nullptr;
  std::vector<std::string> chip_lacks_;
  std::string chip_family_;
};

// The same, worked out once per device (name and compute capability) and copied.
DeviceFeatures device_features(std::string_view device_name, std::string_view compute_capability);

// Feature keys of data/arch/features.json, in file order.
std::vector<std::string> feature_keys();
// The readable name of a feature key ("tensor cores (WMMA/mma.sync)").
std::string feature_name(std::string_view key);
// The feature keys a text names (any sentence), in features.json order.
std::vector<std::string> features_named(std::string_view text);

struct FeatureCheck {
  // LLM prose: a sentence that only talks about a feature ("TMA is not
  // available on 8.6") is not advice. The engine's own advice never names a
  // feature its device lacks, so it is checked strictly.
  bool allow_negated = false;
};
// One message per feature the text asks for and the device lacks:
// "<feature name> <why_not>".
std::vector<std::string> feature_violations(std::string_view text, const DeviceFeatures& device, FeatureCheck opt = {});

// True when a line of KEET's own advice fits the device. Memoised per text:
// a report of 20,000 kernels asks about the same few dozen lines.
bool advice_fits(std::string_view advice, const DeviceFeatures& device);

}  // namespace keet::analysis
