#include "analysis/gpu_features.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "util/data_value.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::analysis {
namespace {

// The lower-case text every match of an RE2 pattern must contain (the
// longest run of plain characters outside groups and classes that no
// quantifier makes optional), or "" when none is certain (a top-level "|").
// A text without it cannot match, so most advice never reaches RE2.
std::string required_literal(std::string_view p) {
  std::string best, run;
  auto flush = [&] {
    if (run.size() > best.size()) best = run;
    run.clear();
  };
  int depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (depth > 0) {  // inside a group: nothing there is certain
      if (c == '\\')
        ++i;
      else if (c == '(')
        ++depth;
      else if (c == ')')
        --depth;
      continue;
    }
    if (c == '|') return "";
    if (c == '(') {
      flush();
      ++depth;
    } else if (c == '[') {
      flush();
      while (i < p.size() && p[i] != ']') i += p[i] == '\\' ? 2 : 1;
    } else if (c == '?' || c == '*' || c == '{') {
      if (!run.empty()) run.pop_back();  // the character before is optional
      flush();
      if (c == '{') i = p.find('}', i) == std::string_view::npos ? p.size() : p.find('}', i);
    } else if (c == '+' || c == '^' || c == '$' || c == '.') {
      flush();
    } else if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      if (e == '.' || e == '-' || e == '_' || e == ':' || e == '/')
        run += e;
      else
        flush();  // \b, \d, \w ...
    } else {
      run += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  flush();
  return best;
}

// One spelling of a feature. RE2 has no lookaround, so features.json spells
// "X not followed by Y" as a trailing X(?!Y), checked here: a match of X
// counts only when Y does not match right after it. Compiled on first use
// (most runs never need most patterns), behind the literal prefilter.
class FeaturePattern {
 public:
  explicit FeaturePattern(std::string source) : source_(std::move(source)) {
    size_t at = source_.rfind("(?!");
    bool lookahead = at != std::string::npos && source_.ends_with(")");
    literal_ = required_literal(lookahead ? std::string_view(source_).substr(0, at) : source_);
  }
  // `lower`: the text in lower case, for the prefilter.
  bool found(std::string_view s, std::string_view lower) const {
    if (!literal_.empty() && lower.find(literal_) == std::string_view::npos) return false;
    std::call_once(once_, [&] { compile(); });
    if (!match_) return false;
    size_t from = 0;
    while (auto m = match_->find(s, from)) {
      if (!not_followed_by_ || !not_followed_by_->search(s.substr(m->pos + m->len))) return true;
      from = m->pos + 1;
    }
    return false;
  }

 private:
  // Our own compiled-in data: a pattern that does not compile is a bug the
  // unit tests catch, so here it never matches rather than throwing.
  void compile() const {
    Pattern::Options icase{.case_insensitive = true};
    size_t at = source_.rfind("(?!");
    if (at == std::string::npos || !source_.ends_with(")")) {
      if (auto m = Pattern::compile(source_, icase)) match_ = std::move(*m);
      return;
    }
    auto m = Pattern::compile(source_.substr(0, at), icase);
    auto not_after = Pattern::compile("^(?:" + source_.substr(at + 3, source_.size() - at - 4) + ")", icase);
    if (m && not_after) match_ = std::move(*m), not_followed_by_ = std::move(*not_after);
  }

  std::string source_, literal_;
  mutable std::once_flag once_;
  mutable std::optional<Pattern> match_, not_followed_by_;
};

struct Feature {
  std::string key, name;
  std::vector<std::unique_ptr<FeaturePattern>> patterns;
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
      for (auto p : f.member("patterns")) feat.patterns.push_back(std::make_unique<FeaturePattern>(p.str()));
      out.features.push_back(std::move(feat));
    }
    out.negations = member_or(*j, "negations", std::vector<std::string>{});
    return out;
  }();
  return t;
}

struct ChipRule {
  std::string chips;
  std::vector<std::unique_ptr<FeaturePattern>> patterns;
  std::vector<std::string> lacks;
};

