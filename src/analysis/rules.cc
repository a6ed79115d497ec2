#include "analysis/rules.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "analysis/gpu_features.h"
#include "util/data_value.h"

namespace keet::analysis {
namespace {

using Data = DataValue;

std::vector<std::string> strings(Data j, const char* key) {
  std::vector<std::string> out;
  for (auto s : j.member(key)) out.push_back(s.str());
  return out;
}

Expr expr_of(const std::string& text, SymbolTable& symbols);

Advice advice_of(Data a, SymbolTable& sym) {
  Advice out{a.at("text").str(), a.value("min_cc", 0.0), a.value("max_cc", 99.0), std::nullopt};
  if (a.contains("when")) out.when = expr_of(a.at("when").str(), sym);
  return out;
}

// Stall advice is written compactly as "text|min_cc".
Advice advice_of_text(const std::string& s) {
  auto bar = s.rfind('|');
  if (bar == std::string::npos) return {s, 0, 99};
  return {s.substr(0, bar), std::stod(s.substr(bar + 1)), 99, std::nullopt};
}

// Parsed once and bound to the rule set's symbols; a syntax error throws, and
// parse_rules turns it into an Error.
Expr expr_of(const std::string& text, SymbolTable& symbols) {
  auto e = Expr::parse(text);
  if (!e) throw std::invalid_argument(e.error().message);
  e->bind([&](const std::string& name) { return symbols.intern(name); });
  return std::move(*e);
}

std::vector<Expr> exprs_of(const std::vector<std::string>& texts, SymbolTable& symbols) {
  std::vector<Expr> out;
  for (const auto& t : texts) out.push_back(expr_of(t, symbols));
  return out;
}

std::vector<QuantityId> quantities_of(const std::vector<std::string>& names) {
  std::vector<QuantityId> out;
  for (const auto& n : names)
    if (auto id = quantity_id(n)) out.push_back(*id);  // other names have no evidence to give
  return out;
}

// A string, or {"when": expression, "text": template}.
TextVariant variant_of(Data v, SymbolTable& sym) {
  if (v.is_string()) return {std::nullopt, TextTemplate(v.str(), sym)};
  TextVariant out{std::nullopt, TextTemplate(v.at("text").str(), sym)};
  if (v.contains("when")) out.when = expr_of(v.at("when").str(), sym);
  return out;
}

// One text or a list of variants.
std::vector<TextVariant> variants_of(Data v, SymbolTable& sym) {
  std::vector<TextVariant> out;
  if (v.is_array())
    for (auto t : v) out.push_back(variant_of(t, sym));
  else
    out.push_back(variant_of(v, sym));
  return out;
}

Rule rule_of(Data j, SymbolTable& sym) {
  Rule r;
  r.id = j.at("id").str();
  r.cls = class_from_name(j.at("class").str());
  r.titles = variants_of(j.at("title"), sym);
  r.relieves = strings(j, "relieves");
  for (const auto& u : r.relieves)
    if (std::ranges::none_of(unit_defs(), [&](const UnitDef& d) { return d.id == u; }))
      throw std::invalid_argument(r.id + " relieves unknown unit '" + u + "'");
  r.when = expr_of(j.at("when").str(), sym);
  r.severity_by = expr_of(j.at("severity").at("by").str(), sym);
  r.high = j.at("severity").at("high").number();
  r.medium = j.at("severity").at("medium").number();
  r.evidence = strings(j, "evidence");
  r.evidence_ids = quantities_of(r.evidence);
  r.explanations = variants_of(j.at("explanation"), sym);
  r.explanation_short = TextTemplate(j.value("explanation_short", ""), sym);
  r.speedup = exprs_of(strings(j, "speedup"), sym);
  r.speedup_doc = j.value("speedup_doc", "");
  r.dram_cap = j.value("dram_cap", false);
  for (auto c : j.member("caps")) r.caps.push_back({expr_of(c.at("formula").str(), sym), c.at("what").str()});
  for (auto a : j.at("advice")) r.advice.push_back(advice_of(a, sym));
  r.source_metrics = strings(j, "source_metrics");
  r.references = strings(j, "references");
  r.ncu_rules = strings(j, "ncu_rules");
  for (const auto& id : r.ncu_rules) r.ncu_warn.push_back(sym.intern("ncu_warn_" + id));
  return r;
}

// "long_scoreboard" -> "LongScoreboard", as newer ncu names its CPIStall rules.
std::string camel(const std::string& reason) {
  std::string out;
  bool up = true;
  for (char c : reason) {
    if (c == '_')
      up = true;
    else
      out += up ? static_cast<char>(std::toupper(c)) : c, up = false;
  }
  return out == "NoInstruction" ? "NoInstructions" : out;
}

StallRule stall_of(const std::string& reason, Data j, SymbolTable& sym) {
  StallRule s{reason, class_from_name(j.at("class").str()), j.at("what").str(), {}, {}, j.value("source_metric", "")};
  for (auto a : j.at("advice")) s.advice.push_back(advice_of_text(a.str()));
  s.stall = sym.intern("stall_" + reason);
  s.share = sym.intern("stall_share_" + reason);
  s.ncu_rule = "CPIStall" + camel(reason);
  s.ncu_warn = sym.intern("ncu_warn_" + s.ncu_rule);
  s.no_gain = j.value("no_gain", false);
  s.relieves = strings(j, "relieves");
  for (const auto& u : s.relieves)
    if (std::ranges::none_of(unit_defs(), [&](const UnitDef& d) { return d.id == u; }))
      throw std::invalid_argument("stall " + reason + " relieves unknown unit '" + u + "'");
  return s;
}

Classify classify_of(Data j) {
  Classify c;
  c.launch_max_duration_ns = j.at("launch_max_duration_ns").number();
  c.launch_max_sol = j.at("launch_max_sol").number();
  c.launch_short_duration_ns = j.value("launch_short_duration_ns", c.launch_short_duration_ns);
  c.busy_sol = j.at("busy_sol").number();
  c.small_grid_busy_sol = j.value("small_grid_busy_sol", c.busy_sol);
  c.saturated_sol = j.value("saturated_sol", c.busy_sol);
  c.few_warps_occupancy_pct = j.value("few_warps_occupancy_pct", c.few_warps_occupancy_pct);
  c.few_warps_eligible = j.value("few_warps_eligible", c.few_warps_eligible);
  c.few_warps_issue_pct = j.value("few_warps_issue_pct", c.few_warps_issue_pct);
  for (auto [cls, ids] : j.at("fallback").items())
    for (auto id : ids) c.fallback[class_from_name(std::string(cls))].push_back(id.str());
  return c;
}

Estimates estimates_of(Data j) {
  Estimates e;
  if (!j.is_object()) return e;
  e.launch_floor_ns = j.value("launch_floor_ns", e.launch_floor_ns);
  e.launch_floor_doc = j.value("launch_floor_doc", "");
  Data sev = j.member("severity");
  if (sev.is_object()) {
    e.high_min_speedup = sev.at("high").value("min_speedup", e.high_min_speedup);
    e.high_min_share_pct = sev.at("high").value("min_share_pct", e.high_min_share_pct);
    e.medium_min_speedup = sev.at("medium").value("min_speedup", e.medium_min_speedup);
    e.medium_min_share_pct = sev.at("medium").value("min_share_pct", e.medium_min_share_pct);
  }
  e.stall_min_samples = j.value("stall_min_samples", e.stall_min_samples);
  e.stall_min_samples_doc = j.value("stall_min_samples_doc", "");
  e.listed_min_speedup = j.value("listed_min_speedup", e.listed_min_speedup);
  return e;
}

// Every name rule data uses must be something a kernel can have: a catalogue
// quantity, an engine context value or word, an ncu rule input, or
// has_<feature> of data/arch/features.json. A misspelt name would otherwise be
// a symbol that is never set, and its rule would silently never fire.
void check_names(const SymbolTable& sym, std::vector<std::pair<std::string, SymbolId>>& features) {
  auto first_other = quantity_count() + static_cast<size_t>(ContextVar::Count);
  auto keys = feature_keys();
  for (SymbolId id = static_cast<SymbolId>(first_other); id < sym.size(); ++id) {
    const std::string& n = sym.name(id);
    if (n.starts_with("ncu_warn_") || n.starts_with("ncu_speedup_") || text_var(n)) continue;
    if (n.starts_with("has_") && std::ranges::find(keys, n.substr(4)) != keys.end()) {
      features.emplace_back(n.substr(4), id);
      continue;
    }
    throw std::invalid_argument("rule data names '" + n +
                                "', which is no quantity, context value, ncu rule input "
                                "or has_<feature>");
  }
}

}  // namespace

BottleneckClass class_from_name(const std::string& s) {
  if (s == "memory") return BottleneckClass::Memory;
  if (s == "compute") return BottleneckClass::Compute;
  if (s == "launch") return BottleneckClass::Launch;
  if (s == "latency") return BottleneckClass::Latency;
  if (s == "unknown") return BottleneckClass::Unknown;
  throw std::invalid_argument("unknown bottleneck class '" + s + "'");
}

const Rule* RuleSet::find(std::string_view id) const {
  for (const auto& r : rules)
    if (r.id == id) return &r;
  return nullptr;
}

// Every ncu rule some name refers to, so a kernel's ncu results are matched
// to symbols without building names.
void RuleSet::index_ncu_symbols() {
  constexpr std::string_view warn = "ncu_warn_", speedup = "ncu_speedup_";
  for (SymbolId id = 0; id < symbols.size(); ++id) {
    std::string_view name = symbols.name(id);
    if (name.starts_with(warn)) ncu_[std::string(name.substr(warn.size()))].warn = id;
    if (name.starts_with(speedup)) ncu_[std::string(name.substr(speedup.size()))].speedup = id;
  }
}

const NcuSymbols* RuleSet::ncu(std::string_view rule_id) const {
  auto it = ncu_.find(rule_id);
  return it == ncu_.end() ? nullptr : &it->second;
}

RuleSet rules_from(Data f, Data s) {
  RuleSet set;
  auto& sym = set.symbols;
  for (auto r : f.at("rules")) set.rules.push_back(rule_of(r, sym));
  set.classify = classify_of(f.at("classify"));
  set.estimates = estimates_of(f.member("estimates"));
  set.stall_min_share = s.at("min_share").number();
  set.stall_speedup = expr_of(s.at("speedup").str(), sym);
  set.stall_speedup_doc = s.value("speedup_doc", "");
  for (auto [reason, j] : s.at("reasons").items()) set.stalls.push_back(stall_of(std::string(reason), j, sym));
  set.ncu_warn_cpi_stall = sym.intern("ncu_warn_CPIStall");
  check_names(sym, set.feature_symbols);
  set.index_ncu_symbols();
  return set;
}

namespace {
// A malformed rule file throws from the parser or the accessors: one error.
template <class Load>
Result<RuleSet> checked(Load&& load) {
  try {
    return load();
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("rule data: ") + e.what());
  }
}
}  // namespace

Result<RuleSet> parse_rules(std::string_view findings_json, std::string_view stalls_json) {
  return checked([&] {
    auto f = parse_data(findings_json);
    auto s = parse_data(stalls_json);
    return rules_from(f->root(), s->root());
  });
}

Result<const RuleSet*> rule_set() {
  // Never destroyed (as the catalogue): nothing to free at exit.
  static const Result<RuleSet>& set = *new Result<RuleSet>([] {
    auto f = compiled_data("rules/findings.json");
    auto s = compiled_data("rules/stalls.json");
    if (!f || !s) return Result<RuleSet>(fail(ExitCode::BadInput, "rule data is missing from the build"));
    return checked([&] { return rules_from(*f, *s); });
  }());
  if (!set) return std::unexpected(set.error());
  return &*set;
}

}  // namespace keet::analysis
