#include "llm/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/arch.h"
#include "analysis/gpu_features.h"
#include "model/units.h"
#include "util/embedded_data.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::llm {

using nlohmann::json;

namespace {

struct UnitDef {
  std::string text;
  std::string dim;  // percent, ratio, time, bytes, bandwidth, frequency; "" = plain number
  double factor = 1;
  double alt_factor = 0;
};

struct Rules {
  std::vector<UnitDef> units;  // longest first, so "GB/s" wins over "GB"
  std::vector<std::string> reference_prefixes;
  std::vector<std::string> approximate_words;
  double approximate_tolerance = 0.05;
  double free_integers = 10;
  std::vector<double> constants;
};

json embedded_json(std::string_view path) {
  auto text = embedded_file(path);
  return text ? json::parse(*text, nullptr, false) : json::object();
}

const Rules& verify_rules() {
  static const Rules r = [] {
    json j = embedded_json("llm/verify.json");
    Rules out;
    for (const auto& u : j.value("units", json::array()))
      out.units.push_back({u["text"], u["dim"], u["factor"], u.value("alt_factor", 0.0)});
    std::stable_sort(out.units.begin(), out.units.end(),
                     [](const UnitDef& a, const UnitDef& b) { return a.text.size() > b.text.size(); });
    out.reference_prefixes = j.value("reference_prefixes", std::vector<std::string>{});
    out.approximate_words = j.value("approximate_words", std::vector<std::string>{});
    out.approximate_tolerance = j.value("approximate_tolerance", 0.05);
    out.free_integers = j.value("free_integers", 10.0);
    out.constants = j.value("constants", std::vector<double>{});
    return out;
  }();
  return r;
}

const UnitDef* unit_def(std::string_view unit) {
  for (const auto& u : verify_rules().units)
    if (u.text == unit) return &u;
  return nullptr;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---- number extraction ----

// The unit written right after a number ("%", " GB/s", "-byte"); empty if none.
const UnitDef* unit_at(std::string_view text, size_t& pos) {
  size_t p = pos;
  if (p < text.size() && (text[p] == ' ' || text[p] == '-')) ++p;
  for (const auto& u : verify_rules().units) {
    if (text.substr(p).starts_with(u.text)) {
      size_t end = p + u.text.size();
      bool alpha_unit = std::isalpha(static_cast<unsigned char>(u.text.back()));
      if (alpha_unit && end < text.size() && is_word_char(text[end])) continue;
      pos = end;
      return &u;
    }
  }
  return nullptr;
}

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (suffix.size() > s.size()) return false;
  return to_lower(s.substr(s.size() - suffix.size())) == to_lower(suffix);
}

// True when the words before the number end with `word` as a whole word.
bool preceded_by(std::string_view before, std::string_view word) {
  before = trim(before);
  if (!ends_with_ci(before, word)) return false;
  size_t start = before.size() - word.size();
  return start == 0 || !std::isalnum(static_cast<unsigned char>(before[start - 1])) ||
         !std::isalnum(static_cast<unsigned char>(word.front()));
}

bool any_preceding(std::string_view before, const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return preceded_by(before, w); });
}

// "1. " or "2) " at the start of a line is a list marker.
bool list_marker(std::string_view text, size_t start, size_t end) {
  size_t line = text.rfind('\n', start == 0 ? 0 : start - 1);
  std::string_view lead = text.substr(line == std::string_view::npos ? 0 : line + 1,
                                      start - (line == std::string_view::npos ? 0 : line + 1));
  if (start != 0 && !trim(lead).empty()) return false;
  return end + 1 < text.size() && (text[end] == '.' || text[end] == ')') && text[end + 1] == ' ';
}

// Scans one number starting at `i`; returns its end.
size_t scan_number(std::string_view text, size_t i, int& decimals) {
  size_t j = i;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
  // Thousands separators: a comma followed by exactly three digits.
  while (j + 3 < text.size() + 0 && text[j] == ',' && std::isdigit(static_cast<unsigned char>(text[j + 1])) &&
         std::isdigit(static_cast<unsigned char>(text[j + 2])) &&
         std::isdigit(static_cast<unsigned char>(text[j + 3])) &&
         (j + 4 >= text.size() || !std::isdigit(static_cast<unsigned char>(text[j + 4]))))
    j += 4;
  decimals = 0;
  if (j + 1 < text.size() && text[j] == '.' && std::isdigit(static_cast<unsigned char>(text[j + 1]))) {
    ++j;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j, ++decimals;
  }
  return j;
}

