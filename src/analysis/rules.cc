#include "analysis/rules.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

using json = nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key))
    for (const auto& s : j.at(key)) out.push_back(s.get<std::string>());
  return out;
}

Expr expr_of(const std::string& text, SymbolTable& symbols);

Advice advice_of(const json& a, SymbolTable& sym) {
  Advice out{a.at("text").get<std::string>(), a.value("min_cc", 0.0), a.value("max_cc", 99.0), std::nullopt};
  if (a.contains("when")) out.when = expr_of(a.at("when").get<std::string>(), sym);
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

Rule rule_of(const json& j, SymbolTable& sym) {
  Rule r;
  r.id = j.at("id");
  r.cls = class_from_name(j.at("class"));
  const json& title = j.at("title");
  for (const auto& t : title.is_array() ? title : json::array({title}))
    r.titles.emplace_back(t.get<std::string>(), sym);
  r.relieves = strings(j, "relieves");
  for (const auto& u : r.relieves)
    if (std::ranges::none_of(unit_defs(), [&](const UnitDef& d) { return d.id == u; }))
      throw std::invalid_argument(r.id + " relieves unknown unit '" + u + "'");
  r.when = expr_of(j.at("when"), sym);
  r.severity_by = expr_of(j.at("severity").at("by"), sym);
  r.high = j.at("severity").at("high");
  r.medium = j.at("severity").at("medium");
  r.evidence = strings(j, "evidence");
  r.evidence_ids = quantities_of(r.evidence);
  r.explanation = TextTemplate(j.at("explanation").get<std::string>(), sym);
  r.explanation_short = TextTemplate(j.value("explanation_short", ""), sym);
  r.speedup = exprs_of(strings(j, "speedup"), sym);
  r.speedup_doc = j.value("speedup_doc", "");
  r.dram_cap = j.value("dram_cap", false);
  for (const auto& c : j.value("caps", json::array()))
    r.caps.push_back({expr_of(c.at("formula").get<std::string>(), sym), c.at("what").get<std::string>()});
  for (const auto& a : j.at("advice")) r.advice.push_back(advice_of(a, sym));
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

StallRule stall_of(const std::string& reason, const json& j, SymbolTable& sym) {
  StallRule s{reason, class_from_name(j.at("class")), j.at("what"), {}, j.value("source_metric", "")};
  for (const auto& a : j.at("advice")) s.advice.push_back(advice_of_text(a.get<std::string>()));
  s.stall = sym.intern("stall_" + reason);
  s.share = sym.intern("stall_share_" + reason);
  s.ncu_rule = "CPIStall" + camel(reason);
  s.ncu_warn = sym.intern("ncu_warn_" + s.ncu_rule);
  s.no_gain = j.value("no_gain", false);
  return s;
}

Classify classify_of(const json& j) {
  Classify c;
  c.launch_max_duration_ns = j.at("launch_max_duration_ns");
  c.launch_max_sol = j.at("launch_max_sol");
  c.launch_short_duration_ns = j.value("launch_short_duration_ns", c.launch_short_duration_ns);
  c.busy_sol = j.at("busy_sol");
  c.small_grid_busy_sol = j.value("small_grid_busy_sol", c.busy_sol);
  for (const auto& [cls, ids] : j.at("fallback").items())
    for (const auto& id : ids) c.fallback[class_from_name(cls)].push_back(id.get<std::string>());
  return c;
}

// Every name rule data uses must be something a kernel can have: a catalogue
// quantity, an engine context value or word, or an ncu rule input. A misspelt
// name would otherwise be a symbol that is never set, and its rule would
// silently never fire.
void check_names(const SymbolTable& sym) {
  auto first_other = quantity_count() + static_cast<size_t>(ContextVar::Count);
  for (SymbolId id = static_cast<SymbolId>(first_other); id < sym.size(); ++id) {
    const std::string& n = sym.name(id);
    if (n.starts_with("ncu_warn_") || n.starts_with("ncu_speedup_") || text_var(n)) continue;
    throw std::invalid_argument("rule data names '" + n + "', which is no quantity, context value or ncu rule input");
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

Result<RuleSet> parse_rules(std::string_view findings_json, std::string_view stalls_json) {
  try {
    RuleSet set;
    auto& sym = set.symbols;
    json f = json::parse(findings_json);
    for (const auto& r : f.at("rules")) set.rules.push_back(rule_of(r, sym));
    set.classify = classify_of(f.at("classify"));
    json s = json::parse(stalls_json);
    set.stall_min_share = s.at("min_share");
    set.stall_speedup = expr_of(s.at("speedup"), sym);
    set.stall_speedup_doc = s.value("speedup_doc", "");
    for (const auto& [reason, j] : s.at("reasons").items()) set.stalls.push_back(stall_of(reason, j, sym));
    set.ncu_warn_cpi_stall = sym.intern("ncu_warn_CPIStall");
    check_names(sym);
    set.index_ncu_symbols();
    return set;
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("rule data: ") + e.what());
  }
}

Result<const RuleSet*> rule_set() {
  static const Result<RuleSet> set = [] {
    auto f = embedded_file("rules/findings.json");
    auto s = embedded_file("rules/stalls.json");
    if (!f || !s) return Result<RuleSet>(fail(ExitCode::BadInput, "rule data is missing from the build"));
    return parse_rules(*f, *s);
  }();
  if (!set) return std::unexpected(set.error());
  return &*set;
}

}  // namespace keet::analysis
