#include "analysis/gpu_features.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "util/data_value.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::analysis {
namespace {

// RE2 has no lookaround, so features.json spells "X not followed by Y" as a
// trailing X(?!Y), checked here: a match of X counts only when Y does not
// match right after it.
struct FeaturePattern {
  Pattern match;
  std::optional<Pattern> not_followed_by;
  bool found(std::string_view s) const {
    size_t from = 0;
    while (auto m = match.find(s, from)) {
      if (!not_followed_by || !not_followed_by->search(s.substr(m->pos + m->len))) return true;
      from = m->pos + 1;
    }
    return false;
  }
};

// The patterns are our own compiled-in data: one that does not compile is a
// bug the unit tests catch, so it is skipped here rather than thrown.
std::optional<FeaturePattern> feature_pattern(const std::string& p) {
  Pattern::Options icase{.case_insensitive = true};
  size_t at = p.rfind("(?!");
  if (at == std::string::npos || !p.ends_with(")")) {
    auto m = Pattern::compile(p, icase);
    if (!m) return std::nullopt;
    return FeaturePattern{std::move(*m), std::nullopt};
  }
  auto m = Pattern::compile(p.substr(0, at), icase);
  auto not_after = Pattern::compile("^(?:" + p.substr(at + 3, p.size() - at - 4) + ")", icase);
  if (!m || !not_after) return std::nullopt;
  return FeaturePattern{std::move(*m), std::move(*not_after)};
}

struct Feature {
  std::string key, name;
  std::vector<FeaturePattern> patterns;
};

struct FeatureTable {
  std::vector<Feature> features;  // at most 64: a text's features fit one mask
  std::vector<std::string> negations;
};

const FeatureTable& feature_table() {
  static const FeatureTable t = [] {
    FeatureTable out;
    auto j = compiled_data("arch/features.json");
    if (!j) return out;
    for (auto f : j->member("features")) {
      if (out.features.size() == 64) break;
      Feature feat{f.at("feature").str(), f.at("name").str(), {}};
      for (auto p : f.member("patterns"))
        if (auto fp = feature_pattern(p.str())) feat.patterns.push_back(std::move(*fp));
      out.features.push_back(std::move(feat));
    }
    out.negations = member_or(*j, "negations", std::vector<std::string>{});
    return out;
  }();
  return t;
}

struct ChipRule {
  std::string chips;
  std::vector<Pattern> patterns;
  std::vector<std::string> lacks;
};

const std::vector<ChipRule>& chip_rules() {
  static const std::vector<ChipRule> rules = [] {
    std::vector<ChipRule> out;
    auto j = compiled_data("arch/gpus.json");
    if (!j) return out;
    for (auto c : j->member("chip_features")) {
      ChipRule r{c.at("chips").str(), {}, member_or(c, "lacks", std::vector<std::string>{})};
      for (auto p : c.member("patterns"))
        if (auto m = Pattern::compile(p.str(), {.case_insensitive = true})) r.patterns.push_back(std::move(*m));
      out.push_back(std::move(r));
    }
    return out;
  }();
  return rules;
}

// Sentences end at ".", "!" or "?" followed by a space, or at a newline
// (so "cp.async" stays whole).
std::vector<std::string_view> sentences(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    bool end_mark = (text[i] == '.' || text[i] == '!' || text[i] == '?') && (i + 1 == text.size() || text[i + 1] == ' ');
    if (end_mark || text[i] == '\n') {
      out.push_back(text.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

bool negated(std::string_view sentence) {
  std::string lower = to_lower(sentence);
  const auto& n = feature_table().negations;
  return std::ranges::any_of(n, [&](const std::string& w) { return lower.find(w) != std::string::npos; });
}

bool mentions(std::string_view text, const Feature& f) {
  return std::ranges::any_of(f.patterns, [&](const FeaturePattern& p) { return p.found(text); });
}

std::string min_cc_with(std::string_view feature) {
  for (const auto& a : compute_capabilities())
    if (a.has(feature)) return a.cc.text();
  return "?";
}

uint64_t mask_of(std::string_view text) {
  uint64_t mask = 0;
  const auto& fs = feature_table().features;
  for (size_t i = 0; i < fs.size(); ++i)
    if (mentions(text, fs[i])) mask |= uint64_t{1} << i;
  return mask;
}

}  // namespace

DeviceFeatures::DeviceFeatures(std::string_view device_name, std::string_view compute_capability)
    : name_(device_name), cc_(compute_capability), arch_(find_arch(compute_capability)) {
  if (!arch_ && !cc_.empty()) arch_ = lookup_arch(cc_).spec;  // a newer minor: the nearest older row
  for (const auto& rule : chip_rules())
    if (std::ranges::any_of(rule.patterns, [&](const Pattern& p) { return p.search(name_); })) {
      chip_lacks_.insert(chip_lacks_.end(), rule.lacks.begin(), rule.lacks.end());
      chip_family_ = rule.chips;
    }
  // A product the table knows with no tensor-core peak has no tensor cores.
  if (const GpuProduct* p = name_.empty() ? nullptr : find_gpu(name_); p && !p->fp16_tensor_tflops) {
    chip_lacks_.push_back("tensor_cores");
    if (chip_family_.empty()) chip_family_ = p->name;
  }
}

bool DeviceFeatures::has(std::string_view feature) const {
  if (!arch_ || !arch_->has(feature)) return false;
  return std::ranges::find(chip_lacks_, feature) == chip_lacks_.end();
}

std::string DeviceFeatures::why_not(std::string_view feature) const {
  if (has(feature)) return "";
  if (!arch_) return "needs a known device; this report does not say which GPU ran the kernel";
  if (!arch_->has(feature)) return fmt::format("needs compute capability {}; this device is {}", min_cc_with(feature), cc_);
  return fmt::format("is absent from the {} ({}), although its compute capability is {}", name_, chip_family_, cc_);
}

std::vector<std::string> feature_keys() {
  std::vector<std::string> out;
  for (const auto& f : feature_table().features) out.push_back(f.key);
  return out;
}

std::string feature_name(std::string_view key) {
  for (const auto& f : feature_table().features)
    if (f.key == key) return f.name;
  return std::string(key);
}

std::vector<std::string> features_named(std::string_view text) {
  std::vector<std::string> out;
  uint64_t mask = mask_of(text);
  const auto& fs = feature_table().features;
  for (size_t i = 0; i < fs.size(); ++i)
    if (mask & (uint64_t{1} << i)) out.push_back(fs[i].key);
  return out;
}

std::vector<std::string> feature_violations(std::string_view text, const DeviceFeatures& device, FeatureCheck opt) {
  std::vector<std::string> out;
  if (!device.known()) return out;
  for (const auto& f : feature_table().features) {
    if (device.has(f.key)) continue;
    for (auto s : sentences(text))
      if (mentions(s, f) && !(opt.allow_negated && negated(s))) {
        out.push_back(f.name + " " + device.why_not(f.key));
        break;
      }
  }
  return out;
}

bool advice_fits(std::string_view advice, const DeviceFeatures& device) {
  static std::mutex lock;
  static std::unordered_map<std::string, uint64_t> memo;
  uint64_t mask = 0;
  {
    std::lock_guard guard(lock);
    auto it = memo.find(std::string(advice));
    if (it != memo.end()) mask = it->second;
    else {
      mask = mask_of(advice);
      if (memo.size() < 4096) memo.emplace(std::string(advice), mask);
    }
  }
  if (!mask) return true;
  const auto& fs = feature_table().features;
  for (size_t i = 0; i < fs.size(); ++i)
    if ((mask & (uint64_t{1} << i)) && !device.has(fs[i].key)) return false;
  return true;
}

}  // namespace keet::analysis