const std::vector<ChipRule>& chip_rules() {
  static const std::vector<ChipRule> rules = [] {
    std::vector<ChipRule> out;
    auto j = compiled_data("arch/gpus.json");
    if (!j) return out;
    for (auto c : j->member("chip_features")) {
      ChipRule r{c.at("chips").str(), {}, member_or(c, "lacks", std::vector<std::string>{})};
      for (auto p : c.member("patterns")) r.patterns.push_back(std::make_unique<FeaturePattern>(p.str()));
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
    bool end_mark =
        (text[i] == '.' || text[i] == '!' || text[i] == '?') && (i + 1 == text.size() || text[i + 1] == ' ');
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

bool mentions(std::string_view text, std::string_view lower, const Feature& f) {
  return std::ranges::any_of(f.patterns, [&](const auto& p) { return p->found(text, lower); });
}

std::string min_cc_with(std::string_view feature) {
  for (const auto& a : compute_capabilities())
    if (a.has(feature)) return a.cc.text();
  return "?";
}

// The features (bits in features.json order) among `which` that `text` names.
uint64_t mask_of(std::string_view text, uint64_t which = ~uint64_t{0}) {
  uint64_t mask = 0;
  std::string lower = to_lower(text);
  const auto& fs = feature_table().features;
  for (size_t i = 0; i < fs.size(); ++i)
    if ((which & (uint64_t{1} << i)) && mentions(text, lower, fs[i])) mask |= uint64_t{1} << i;
  return mask;
}

}  // namespace

DeviceFeatures::DeviceFeatures(std::string_view device_name, std::string_view compute_capability)
    : name_(device_name), cc_(compute_capability), arch_(find_arch(compute_capability)) {
  if (!arch_ && !cc_.empty()) arch_ = lookup_arch(cc_).spec;  // a newer minor: the nearest older row
  std::string lower = to_lower(name_);
  for (const auto& rule : chip_rules())
    if (std::ranges::any_of(rule.patterns, [&](const auto& p) { return p->found(name_, lower); })) {
      chip_lacks_.insert(chip_lacks_.end(), rule.lacks.begin(), rule.lacks.end());
      chip_family_ = rule.chips;
    }
  // A product the table knows with no tensor-core peak has no tensor cores.
  if (const GpuProduct* p = name_.empty() ? nullptr : find_gpu(name_); p && !p->fp16_tensor_tflops) {
    chip_lacks_.push_back("tensor_cores");
    if (chip_family_.empty()) chip_family_ = p->name;
  }
  const auto& fs = feature_table().features;
  for (size_t i = 0; i < fs.size(); ++i)
    if (!has(fs[i].key)) lacking_ |= uint64_t{1} << i;
}

DeviceFeatures device_features(std::string_view device_name, std::string_view compute_capability) {
  // A report names one or a few devices; its kernels ask for them again and again.
  static std::mutex lock;
  static std::vector<DeviceFeatures> seen;  // a report names one device or a few: a short list
  std::lock_guard guard(lock);
  for (const auto& d : seen)
    if (d.name() == device_name && d.cc() == compute_capability) return d;
  DeviceFeatures made(device_name, compute_capability);
  if (seen.size() < 256) seen.push_back(made);  // bounded: a long-running server sees few devices
  return made;
}

bool DeviceFeatures::has(std::string_view feature) const {
  if (!arch_ || !arch_->has(feature)) return false;
  return std::ranges::find(chip_lacks_, feature) == chip_lacks_.end();
}

std::string DeviceFeatures::why_not(std::string_view feature) const {
  if (has(feature)) return "";
  if (!arch_) return "needs a known device; this report does not say which GPU ran the kernel";
  if (!arch_->has(feature))
    return fmt::format("needs compute capability {}; this device is {}", min_cc_with(feature), cc_);
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
      if (mentions(s, to_lower(s), f) && !(opt.allow_negated && negated(s))) {
        out.push_back(f.name + " " + device.why_not(f.key));
        break;
      }
  }
  return out;
}

bool advice_fits(std::string_view advice, const DeviceFeatures& device) {
  // Only the features this device lacks need looking for; what a text was
  // checked for is remembered, so a report of 20,000 kernels asks about the
  // same few dozen lines once.
  uint64_t lacking = device.lacking();
  if (!lacking) return true;
  struct Checked {
    uint64_t checked = 0, found = 0;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  static std::mutex lock;
  static std::unordered_map<std::string, Checked, Hash, std::equal_to<>> memo;
  std::lock_guard guard(lock);
  Checked mine;
  auto it = memo.find(advice);
  if (it != memo.end()) mine = it->second;
  if (uint64_t need = lacking & ~mine.checked) {
    mine.found |= mask_of(advice, need);
    mine.checked |= need;
    if (it != memo.end())
      it->second = mine;
    else if (memo.size() < 4096)
      memo.emplace(std::string(advice), mine);
  }
  return (mine.found & lacking) == 0;
}

}  // namespace keet::analysis