bool is_free_number(const Claim& c) {
  if (!c.unit.empty() && c.unit != "B" && c.unit != "byte" && c.unit != "bytes") return false;
  if (c.decimals != 0) return false;
  const auto& r = verify_rules();
  if (c.unit.empty() && c.value <= r.free_integers) return true;
  return std::find(r.constants.begin(), r.constants.end(), c.value) != r.constants.end();
}

size_t skip_token(std::string_view text, size_t i) {
  while (i < text.size() && (is_word_char(text[i]) || text[i] == '.')) ++i;
  return i;
}

std::optional<Claim> claim_at(std::string_view text, size_t i, size_t& next) {
  int decimals = 0;
  size_t end = scan_number(text, i, decimals);
  size_t unit_end = end;
  const UnitDef* unit = unit_at(text, unit_end);
  next = unit ? unit_end : end;
  if (!unit && end < text.size() && is_word_char(text[end])) {  // "2D", "3rd"
    next = skip_token(text, end);
    return std::nullopt;
  }
  std::string_view before = text.substr(0, i);
  if (any_preceding(before, verify_rules().reference_prefixes) || list_marker(text, i, end)) return std::nullopt;
  std::string digits;
  for (char c : text.substr(i, end - i))
    if (c != ',') digits += c;
  Claim c{std::string(text.substr(i, next - i)),
          std::stod(digits),
          unit ? unit->text : "",
          std::nullopt,
          i,
          decimals,
          any_preceding(before, verify_rules().approximate_words)};
  if (is_free_number(c)) return std::nullopt;
  return c;
}

// ---- matching ----

struct Variant {
  std::string dim;
  double value;
};

// The ways a report value may legitimately be restated.
std::vector<Variant> variants(const KnownValue& k) {
  const UnitDef* u = unit_def(k.unit);
  std::string dim = u ? u->dim : "";
  double base = k.value * (u ? u->factor : 1);
  std::vector<Variant> out{{dim, base}};
  if (dim.empty() || dim == "ratio") {
    out.push_back({"ratio", base});
    out.push_back({"", base});
    if (std::abs(base) <= 1.0) out.push_back({"percent", base * 100});
  }
  if (dim == "ratio" && base > 0) {  // a speedup s restated as "s-1 faster" or "time cut by 1-1/s"
    out.push_back({"percent", (base - 1) * 100});
    out.push_back({"percent", (1 - 1 / base) * 100});
  }
  if (dim == "percent") {
    out.push_back({"", base / 100});
    out.push_back({"", base});
  }
  if (dim == "time") {
    for (double f : {1.0, 1e3, 1e6}) out.push_back({"", base / f});
  }
  return out;
}

double tolerance(const Claim& c) {
  double shown = 0.5 * std::pow(10.0, -c.decimals);
  if (c.approximate) shown = std::max(shown, std::abs(c.value) * verify_rules().approximate_tolerance);
  return shown + std::abs(c.value) * 1e-9;
}

bool matches(const Claim& c, const KnownValue& k) {
  const UnitDef* u = unit_def(c.unit);
  std::string dim = u ? u->dim : "";
  std::vector<double> factors{u ? u->factor : 1.0};
  if (u && u->alt_factor > 0) factors.push_back(u->alt_factor);
  for (const auto& v : variants(k))
    for (double f : factors)
      if (v.dim == dim && std::abs(v.value / f - c.value) <= tolerance(c)) return true;
  return false;
}

}  // namespace

std::vector<Claim> extract_claims(std::string_view text) {
  std::vector<Claim> out;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    if (i > 0 && (is_word_char(text[i - 1]) || text[i - 1] == '.')) {  // L2, sm_86, v1.2
      i = skip_token(text, i);
      continue;
    }
    size_t next = i + 1;
    if (auto c = claim_at(text, i, next)) out.push_back(std::move(*c));
    i = std::max(next, i + 1);
  }
  return out;
}

std::optional<std::string> support_for(const Claim& c, const std::vector<KnownValue>& known) {
  for (const auto& k : known)
    if (matches(c, k)) return k.source;
  return std::nullopt;
}

std::vector<KnownValue> known_values(const analysis::KernelDiagnosis& d, const model::Kernel* k) {
  std::vector<KnownValue> out;
  auto add_evidence = [&](const std::vector<analysis::Evidence>& ev) {
    for (const auto& e : ev) out.push_back({e.value, e.unit, e.metric});
  };
  if (d.duration_ns) out.push_back({*d.duration_ns, "nsecond", "gpu__time_duration.sum"});
  add_evidence(d.bottleneck.evidence);
  out.push_back({d.bottleneck.confidence, "", "bottleneck.confidence"});
  for (const auto& f : d.findings) {
    add_evidence(f.evidence);
    if (f.estimated_speedup) out.push_back({*f.estimated_speedup, "x", f.id + ".estimated_speedup"});
  }
  add_evidence(d.derived);
  const std::pair<const char*, const model::Dim3*> dims[] = {{"grid", &d.grid}, {"block", &d.block}};
  for (const auto& [name, dim] : dims) {
    for (auto [axis, v] : {std::pair{"x", dim->x}, {"y", dim->y}, {"z", dim->z}})
      out.push_back({static_cast<double>(v), "", fmt::format("launch:{}.{}", name, axis)});
    out.push_back({static_cast<double>(dim->product()), "", fmt::format("launch:{}.size", name)});
  }
  out.push_back({static_cast<double>(d.grid.product() * d.block.product()), "", "launch:threads"});
  if (auto cc = parse_number(d.compute_capability)) out.push_back({*cc, "", "device.compute_capability"});
  if (!k) return out;
  for (const auto& m : k->metrics)
    if (auto v = m.value.as_number()) out.push_back({*v, m.unit.empty() ? model::unit_of(m.name) : m.unit, m.name});
  return out;
}

std::vector<std::string> arch_violations(std::string_view text, const analysis::DeviceInfo& device) {
  return analysis::feature_violations(text, analysis::DeviceFeatures(device.name, device.compute_capability),
                                      {.allow_negated = true});
}

std::vector<std::string> bottleneck_contradictions(std::string_view text, const analysis::Bottleneck& b) {
  static const Pattern bound =
      Pattern::compile(R"(\b(memory|compute|latency|launch)[- ]?(bound|limited)\b)", {.case_insensitive = true})
          .value();
  std::vector<std::string> out;
  std::string_view s = text;
  std::string engine(analysis::class_name(b.cls));
  size_t from = 0;
  // (A while loop: g++ 12 ends a for-condition's variable before the step.)
  while (auto it = bound.find(s, from)) {
    from = it->pos + std::max<size_t>(it->len, 1);
    std::string said = to_lower(it->groups[1]);
    std::string before = to_lower(s.substr(it->pos >= 16 ? it->pos - 16 : 0, std::min<size_t>(16, it->pos)));
    bool denied = before.find("not ") != std::string::npos || before.find("n't ") != std::string::npos ||
                  before.find("than ") != std::string::npos || before.find("instead of") != std::string::npos;
    std::string msg = fmt::format(
        "the answer calls the kernel {}-bound; the engine classifies it as {}-bound "
        "(confidence {:.2f})",
        said, engine, b.confidence);
    if (!denied && said != engine && std::find(out.begin(), out.end(), msg) == out.end()) out.push_back(msg);
  }
  return out;
}

Verification verify_text(std::string_view text, const VerifyContext& ctx) {
  Verification v;
  v.claims = extract_claims(text);
  for (auto& c : v.claims) {
    c.supported_by = support_for(c, ctx.known);
    if (!c.supported_by) ++v.unsupported;
  }
  for (const auto& device : ctx.devices)
    for (auto& a : arch_violations(text, device))
      if (std::find(v.arch_violations.begin(), v.arch_violations.end(), a) == v.arch_violations.end())
        v.arch_violations.push_back(std::move(a));
  if (ctx.bottleneck) v.contradictions = bottleneck_contradictions(text, *ctx.bottleneck);
  return v;
}

std::string Verification::feedback() const {
  std::string out;
  for (const auto& c : claims)
    if (!c.supported_by)
      out += fmt::format("- The number \"{}\" is not in the report and not derived from it.\n", c.text);
  for (const auto& a : arch_violations) out += fmt::format("- Invalid advice for this device: {}.\n", a);
  for (const auto& c : contradictions) out += fmt::format("- Contradiction: {}.\n", c);
  return out;
}

std::string mark_unsupported(std::string_view text, const std::vector<Claim>& claims) {
  std::string out(text);
  std::vector<const Claim*> bad;
  for (const auto& c : claims)
    if (!c.supported_by) bad.push_back(&c);
  std::sort(bad.begin(), bad.end(), [](const Claim* a, const Claim* b) { return a->offset > b->offset; });
  for (const Claim* c : bad)
    if (out.compare(c->offset, c->text.size(), c->text) == 0)
      out.replace(c->offset, c->text.size(), "[unverified: " + c->text + "]");
  return out;
}

}  // namespace keet::llm
