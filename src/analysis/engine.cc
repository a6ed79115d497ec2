// The expert engine: classify the bottleneck, evaluate the rule data, and
// assemble findings with evidence, advice, estimated speedup and source lines.
#include "analysis/engine.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analysis/derived.h"
#include "analysis/expr.h"
#include "analysis/gpu_features.h"
#include "analysis/hotspots.h"
#include "analysis/libraries.h"
#include "analysis/ncu_coverage.h"
#include "analysis/occupancy.h"
#include "analysis/rules.h"
#include "analysis/sass.h"
#include "analysis/symbols.h"
#include "model/units.h"
#include "util/data_value.h"

namespace keet::analysis {
namespace {

// Everything a rule expression or text template may name for one kernel: a
// flat array by symbol id (the kernel's quantities, then the engine's context
// values and the ncu rule results), filled once per kernel.
class Scope {
 public:
  Scope(const RuleSet& set, const Facts& facts) : facts_(facts), values_(set.symbols.initial_values()) {
    std::copy(facts.values().begin(), facts.values().end(), values_.begin());  // a quantity's symbol is its id
  }
  void set(SymbolId id, double v) { values_[id] = v; }
  void set(ContextVar var, double v) { set(SymbolTable::of(var), v); }
  void set_text(TextVar var, std::string v) { words_[static_cast<size_t>(var)] = std::move(v); }
  std::optional<double> get(SymbolId id) const { return values_[id]; }
  std::optional<double> get(ContextVar var) const { return get(SymbolTable::of(var)); }
  std::optional<double> eval(const Expr& e) const { return e.eval(values_); }
  std::string render(const TextTemplate& t) const { return t.render(values_, words_); }
  std::optional<std::string> render_complete(const TextTemplate& t) const { return t.render_complete(values_, words_); }
  const Facts& facts() const { return facts_; }

 private:
  const Facts& facts_;
  std::vector<std::optional<double>> values_;
  TextValues words_;
};

// Quantities the engine reads itself, by name, resolved once (in function
// statics). A misspelt name is a bug in this file that every engine test hits
// on its first kernel, not something input can cause.
QuantityId quantity(std::string_view name) {
  auto id = quantity_id(name);
  if (!id) throw std::logic_error("the engine names an unknown quantity: " + std::string(name));
  return *id;
}

// ncu's own guided-analysis results become inputs: ncu_warn_<Rule> and
// ncu_speedup_<Rule> (the largest estimate ncu gave, in percent). Rules no
// rule data reads are skipped: nothing could see them.
void add_ncu_rules(const model::Kernel& k, const RuleSet& set, Scope& s) {
  for (const auto& r : k.rules) {
    bool warned = false;
    std::optional<double> best;
    for (const auto& m : r.messages) {
      // An error (3) is a data-quality note; some messages are not warnings of
      // the rule's kind (HighPipeUtilization's "all pipes under-utilized").
      if (!is_ncu_warning(m.type) || !ncu_meaning(r.id, m.text)->warn) continue;
      warned = true;
      if (m.estimated_speedup) best = std::max(best.value_or(0), *m.estimated_speedup);
    }
    const NcuSymbols* sym = warned ? set.ncu(r.id) : nullptr;
    if (!sym) continue;
    if (sym->warn) s.set(*sym->warn, 1);
    if (best && sym->speedup) s.set(*sym->speedup, *best);
  }
}

// The busiest SM pipe of those the report measures (every compute unit of the
// catalogue except issue slots and the generic SM number).
const UnitDef* busiest_pipe(const Facts& f) {
  std::optional<double> best;
  const UnitDef* busiest = nullptr;
  for (const auto& u : unit_defs()) {
    if (u.kind != BottleneckClass::Compute || u.generic || u.id == "issue") continue;
    for (QuantityId q : u.quantities)
      if (auto v = f.get(q); v && (!best || *v > *best)) best = v, busiest = &u;
  }
  return busiest;
}

void add_pipe_max(const Facts& f, Scope& s) {
  const UnitDef* busiest = busiest_pipe(f);
  if (!busiest) return;
  s.set_text(TextVar::PipeMaxName, busiest->label);
  std::optional<double> best;
  for (QuantityId q : busiest->quantities)
    if (auto v = f.get(q); v && (!best || *v > *best)) best = v;
  if (best) s.set(ContextVar::PipeMaxPct, *best);
}

// has_<feature> for the rule data: what this kernel's chip can do (unknown
// when the report does not say which GPU ran it).
void add_features(const RuleSet& set, const DeviceFeatures& dev, Scope& s) {
  if (!dev.known()) return;
  for (const auto& [key, sym] : set.feature_symbols) s.set(sym, dev.has(key) ? 1 : 0);
}

void add_fp_unfused(const Facts& f, Scope& s) {
  static const QuantityId sp_flops = quantity("fp32_flops"), dp_flops = quantity("fp64_flops"),
                          sp_unfused = quantity("fp32_unfused_pct"), dp_unfused = quantity("fp64_unfused_pct");
  double sp = f.get(sp_flops).value_or(0), dp = f.get(dp_flops).value_or(0);
  if (auto v = f.get(dp > sp ? dp_unfused : sp_unfused)) {
    s.set(ContextVar::FpUnfusedPct, *v);
    s.set_text(TextVar::FpUnfusedKind, dp > sp ? "FP64" : "FP32");
  }
}

void add_occupancy_context(const Facts& f, Scope& s) {
  static const QuantityId limits[] = {quantity("limit_registers"), quantity("limit_shared_mem"),
                                      quantity("limit_warps"), quantity("limit_blocks")};
  static const QuantityId theoretical = quantity("theoretical_occupancy");
  std::optional<double> lim;
  for (QuantityId q : limits)
    if (auto v = f.get(q)) lim = std::min(lim.value_or(*v), *v);
  if (lim) s.set(ContextVar::OccupancyLimitMin, *lim);
  if (auto t = f.get(theoretical)) s.set(ContextVar::OccupancyLossPct, 100 - *t);
  // More resident warps are possible only when the grid supplies more CTAs per
  // SM than the resources allow; otherwise an occupancy limit never binds.
  static const QuantityId grid_per_sm = quantity("blocks_per_sm_grid"), limit = quantity("blocks_per_sm_limit"),
                          grid = quantity("grid_size"), sms = quantity("sm_count");
  static const QuantityId waves = quantity("waves");
  if (auto g = f.get(grid_per_sm), l = f.get(limit); g && l)
    s.set(ContextVar::OccupancyCanGrow, *g > *l);
  else if (auto w = f.get(waves))
    s.set(ContextVar::OccupancyCanGrow, *w > 1);  // more CTAs than fit at once
  if (auto g = f.get(grid), n = f.get(sms); g && n) s.set(ContextVar::SmallGrid, *g < *n);
  if (auto w = f.get(waves); w && *w < 0.5) s.set(ContextVar::SmallGrid, 1);
}

void add_context(const model::Kernel& k, const RuleSet& set, const Facts& f, const DeviceFeatures& dev, Scope& s) {
  static const QuantityId cc_major = quantity("cc_major"), cc_minor = quantity("cc_minor"),
                          issue_active = quantity("issue_active_pct"), duration = quantity("duration_ns"),
                          sm_fill = quantity("sm_fill_pct"), warp_eff = quantity("warp_efficiency_pct"),
                          uniform = quantity("branch_uniform_pct");
  add_ncu_rules(k, set, s);
  add_pipe_max(f, s);
  add_features(set, dev, s);
  s.set(ContextVar::LaunchFloorNs, set.estimates.launch_floor_ns);
  add_fp_unfused(f, s);
  add_occupancy_context(f, s);
  if (auto major = f.get(cc_major)) s.set(ContextVar::Cc, *major + f.get(cc_minor).value_or(0) / 10);
  if (auto ia = f.get(issue_active)) s.set(ContextVar::IssueIdlePct, 100 - *ia);
  if (auto d = f.get(duration)) {
    s.set(ContextVar::DurationUs, *d / 1000);
    s.set(ContextVar::TinyScore, std::clamp((10000 - *d) / 100, 0.0, 100.0));
  }
  if (auto fill = f.get(sm_fill)) s.set(ContextVar::SmIdlePct, 100 - *fill);
  auto eff = f.get(warp_eff), uni = f.get(uniform);
  if (eff || uni) s.set(ContextVar::DivergencePct, 100 - std::min(eff.value_or(100), uni.value_or(100)));
}

// --- Report health ------------------------------------------------------------

// Quantities whose absence the notes name (a check that could not run).
const std::vector<QuantityId>& key_quantities() {
  static const std::vector<QuantityId> key = {quantity("compute_sol"),        quantity("memory_sol"),
                                              quantity("achieved_occupancy"), quantity("issue_active_pct"),
                                              quantity("global_excess_pct"),  quantity("duration_ns")};
  return key;
}

void add_sections(const Facts& f, DataQuality& q) {
  for (const auto& sec : section_defs()) {
    bool present = std::ranges::any_of(sec.quantities, [&](QuantityId id) { return f.get(id).has_value(); });
    (present ? q.sections_present : q.sections_missing).push_back(sec.id);
    if (!present) q.collect.push_back(sec.option);
  }
}

// A capture that was interrupted or is broken: nothing measured in it can be trusted.
void add_launch_problems(const model::Report& r, const model::Kernel& k, const Facts& f, DataQuality& q) {
  static const QuantityId duration = quantity("duration_ns");
  // CSV and nvprof tables may not record geometry; a binary report always does.
  bool geometry_recorded = r.format == model::Format::NcuRep || !(k.grid == model::Dim3{} && k.block == model::Dim3{});
  if (geometry_recorded && k.grid.product() == 0)
    q.problems.push_back(fmt::format("grid ({}, {}, {}) launches no thread: the capture was interrupted or is broken",
                                     k.grid.x, k.grid.y, k.grid.z));
  if (auto d = f.get(duration); d && *d == 0) q.problems.push_back("duration is 0 ns: no time was measured");
  for (const auto& bad : f.invalid())
    if (is_duration_metric(bad.metric))
      q.problems.push_back("the kernel's duration is " + bad.why + ": no time was measured");
}

void add_ncu_errors(const model::Kernel& k, DataQuality& q) {
  for (const auto& r : k.rules)
    for (const auto& m : r.messages)
      if (m.type == 3) q.ncu_errors.push_back(r.id + ": " + m.text);
}

DataQuality assess(const model::Report& r, const model::Kernel& k, const Facts& f) {
  DataQuality q;
  add_sections(f, q);
  for (QuantityId m : f.missing())
    if (std::ranges::find(key_quantities(), m) != key_quantities().end()) q.missing.push_back(quantity_name(m));
  for (QuantityId m : f.below_floor()) q.below_floor.push_back(quantity_name(m));
  for (const auto& bad : f.invalid())
    q.invalid.push_back({bad.metric, std::isfinite(bad.value) ? std::optional(bad.value) : std::nullopt, bad.why});
  add_launch_problems(r, k, f, q);
  add_ncu_errors(k, q);
  q.stall_unit = f.stall_unit();
  q.stall_reasons = f.stall_reasons_present();
  for (const auto& r : q.stall_reasons) q.stall_values.push_back(f.get("stall_" + r).value_or(0));
  q.stall_shares = f.stall_shares_complete();
  return q;
}

// --- The limiter ----------------------------------------------------------------

// A grid with fewer blocks than SMs: each SM unit's utilisation over the
// elapsed cycles averages in the SMs that had nothing to do. The report's
// pct_of_peak_sustained_active form of the same counter says how busy the unit
// was on the SMs that ran.
void add_active_sm_loads(const Facts& f, Limiter& lim) {
  static const QuantityId grid = quantity("grid_size"), sms = quantity("sm_count");
  auto g = f.get(grid), n = f.get(sms);
  if (!g || !n || *g >= *n) return;
  constexpr std::string_view elapsed = ".pct_of_peak_sustained_elapsed";
  for (auto& u : lim.units) {
    const std::string& m = u.evidence.metric;
    if (!m.starts_with("sm") || !m.ends_with(elapsed)) continue;
    std::string active = m.substr(0, m.size() - elapsed.size()) + ".pct_of_peak_sustained_active";
    if (auto v = f.kernel().number(active); v && std::isfinite(*v) && *v >= u.pct) u.pct_on_active_sms = *v;
  }
}

// Every unit the report measures, busiest first. A generic speed-of-light
// number stands in only when no unit of its kind explains it (within 10 points):
// then the busy sub-unit is one this report does not break down.
Limiter find_limiter(const Facts& f) {
  Limiter lim;
  for (const auto& u : unit_defs()) {
    std::optional<double> best;
    QuantityId from = 0;
    for (QuantityId q : u.quantities)
      if (auto v = f.get(q); v && (!best || *v > *best)) best = v, from = q;
    if (best) lim.units.push_back({u.id, u.label, u.kind, *best, f.evidence(from)});
  }
  auto has = [&](std::string_view id) { return std::ranges::find(lim.units, id, &UnitLoad::id) != lim.units.end(); };
  lim.memory_measured = has("memory") || (has("dram") && (has("l1tex") || has("l2")));
  lim.compute_measured =
      std::ranges::any_of(lim.units, [](const UnitLoad& u) { return u.kind == BottleneckClass::Compute; });
  auto explained = [&](const UnitLoad& g) {
    return std::ranges::any_of(unit_defs(), [&](const UnitDef& d) {
      if (d.generic || d.kind != g.kind) return false;
      auto it = std::ranges::find(lim.units, d.id, &UnitLoad::id);
      return it != lim.units.end() && it->pct + 10 >= g.pct;
    });
  };
  std::erase_if(lim.units, [&](const UnitLoad& u) {
    auto d = std::ranges::find(unit_defs(), u.id, &UnitDef::id);
    return d->generic && explained(u);
  });
  std::stable_sort(lim.units.begin(), lim.units.end(),
                   [](const UnitLoad& a, const UnitLoad& b) { return a.pct > b.pct; });
  add_active_sm_loads(f, lim);
  return lim;
}

// --- Bottleneck class -------------------------------------------------------

std::string unit_text(const UnitLoad& u) { return fmt::format("{} at {:.1f}% of peak", u.label, u.pct); }

std::string next_text(const Limiter& lim) {
  return lim.next() ? fmt::format(" (next: {})", unit_text(*lim.next())) : "";
}

// The grid cannot fill the GPU: fewer CTAs than SMs (ncu's "Small Grid"), or
// less than half a wave (most of the GPU's resident CTA slots stay empty).
struct LaunchShape {
  std::optional<double> duration, grid, sms, waves;
  bool fewer_ctas_than_sms() const { return grid && sms && *grid < *sms; }
  bool small_grid() const { return fewer_ctas_than_sms() || (waves && *waves < 0.5); }
};

LaunchShape launch_shape(const Facts& f) {
  static const QuantityId duration = quantity("duration_ns"), grid = quantity("grid_size"), sms = quantity("sm_count"),
                          waves = quantity("waves");
  return {f.get(duration), f.get(grid), f.get(sms), f.get(waves)};
}

Bottleneck launch_class(const LaunchShape& l, const Limiter& lim, const Classify& c) {
  Bottleneck b;
  b.cls = BottleneckClass::Launch;
  double top = lim.binding() ? lim.binding()->pct : 0;
  b.confidence = 0.6 + 0.4 * std::clamp((c.busy_sol - top) / c.busy_sol, 0.0, 1.0);
  std::string why =
      l.fewer_ctas_than_sms() ? fmt::format("{:.0f} CTAs for {:.0f} SMs: the grid cannot fill the GPU", *l.grid, *l.sms)
      : l.small_grid() ? fmt::format("{:.2f} waves: the grid fills less than half of the GPU's CTA slots", *l.waves)
                       : fmt::format("only {:.2f} us of work", *l.duration / 1000);
  b.summary = "launch-bound: " + why;
  if (lim.binding()) b.summary += fmt::format("; busiest unit {}", unit_text(*lim.binding()));
  return b;
}

// Only when both sides of the GPU are measured can "nothing is near peak" be said.
bool both_sides_measured(const Limiter& lim) { return lim.memory_measured && lim.compute_measured; }

Bottleneck unknown_class(std::string why) {
  Bottleneck b;
  b.cls = BottleneckClass::Unknown;
  b.summary = "insufficient data: " + std::move(why);
  return b;
}

// Too few warps to keep a unit busy, as the report shows it: low achieved
// occupancy, and the schedulers short of work (few eligible warps, or issue
// slots mostly idle). Low occupancy alone is how register-heavy tiled kernels
// (cuBLAS's SGEMM) run, hiding latency with independent instructions; without
// the scheduler's numbers the unit's verdict stands.
std::optional<std::string> few_warps(const Facts& f, const Classify& c) {
  static const QuantityId occupancy = quantity("achieved_occupancy"), eligible = quantity("eligible_warps"),
                          issue = quantity("issue_active_pct");
  auto o = f.get(occupancy);
  if (!o || *o >= c.few_warps_occupancy_pct) return std::nullopt;
  if (auto e = f.get(eligible); e && *e < c.few_warps_eligible)
    return fmt::format("achieved occupancy is only {:.1f}% with {:.2f} warps per cycle eligible to issue", *o, *e);
  if (auto i = f.get(issue); i && *i < c.few_warps_issue_pct)
    return fmt::format("achieved occupancy is only {:.1f}% with issue slots busy {:.1f}% of cycles", *o, *i);
  return std::nullopt;
}

Bottleneck classify(const Facts& f, const Limiter& lim, const DataQuality& q, const Classify& c) {
  Bottleneck b;
  LaunchShape l = launch_shape(f);
  const UnitLoad* top = lim.binding();
  bool tiny = l.duration && *l.duration < c.launch_max_duration_ns;
  if (!q.problems.empty()) return unknown_class(q.problems.front());
  double busy = l.small_grid() ? c.small_grid_busy_sol : c.busy_sol;
  std::optional<std::string> few;
  if (top && top->pct >= busy && top->pct < c.saturated_sol && both_sides_measured(lim)) few = few_warps(f, c);
  if (few) {
    b.cls = BottleneckClass::Latency;
    b.confidence = 0.5 + 0.3 * (c.saturated_sol - top->pct) / std::max(c.saturated_sol - c.busy_sol, 1.0);
    b.summary = fmt::format(
        "latency-bound: the busiest unit, the {}, is below saturation ({:.0f}%) and {}: warps wait on latency, "
        "not on the unit",
        unit_text(*top), c.saturated_sol, *few);
  } else if (top && top->pct >= busy) {
    b.cls = top->kind;
    double margin = lim.next() ? (top->pct - lim.next()->pct) / std::max(top->pct, 1.0) : 1.0;
    b.confidence =
        0.55 + 0.25 * std::min(1.0, (top->pct - c.busy_sol) / (100 - c.busy_sol)) + 0.2 * std::min(1.0, margin * 2);
    b.summary = fmt::format("{}-bound: the {} binds{}", class_name(b.cls), unit_text(*top), next_text(lim));
  } else if (l.small_grid() || (tiny && (!top || top->pct < c.launch_max_sol)) ||
             (l.duration && *l.duration < c.launch_short_duration_ns)) {
    b = launch_class(l, lim, c);
  } else if (!top || !both_sides_measured(lim)) {
    return unknown_class(
        top ? std::string(lim.memory_measured ? "compute" : "memory") +
                  " throughput is not measured, so whether anything is near peak is not known (collect "
                  "--section SpeedOfLight, or --set full for the whole analysis)"
            : "the report holds no throughput metrics (collect them with --section SpeedOfLight, "
              "or --set full for the whole analysis)");
  } else {
    b.cls = BottleneckClass::Latency;
    b.confidence = 0.5 + 0.45 * (c.busy_sol - top->pct) / c.busy_sol;
    b.summary = fmt::format("latency-bound: no unit is near peak; the busiest is the {}", unit_text(*top));
  }
  static const QuantityId sol[] = {quantity("compute_sol"), quantity("memory_sol")};
  if (!f.get(sol[0]) || !f.get(sol[1])) b.confidence *= 0.75;  // no speed-of-light section: units only
  b.confidence = std::round(std::clamp(b.confidence, 0.0, 1.0) * 100) / 100;
  if (top) b.evidence.push_back(top->evidence);
  if (lim.next()) b.evidence.push_back(lim.next()->evidence);
  static const QuantityId more[] = {quantity("duration_ns"), quantity("issue_active_pct"), quantity("eligible_warps")};
  for (QuantityId id : more)
    if (f.get(id)) f.add_evidence(id, b.evidence);
  return b;
}

// --- Findings ---------------------------------------------------------------

Severity severity_of(double score, double high, double medium) {
  if (score >= high) return Severity::High;
  if (score >= medium) return Severity::Medium;
  return Severity::Low;
}

std::optional<double> first_speedup(const Scope& s, std::span<const Expr> formulas, std::string& used) {
  for (const auto& f : formulas)
    if (auto v = s.eval(f); v && std::isfinite(*v) && *v > 0) {
      used = f.text();
      return std::max(1.0, std::round(*v * 1000) / 1000);
    }
  return std::nullopt;
}

// A fix that moves no fewer DRAM bytes cannot make the kernel faster than
// DRAM allows: cap the estimate at dram_headroom when the report has it.
void apply_dram_cap(Finding& f, const Scope& s) {
  static const QuantityId headroom = quantity("dram_headroom");
  auto cap = s.get(SymbolTable::of(headroom));
  if (!cap || !f.estimated_speedup || *cap >= *f.estimated_speedup) return;
  f.estimated_speedup = std::max(1.0, std::round(*cap * 1000) / 1000);
  f.speedup_formula = "min(" + f.speedup_formula + ", dram_headroom = 90 / dram_pct)";
  f.explanation += fmt::format(" The estimate is capped at {:.2f}x by DRAM: at 90% of its peak it would bind.",
                               *f.estimated_speedup);
}

void apply_cap(Finding& f, std::optional<double> cap, const std::string& formula, const std::string& what) {
  if (!cap || !std::isfinite(*cap) || !f.estimated_speedup || *cap >= *f.estimated_speedup) return;
  f.estimated_speedup = std::max(1.0, std::round(*cap * 1000) / 1000);
  f.speedup_formula = "min(" + f.speedup_formula + ", " + formula + ")";
  f.explanation += fmt::format(" The estimate is capped at {:.2f}x by {}.", *f.estimated_speedup, what);
}

std::vector<std::string> advice_for(const std::vector<Advice>& all, const Scope& s, const DeviceFeatures& dev) {
  auto cc = s.get(ContextVar::Cc);
  std::vector<std::string> out;
  for (const auto& a : all) {
    // Never suggest a feature the device lacks; with an unknown device, keep
    // only advice that needs no particular architecture.
    bool ok = cc ? (*cc + 1e-9 >= a.min_cc && *cc <= a.max_cc + 1e-9) : a.min_cc == 0;
    // Advice that only fits some kernels (spill traffic, not data, fills DRAM).
    if (ok && a.when) ok = s.eval(*a.when).value_or(0) != 0;
    // The same check as LLM answers get: the chip must have what it names.
    if (ok) ok = advice_fits(a.text, dev);
    if (ok) out.push_back(a.text);
  }
  return out;
}

// The first variant whose `when` holds (and, for a title, whose values are
// all known); nullopt when none does.
std::optional<std::string> pick(const std::vector<TextVariant>& variants, const Scope& s, bool complete) {
  for (const auto& v : variants) {
    if (v.when && s.eval(*v.when).value_or(0) == 0) continue;
    if (!complete) return s.render(v.text);
    if (auto text = s.render_complete(v.text)) return text;
  }
  return std::nullopt;
}

void add_evidence(const Facts& f, std::span<const QuantityId> ids, std::vector<Evidence>& out) {
  for (QuantityId id : ids) f.add_evidence(id, out);
}

// The ncu rules (of `ids`, with their ncu_warn_<Rule> symbols) that warned.
std::vector<std::string> warned_ncu_rules(const Scope& s, std::span<const std::string> ids,
                                          std::span<const SymbolId> warn) {
  std::vector<std::string> out;
  for (size_t i = 0; i < ids.size(); ++i)
    if (s.get(warn[i]).value_or(0) != 0) out.push_back(ids[i]);
  return out;
}

Finding make_finding(const Rule& r, const Scope& s, const Context& ctx, const DeviceFeatures& dev) {
  Finding f;
  f.id = r.id;
  f.severity = severity_of(s.eval(r.severity_by).value_or(0), r.high, r.medium);
  f.title = pick(r.titles, s, true).value_or("");
  f.relieves = r.relieves;
  f.explanation = pick(r.explanations, s, false).value_or("");
  if (f.explanation.empty() && !r.explanation_short.empty()) f.explanation = s.render(r.explanation_short);
  add_evidence(s.facts(), r.evidence_ids, f.evidence);
  f.estimated_speedup = first_speedup(s, r.speedup, f.speedup_formula);
  if (r.dram_cap) apply_dram_cap(f, s);
  for (const auto& cap : r.caps) apply_cap(f, s.eval(cap.formula), cap.formula.text(), cap.what);
  if (f.speedup_formula.empty())
    f.speedup_formula = r.speedup_doc;
  else
    f.speedup_formula += " (" + r.speedup_doc + ")";
  f.advice = advice_for(r.advice, s, dev);
  f.source = hot_lines(ctx, r.source_metrics, 3);
  f.references = r.references;
  f.ncu_rules = warned_ncu_rules(s, r.ncu_rules, r.ncu_warn);
  return f;
}

// The top two reasons over the share threshold, plus any reason ncu itself
// warned about (CPIStall<Reason>, or the 2022-era CPIStall for the top one).
std::vector<const StallRule*> top_stalls(const Scope& s, const RuleSet& set) {
  std::vector<std::pair<double, const StallRule*>> ranked;
  for (const auto& st : set.stalls)
    if (auto share = s.get(st.share)) ranked.emplace_back(*share, &st);
  std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<const StallRule*> out;
  bool generic_warn = s.get(set.ncu_warn_cpi_stall).value_or(0) != 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    auto [share, st] = ranked[i];
    bool ncu = s.get(st->ncu_warn).value_or(0) != 0 || (i == 0 && generic_warn);
    if ((i < 2 && share >= set.stall_min_share) || (ncu && share > 0)) out.push_back(st);
  }
  return out;
}

Finding make_stall_finding(const StallRule& st, const RuleSet& set, Scope& s, const Context& ctx,
                           const DeviceFeatures& dev) {
  static const QuantityId issue_active = quantity("issue_active_pct");
  double share = *s.get(st.share);  // top_stalls chose it for its share, so share is a quantity
  s.set(ContextVar::Share, share);
  Finding out;
  out.id = "latency.stall." + st.reason;
  out.relieves = st.relieves;
  out.severity = severity_of(share, 50, 30);
  const std::string ncu_ids[] = {"CPIStall", st.ncu_rule};
  const SymbolId ncu_warn[] = {set.ncu_warn_cpi_stall, st.ncu_warn};
  out.ncu_rules = warned_ncu_rules(s, ncu_ids, ncu_warn);
  out.title = fmt::format("Warps mostly stall on {} ({:.1f}% of stalls)", st.reason, share);
  out.explanation = fmt::format(
      "{:.1f}% of the warps' stalls were '{}' (a share of every stall reason; ncu's own shares also count the "
      "issuing cycle, 'selected', so they read a little lower): {}.",
      share, st.reason, st.what);
  if (auto v = s.get(st.stall))
    out.explanation += fmt::format(" The report measures this reason at {:.3g} {}.", *v, s.facts().stall_unit());
  const QuantityId evidence[] = {st.share, issue_active};
  add_evidence(s.facts(), evidence, out.evidence);
  if (st.no_gain) {
    out.severity = Severity::Low;  // a sign of spare parallelism, "not a problem in itself"
    out.speedup_formula =
        "no estimate: warps waiting to be selected show the schedulers have spare eligible warps, "
        "which is a sign of enough parallelism, not a cost";
  } else {
    out.estimated_speedup = first_speedup(s, {&set.stall_speedup, 1}, out.speedup_formula);
    apply_dram_cap(out, s);
    out.speedup_formula += " (" + set.stall_speedup_doc + ")";
  }
  out.advice = advice_for(st.advice, s, dev);
  out.source = hot_lines(ctx, {st.source_metric}, 3);
  out.references = {"finding:latency.stall." + st.reason, "stall:" + st.reason};
  return out;
}

bool relieves(const Finding& f, const std::string& unit) {
  return std::ranges::find(f.relieves, unit) != f.relieves.end();
}

bool is_class_cause(const Finding& f, BottleneckClass cls) {
  switch (cls) {
    case BottleneckClass::Latency:
      return f.id.starts_with("latency.") || f.id.starts_with("occupancy.");
    case BottleneckClass::Launch:
      return f.id.starts_with("launch.");
    default:
      return false;
  }
}

// Findings that explain the limiter: for a memory or compute class, those
// that relieve the binding unit; for latency and launch, the class's causes.
bool explains_limiter(const Finding& f, const Bottleneck& b, const Limiter& lim) {
  if (b.cls == BottleneckClass::Memory || b.cls == BottleneckClass::Compute)
    return lim.binding() && relieves(f, lim.binding()->id);
  return is_class_cause(f, b.cls);
}

// The class and the findings must agree: when no finding explains the
// limiter, the binding unit's saturation finding (or the class's fallback)
// says what binds.
void ensure_consistent(std::vector<Finding>& fs, const Bottleneck& b, const Limiter& lim, const RuleSet& set,
                       const Scope& s, const Context& ctx, const DeviceFeatures& dev) {
  if (b.cls == BottleneckClass::Unknown) return;
  if (std::ranges::any_of(fs, [&](const Finding& f) { return explains_limiter(f, b, lim); })) return;
  std::vector<std::string> ids;
  if ((b.cls == BottleneckClass::Memory || b.cls == BottleneckClass::Compute) && lim.binding()) {
    auto d = std::ranges::find(unit_defs(), lim.binding()->id, &UnitDef::id);
    if (d != unit_defs().end() && !d->saturation_finding.empty()) ids.push_back(d->saturation_finding);
  }
  if (auto it = set.classify.fallback.find(b.cls); it != set.classify.fallback.end())
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  for (const auto& id : ids) {
    const Rule* r = set.find(id);
    if (!r || !s.eval(r->severity_by)) continue;
    Finding f = make_finding(*r, s, ctx, dev);
    if (!explains_limiter(f, b, lim)) continue;
    if (f.severity == Severity::High && s.eval(r->when).value_or(0) == 0) f.severity = Severity::Medium;
    fs.push_back(std::move(f));
    return;
  }
}

// --- Library kernels and computed launch advice ---------------------------------

// The user calls a library kernel but cannot edit it: advice is about the
// call, said once for the kernel rather than under every finding.
void apply_library_advice(const model::Kernel& k, KernelDiagnosis& d) {
  auto lib = library_kernel(k);
  if (!lib) return;
  d.library = lib->library;
  d.primitive = lib->primitive;
  d.library_advice = lib->advice;
  for (auto& f : d.findings) f.advice.clear();
}

// Which block sizes reach the best theoretical occupancy for this kernel's
// registers and shared memory on this GPU, from the occupancy calculator.
std::optional<std::string> block_size_advice(const model::Report& report, const model::Kernel& kernel) {
  auto occ = kernel_occupancy(report, kernel);
  if (!occ || !occ->device.known() || occ->input.block_size <= 0) return std::nullopt;
  std::vector<int> sizes;
  for (int b = 64; b <= occ->device.arch.max_threads_per_block; b *= 2) sizes.push_back(b);
  auto points = occupancy_by_block_size(occ->device.arch, occ->input, sizes);
  int best = 0;
  for (const auto& p : points) best = std::max(best, p.warps);
  if (best <= 0) return std::nullopt;
  std::vector<int> good;
  for (const auto& p : points)
    if (p.warps == best) good.push_back(p.x);
  int now = occ->result.active_warps;
  double max_warps = occ->device.arch.max_warps_per_sm;
  if (now >= best)
    return fmt::format(
        "The launch's {} threads per block already reach the best theoretical occupancy "
        "({:.0f}%) for {} registers per thread on this GPU.",
        occ->input.block_size, 100.0 * best / max_warps, occ->input.registers_per_thread);
  bool larger = std::ranges::all_of(good, [&](int b) { return b > occ->input.block_size; });
  bool smaller = std::ranges::all_of(good, [&](int b) { return b < occ->input.block_size; });
  return fmt::format(
      "With {} registers per thread and {} bytes of shared memory per block, block sizes of {} threads "
      "reach {:.0f}% theoretical occupancy on this GPU, against {:.0f}% at the launch's {}{}.",
      occ->input.registers_per_thread, occ->input.shared_mem_per_block, fmt::join(good, ", "), 100.0 * best / max_warps,
      100.0 * now / max_warps, occ->input.block_size,
      larger    ? ": use larger blocks"
      : smaller ? ": use smaller blocks"
                : "");
}

void add_block_size_advice(const model::Report& report, const model::Kernel& kernel, KernelDiagnosis& d) {
  if (!d.library.empty()) return;
  Finding* target = nullptr;
  for (auto& f : d.findings)
    if (f.id == "occupancy.block_size" || f.id == "occupancy.registers" || f.id == "occupancy.shared_memory")
      target = &f;
  if (!target) return;
  if (auto text = block_size_advice(report, kernel)) target->advice.insert(target->advice.begin(), *text);
}

// A stall estimate is a latency model: on a kernel a saturated unit binds,
// hiding latency helps only where the stall's fix takes work off that unit,
// and then only until the unit reaches 100% of its peak.
// Once a finding has no estimate, the caps it went through say nothing.
void drop_cap_sentences(std::string& text) {
  for (size_t at; (at = text.find(" The estimate is capped at ")) != std::string::npos;) {
    size_t end = text.find(". ", at + 1);
    text.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
  }
}

void cap_stall_estimate(Finding& f, const UnitLoad& bound) {
  if (!relieves(f, bound.id)) {
    f.speedup_formula =
        fmt::format("no gain while the {} binds ({}); was {}", bound.label, unit_text(bound), f.speedup_formula);
    drop_cap_sentences(f.explanation);
    f.explanation += fmt::format(
        " No gain is estimated: on a kernel the {} binds, warps waiting is the symptom of "
        "that limit, not a separate cause; waiting less does not make the {} faster.",
        unit_text(bound), bound.label);
    f.estimated_speedup.reset();
    f.severity = std::max(f.severity, Severity::Low);
    return;
  }
  double cap = std::floor(100 / std::max(bound.pct, 1.0) * 1000) / 1000;
  if (cap >= *f.estimated_speedup) return;
  f.estimated_speedup = std::max(1.0, cap);
  f.speedup_formula = fmt::format("min({}, 100 / bound_pct = 100 / {:.1f})", f.speedup_formula, bound.pct);
  f.explanation += fmt::format(" The estimate is capped at {:.2f}x: beyond that the {} would be at 100% of its peak.",
                               *f.estimated_speedup, bound.label);
}

// A cause of the binding unit can gain at most until the next-busiest unit
// binds (binding / next utilisation); a cause of another unit gains nothing
// while the binding unit stays saturated. Either way the text says so.
void apply_limiter_caps(std::vector<Finding>& fs, const Bottleneck& b, const Limiter& lim) {
  if (b.cls != BottleneckClass::Memory && b.cls != BottleneckClass::Compute) return;
  const UnitLoad* bound = lim.binding();
  const UnitLoad* next = lim.next();
  for (auto& f : fs) {
    // A finding about the binding unit shows the utilisation that binds.
    bool listed =
        std::ranges::any_of(f.evidence, [&](const Evidence& e) { return e.metric == bound->evidence.metric; });
    if (relieves(f, bound->id) && !listed) f.evidence.insert(f.evidence.begin(), bound->evidence);
    if (f.estimated_speedup && f.id.starts_with("latency.stall.")) {
      cap_stall_estimate(f, *bound);
      continue;
    }
    if (!f.estimated_speedup || f.relieves.empty()) continue;
    if (!relieves(f, bound->id)) {
      f.speedup_formula =
          fmt::format("no gain while the {} binds ({}); was {}", bound->label, unit_text(*bound), f.speedup_formula);
      drop_cap_sentences(f.explanation);
      f.explanation +=
          fmt::format(" No gain is estimated: this does not relieve the binding unit, the {}.", unit_text(*bound));
      f.estimated_speedup.reset();
      f.severity = std::max(f.severity, Severity::Low);
      continue;
    }
    if (!next || next->pct <= 0 || relieves(f, next->id)) continue;
    double cap = std::round(bound->pct / next->pct * 1000) / 1000;
    if (cap >= *f.estimated_speedup) continue;
    f.estimated_speedup = std::max(1.0, cap);
    f.speedup_formula =
        fmt::format("min({}, bound_pct / next_pct = {:.1f} / {:.1f})", f.speedup_formula, bound->pct, next->pct);
    f.explanation += fmt::format(" The estimate is capped at {:.2f}x: beyond that the {} would bind.",
                                 *f.estimated_speedup, unit_text(*next));
  }
}

// --- One voice, and gains that can happen -------------------------------------

// The unit a saturation finding is about: a finding that only says "this unit
// is busy" (the catalogue's saturation findings) names one unit.
std::optional<std::string> saturated_unit(const Finding& f, const Facts& facts, const Limiter& lim) {
  if (f.id == "compute.pipe_saturated") {
    const UnitDef* pipe = busiest_pipe(facts);
    return pipe ? std::optional(pipe->id) : std::nullopt;
  }
  if (f.id == "compute.issue_bound") return "issue";
  if (f.id == "memory.dram_bandwidth") return "dram";
  if (f.id == "memory.l1_l2_bandwidth")
    for (const auto& u : lim.units)  // busiest first
      if (u.id == "l1tex" || u.id == "l2" || u.id == "shared") return u.id;
  return std::nullopt;
}

bool carries(const std::string& unit, const std::string& other) {
  auto d = std::ranges::find(unit_defs(), unit, &UnitDef::id);
  return d != unit_defs().end() && std::ranges::find(d->carries, other) != d->carries.end();
}

// A saturation finding about a unit that carries the binding unit's work (the
// LSU pipe issuing the loads a binding L1/TEX cache serves) tells the verdict's
// story a second time, from the other side. It folds into the finding that
// explains the limiter: one sentence and its evidence, not a second voice.
void fold_restatements(std::vector<Finding>& fs, const Bottleneck& b, const Limiter& lim, const Facts& facts) {
  if ((b.cls != BottleneckClass::Memory && b.cls != BottleneckClass::Compute) || !lim.binding()) return;
  const UnitLoad& bound = *lim.binding();
  auto target = std::ranges::find_if(fs, [&](const Finding& f) { return explains_limiter(f, b, lim); });
  if (target == fs.end()) return;
  std::vector<bool> folded(fs.size(), false);
  for (size_t i = 0; i < fs.size(); ++i) {
    if (&fs[i] == &*target) continue;
    auto unit = saturated_unit(fs[i], facts, lim);
    if (!unit || *unit == bound.id || !carries(bound.id, *unit)) continue;
    auto load = std::ranges::find(lim.units, *unit, &UnitLoad::id);
    if (load == lim.units.end()) continue;
    target->explanation += fmt::format(
        " The {} is at {:.1f}% of peak too: it carries the same requests, so it is this "
        "limit seen from the {} side, not a second one.",
        load->label, load->pct, load->kind == BottleneckClass::Compute ? "instruction" : "memory");
    if (std::ranges::none_of(target->evidence, [&](const Evidence& e) { return e.metric == load->evidence.metric; }))
      target->evidence.push_back(load->evidence);
    folded[i] = true;
  }
  std::vector<Finding> kept;
  for (size_t i = 0; i < fs.size(); ++i)
    if (!folded[i]) kept.push_back(std::move(fs[i]));
  fs = std::move(kept);
}

// No kernel runs shorter than the launch floor, so no estimate may promise it.
void apply_launch_floor(std::vector<Finding>& fs, std::optional<double> duration, const Estimates& e) {
  if (!duration || *duration <= 0 || e.launch_floor_ns <= 0) return;
  double cap = std::max(1.0, std::floor(*duration / e.launch_floor_ns * 1000) / 1000);  // rounded down: never below
  for (auto& f : fs) {
    if (!f.estimated_speedup || *f.estimated_speedup <= cap) continue;
    f.estimated_speedup = cap;
    f.speedup_formula = fmt::format("min({}, duration / launch floor = {:.0f} ns / {:.0f} ns)", f.speedup_formula,
                                    *duration, e.launch_floor_ns);
    f.explanation += fmt::format(
        " The estimate is capped at {:.2f}x: no kernel runs in less than about {} on a GPU "
        "(an empty kernel's measured time), and this one takes {}.",
        cap, model::readable_duration(e.launch_floor_ns), model::readable_duration(*duration));
  }
}

// Launch-shape findings (a partial wave, a small grid, idle lanes) do not take
// work off any unit: the same work in less time raises every unit's
// utilisation, so none can gain beyond the busiest unit reaching its peak.
void apply_busiest_unit_cap(std::vector<Finding>& fs, const Limiter& lim) {
  const UnitLoad* top = lim.binding();
  if (!top || top->pct <= 0) return;
  double cap = std::max(1.0, std::floor(100 / top->pct * 1000) / 1000);
  for (auto& f : fs) {
    // More SMs bring more of every per-SM unit: a small grid is capped by its
    // own formula (the SMs' active time) and by DRAM, not by a per-SM unit.
    if (!f.estimated_speedup || !f.relieves.empty() || *f.estimated_speedup <= cap || f.id == "launch.small_grid")
      continue;
    f.estimated_speedup = cap;
    f.speedup_formula = fmt::format("min({}, 100 / busiest_pct = 100 / {:.1f})", f.speedup_formula, top->pct);
    f.explanation += fmt::format(
        " The estimate is capped at {:.2f}x by the busiest unit, the {}: the same work in less time would bring it to "
        "its peak.",
        cap, unit_text(*top));
  }
}

// The report itself may hold the experiment a small-grid estimate predicts:
// the same kernel launched with more blocks over the same number of threads.
// When that launch was not faster, more blocks do not help (each thread's own
// chain of work sets the time), and the estimate goes.
void weigh_other_launch_shapes(std::vector<Finding>& fs, const model::Kernel& k, std::optional<double> duration,
                               const std::vector<LaunchSummary>* configs) {
  auto f = std::ranges::find(fs, std::string("launch.small_grid"), &Finding::id);
  if (!configs || !duration || f == fs.end() || !f->estimated_speedup || *f->estimated_speedup <= 1) return;
  double ctas = static_cast<double>(k.grid.product()), threads = ctas * static_cast<double>(k.block.product());
  for (const auto& c : *configs) {
    double other_ctas = static_cast<double>(c.grid.product());
    double other_threads = other_ctas * static_cast<double>(c.block.product());
    if (c.display != k.display_name() || other_ctas <= ctas || c.timed == 0 || threads <= 0) continue;
    if (std::abs(other_threads - threads) > 0.1 * threads || c.median_ns < 0.9 * *duration) continue;
    f->speedup_formula = fmt::format("refuted by #{}: {:.0f} blocks over the same threads took {}; was {}", c.index,
                                     other_ctas, model::readable_duration(c.median_ns), f->speedup_formula);
    drop_cap_sentences(f->explanation);
    f->explanation += fmt::format(
        " This report refutes the gain: launch #{} runs the same kernel in {:.0f} blocks over the same {:.0f} threads "
        "and takes {} against {} here, so more blocks do not help; each thread's own chain of work sets the time.",
        c.index, other_ctas, threads, model::readable_duration(c.median_ns), model::readable_duration(*duration));
    f->estimated_speedup = 1.0;
    return;
  }
}

// Severity follows what the finding can gain and how much of the report's GPU
// time its kernel takes: a 1.00x estimate, or a kernel at 0.1% of the run, is
// never high.
void apply_severity_policy(std::vector<Finding>& fs, const Estimates& e, std::optional<double> time_share) {
  auto allowed = [](double v, double high, double medium) {
    return v >= high ? Severity::High : v >= medium ? Severity::Medium : Severity::Low;
  };
  for (auto& f : fs) {
    if (f.estimated_speedup)
      f.severity = std::max(f.severity, allowed(*f.estimated_speedup, e.high_min_speedup, e.medium_min_speedup));
    if (time_share)
      f.severity = std::max(f.severity, allowed(*time_share * 100, e.high_min_share_pct, e.medium_min_share_pct));
  }
}

// A gain on a kernel that is a sliver of the run is a gain of the kernel, not
// of the run: below 1% of the analysed GPU time each estimate says so.
void weigh_small_share(std::vector<Finding>& fs, std::optional<double> time_share) {
  constexpr double kSmallShare = 0.01;
  if (!time_share || *time_share >= kSmallShare) return;
  for (auto& f : fs) {
    if (!f.estimated_speedup || *f.estimated_speedup <= 1) continue;
    double run_gain = *time_share * (1 - 1 / *f.estimated_speedup) * 100;
    f.explanation += fmt::format(
        " This kernel is {:.1f}% of the analysed GPU time, so its {:.2f}x saves at most {:.2f}% of the run: look at "
        "the "
        "kernels that take the time first.",
        *time_share * 100, *f.estimated_speedup, run_gain);
  }
}

// ncu's own estimate for a warning, as a speedup: the largest "est. speedup"
// percent (of the kernel's time) among the rule's warning messages.
std::optional<double> ncu_estimate(const model::Kernel& k, std::string_view rule) {
  std::optional<double> best;
  for (const auto& r : k.rules) {
    if (r.id != rule) continue;
    for (const auto& m : r.messages)
      if (is_ncu_warning(m.type) && ncu_meaning(r.id, m.text)->warn && m.estimated_speedup &&
          *m.estimated_speedup > 0 && *m.estimated_speedup < 100)
        best = std::max(best.value_or(0), *m.estimated_speedup);
  }
  return best;
}

// A model's description up to its first sentence or clause break: the gist,
// where the whole formula is the JSON's speedup_formula.
std::string first_clause(std::string_view doc) {
  auto end = std::min({doc.find(". "), doc.find("; "), doc.size()});
  while (end > 0 && (doc[end - 1] == '.' || doc[end - 1] == ' ')) --end;
  return std::string(doc.substr(0, end));
}

// Where ncu's rule that agrees with a finding gave an estimate, KEET's differs
// from it only with the reason said: its own model of the gain.
void state_ncu_estimates(std::vector<Finding>& fs, const model::Kernel& k, const RuleSet& set) {
  constexpr double kApart = 0.10;  // estimates within 10% of each other say the same thing
  for (auto& f : fs) {
    if (!f.estimated_speedup) continue;
    for (const auto& rule : f.ncu_rules) {
      auto pct = ncu_estimate(k, rule);
      if (!pct) continue;
      double ncu = 1 / (1 - *pct / 100);
      if (std::abs(*f.estimated_speedup / ncu - 1) <= kApart) continue;
      const Rule* r = set.find(f.id);
      std::string model = r ? r->speedup_doc : f.id.starts_with("latency.stall.") ? set.stall_speedup_doc : "";
      f.explanation +=
          fmt::format(" ncu's {} rule estimates {:.1f}% of the time saved ({:.2f}x); KEET's {:.2f}x differs", rule,
                      *pct, ncu, *f.estimated_speedup);
      f.explanation += model.empty() ? "." : "; its model: " + first_clause(model) + ".";
      break;
    }
  }
}

// Every line of advice, whatever wrote it (rules, stall reasons, libraries,
// the occupancy calculator), passes the check LLM answers get.
void keep_advice_the_gpu_can_take(KernelDiagnosis& d, const DeviceFeatures& dev) {
  auto unfit = [&](const std::string& a) { return !advice_fits(a, dev); };
  for (auto& f : d.findings) std::erase_if(f.advice, unfit);
  std::erase_if(d.library_advice, unfit);
}

// Judged as the reader sees the estimate (two decimals): "1.01x" gains nothing.
bool gains_nothing(const Finding& f, const Estimates& e) {
  return f.estimated_speedup && std::round(*f.estimated_speedup * 100) / 100 <= e.listed_min_speedup + 1e-9;
}

// What matters most comes first, and the verdict and the first finding agree:
// the causes of the limiter that gain something (largest estimate first, then
// the one that states what binds, which has no estimate of its own); then
// every other finding by the time its fix can save (within one kernel, its
// estimate orders the time saved in the run as well); then findings without an
// estimate; last those whose own estimate gains nothing (left off the default
// page). When the limiter's own causes gain nothing, the first finding is
// another cause, and name_the_gain says so in the verdict's line.
void sort_findings(std::vector<Finding>& fs, const Bottleneck& b, const Limiter& lim, const Estimates& e) {
  auto tier = [&](const Finding& f) {
    if (gains_nothing(f, e)) return 4;
    bool own = explains_limiter(f, b, lim);
    if (own) return f.estimated_speedup ? 0 : 1;
    return f.estimated_speedup ? 2 : 3;
  };
  auto sev = [](const Finding& f) { return 3 - static_cast<int>(f.severity); };  // High=3 ... Info=0
  std::stable_sort(fs.begin(), fs.end(), [&](const Finding& x, const Finding& y) {
    int tx = tier(x), ty = tier(y);
    if (tx != ty) return tx < ty;
    double gx = x.estimated_speedup.value_or(1), gy = y.estimated_speedup.value_or(1);
    return gx != gy ? gx > gy : sev(x) > sev(y);
  });
  for (auto& f : fs) f.listed = !gains_nothing(f, e);
}

// Evidence rows as a reader compares them: what was measured and its value.
using EvidenceRow = std::pair<std::string, double>;
std::vector<EvidenceRow> evidence_rows(const Finding& f) {
  std::vector<EvidenceRow> out;
  for (const auto& e : f.evidence)
    if (std::isfinite(e.value)) out.emplace_back(e.metric, std::round(e.value * 1000) / 1000);
  return out;
}

// Two findings assert one fact when one's evidence lies inside the other's
// and its leading row is one of the other's two leading rows, or when a
// finding of at most two rows leads with the other's leading value (the SM's
// 73.66% is its FP64 pipe's 73.66%).
bool same_fact(const std::vector<EvidenceRow>& a, const std::vector<EvidenceRow>& b,
               const std::set<std::string, std::less<>>& unit_metrics) {
  const auto& small = a.size() <= b.size() ? a : b;
  const auto& big = a.size() <= b.size() ? b : a;
  if (small.empty()) return false;
  bool inside =
      std::ranges::all_of(small, [&](const EvidenceRow& r) { return std::ranges::find(big, r) != big.end(); });
  bool leads = small[0] == big[0] || (big.size() > 1 && small[0] == big[1]);
  // Two utilisations of one value are one unit seen twice (the SM's number is
  // its busiest pipe's); a utilisation and a share that happen to agree are not.
  bool utilisations = unit_metrics.contains(small[0].first) && unit_metrics.contains(big[0].first);
  bool same_lead = utilisations && small.size() <= 2 && std::abs(small[0].second) >= 10 &&
                   std::abs(small[0].second - big[0].second) < 0.005;
  return (inside && leads) || same_lead;
}

// The metrics any hardware unit's utilisation is read from in this report.
std::set<std::string, std::less<>> unit_metric_names(const Facts& f) {
  std::set<std::string, std::less<>> out;
  for (const auto& u : unit_defs())
    for (QuantityId q : u.quantities)
      if (f.get(q)) out.insert(f.evidence(q).metric);
  return out;
}

// One finding per fact: of two findings resting on the same evidence, the one
// with an estimate (or the first) keeps the fact; the other's agreeing ncu
// rules, units and evidence join it, and its title becomes one sentence.
void merge_same_facts(std::vector<Finding>& fs, const Facts& facts, const Bottleneck& b, const Limiter& lim) {
  const auto unit_metrics = unit_metric_names(facts);
  for (size_t i = 0; i < fs.size(); ++i)
    for (size_t j = i + 1; j < fs.size();) {
      if (!same_fact(evidence_rows(fs[i]), evidence_rows(fs[j]), unit_metrics)) {
        ++j;
        continue;
      }
      // The one with an estimate keeps the fact; between two without, the one
      // that explains the verdict's limiter.
      bool keep_j = fs[i].estimated_speedup.has_value() != fs[j].estimated_speedup.has_value()
                        ? fs[j].estimated_speedup.has_value()
                        : explains_limiter(fs[j], b, lim) && !explains_limiter(fs[i], b, lim);
      if (keep_j) std::swap(fs[i], fs[j]);
      Finding gone = std::move(fs[j]);
      fs.erase(fs.begin() + static_cast<std::ptrdiff_t>(j));
      Finding& kept = fs[i];
      kept.explanation +=
          fmt::format("{}The same measurement also shows: {}.", kept.explanation.empty() ? "" : " ", gone.title);
      kept.merged.push_back(gone.id);
      for (auto& id : gone.merged) kept.merged.push_back(std::move(id));
      for (auto& e : gone.evidence)
        if (std::ranges::none_of(kept.evidence, [&](const Evidence& k) { return k.metric == e.metric; }))
          kept.evidence.push_back(std::move(e));
      for (auto& r : gone.ncu_rules)
        if (std::ranges::find(kept.ncu_rules, r) == kept.ncu_rules.end()) kept.ncu_rules.push_back(std::move(r));
      for (auto& u : gone.relieves)
        if (!relieves(kept, u)) kept.relieves.push_back(std::move(u));
      kept.severity = std::min(kept.severity, gone.severity);  // High < Medium: the graver of the two
      j = i + 1;
    }
}

// The verdict and the first finding agree: a launch or latency verdict whose
// own causes have no gain to offer (gainless, or not estimated), while another
// finding carries one, says so in its one line, so the reader fixes what pays.
void name_the_gain(Bottleneck& b, const std::vector<Finding>& fs, const Limiter& lim) {
  if (b.cls != BottleneckClass::Launch && b.cls != BottleneckClass::Latency) return;
  auto pays = [](const Finding& f) { return f.listed && f.estimated_speedup.has_value(); };
  if (std::ranges::any_of(fs, [&](const Finding& f) { return explains_limiter(f, b, lim) && pays(f); })) return;
  auto other = std::ranges::find_if(fs, pays);  // sorted: the largest gain of the others
  if (other == fs.end()) return;
  b.summary += fmt::format("; fixing the {} gains little here, the gain is in: {} (est. {:.2f}x)",
                           b.cls == BottleneckClass::Launch ? "launch shape" : "latency causes", other->title,
                           *other->estimated_speedup);
}

void set_bound(Scope& s, const Bottleneck& b, const Limiter& lim) {
  s.set(ContextVar::BoundMemory, b.cls == BottleneckClass::Memory);
  s.set(ContextVar::BoundCompute, b.cls == BottleneckClass::Compute);
  s.set(ContextVar::BoundLatency, b.cls == BottleneckClass::Latency);
  s.set(ContextVar::BoundLaunch, b.cls == BottleneckClass::Launch);
  if (const UnitLoad* u = lim.binding()) {
    s.set(ContextVar::BoundPct, u->pct);
    s.set_text(TextVar::BoundName, u->label);
    s.set(ContextVar::BoundIsL1, u->id == "l1tex" || u->id == "shared");
  }
  if (const UnitLoad* u = lim.next()) {
    s.set(ContextVar::NextPct, u->pct);
    s.set_text(TextVar::NextName, u->label);
  }
}

// PC-sampled stall shares rest on a count of samples: below the minimum they
// are noise, and no finding is drawn from them.
bool enough_stall_samples(const Facts& f, const RuleSet& set) {
  static const QuantityId total = quantity("stall_total");
  if (!f.stall_sampled()) return true;
  return f.get(total).value_or(0) >= set.estimates.stall_min_samples;
}

std::vector<Finding> evaluate_rules(const RuleSet& set, Scope& s, const Context& ctx, const DeviceFeatures& dev) {
  std::vector<Finding> out;
  for (const auto& r : set.rules)
    if (s.eval(r.when).value_or(0) != 0) out.push_back(make_finding(r, s, ctx, dev));
  if (!enough_stall_samples(s.facts(), set)) return out;
  for (const auto* st : top_stalls(s, set)) out.push_back(make_stall_finding(*st, set, s, ctx, dev));
  return out;
}

void fill_identity(const model::Report& report, const model::Kernel& k, const Facts& f, KernelDiagnosis& d) {
  static const QuantityId duration = quantity("duration_ns"), cc_major = quantity("cc_major"),
                          cc_minor = quantity("cc_minor");
  d.index = k.index;
  d.display = k.display_name();
  d.mangled = k.mangled;
  d.grid = k.grid;
  d.block = k.block;
  d.duration_ns = f.get(duration);
  if (auto name = k.text("device__attribute_display_name")) d.device = *name;
  if (auto major = f.get(cc_major)) d.compute_capability = fmt::format("{}.{}", *major, f.get(cc_minor).value_or(0));
  if (!d.device.empty() && !d.compute_capability.empty()) return;
  // The kernel does not name its device: the report's session does.
  auto spec = device_spec(report, k);
  if (d.device.empty()) d.device = spec.name;
  if (d.compute_capability.empty() && spec.known()) d.compute_capability = spec.arch.cc.text();
}

void note_few_samples(const Facts& f, const RuleSet& set, KernelDiagnosis& d) {
  static const QuantityId total = quantity("stall_total");
  double n = f.get(total).value_or(0);
  d.notes.push_back(
      fmt::format("only {:.0f} PC sample{} of warp stalls, too few for a stall share (at least {:.0f}): "
                  "no stall finding is drawn",
                  n, n == 1 ? "" : "s", set.estimates.stall_min_samples));
}

// "not in this report ...: the SpeedOfLight section (GPU speed of light ...)":
// what a reader can collect, not the engine's quantity names.
std::string missing_note(const std::vector<std::string>& missing) {
  std::vector<std::string> sections, options, other;
  for (const auto& name : missing) {
    auto id = quantity_id(name);
    const std::string section = id ? quantity_section(*id) : "";
    auto def = std::ranges::find(section_defs(), section, &SectionDef::id);
    if (def == section_defs().end()) {
      other.push_back(id ? quantity_label(*id) : name);
      continue;
    }
    if (std::ranges::find(options, def->option) != options.end()) continue;
    sections.push_back(fmt::format("the {} section ({})", def->id, def->what));
    options.push_back(def->option);
  }
  std::string out = "not in this report (fewer checks ran, confidence lowered): ";
  for (size_t i = 0; i < sections.size(); ++i)
    out += (i == 0 ? "" : i + 1 == sections.size() ? " and " : ", ") + sections[i];
  if (!other.empty()) out += fmt::format("{}{}", sections.empty() ? "" : "; also ", fmt::join(other, ", "));
  if (!options.empty())
    out += fmt::format("; collect {} with {}", options.size() > 1 ? "them" : "it", fmt::join(options, " "));
  return out;
}

void note_quality(const DataQuality& q, KernelDiagnosis& d) {
  if (!q.missing.empty()) d.notes.push_back(missing_note(q.missing));
  if (!q.stall_reasons.empty() && !q.stall_shares)
    d.notes.push_back(fmt::format("only some warp stall reasons were collected ({}; {}): stall shares are not computed",
                                  fmt::join(q.stall_reasons, ", "), q.stall_unit));
  if (q.stall_reasons.empty()) d.notes.push_back("warp stall reasons were not collected (--section WarpStateStats)");
  for (const auto& bad : q.invalid) d.notes.push_back(fmt::format("ignored {}: the value is {}", bad.metric, bad.why));
  for (const auto& e : q.ncu_errors) d.notes.push_back("ncu could not run a rule: " + e);
}

// Once per kernel, not on every hot spot: why its SASS hot spots show no
// instruction (no disassembler found, no cubin...).
void note_missing_sass(const Context& ctx, KernelDiagnosis& d) {
  if (ctx.sass_missing().empty()) return;
  bool shown_bare = std::ranges::any_of(d.findings, [](const Finding& f) {
    return std::ranges::any_of(f.source, [](const SourceRef& s) { return s.is_sass() && s.sass.empty(); });
  });
  if (shown_bare) d.notes.push_back(sass_note(ctx.sass_missing()));
}

}  // namespace

KernelDiagnosis analyze_kernel(const model::Report& report, const model::Kernel& kernel, const AnalyzeOptions& opt) {
  KernelDiagnosis d;
  Facts facts(report, kernel);
  fill_identity(report, kernel, facts, d);
  auto set = rule_set();
  if (!set) {
    d.notes.push_back(set.error().message);
    return d;
  }
  d.data_quality = assess(report, kernel, facts);
  d.limiter = find_limiter(facts);
  d.bottleneck = classify(facts, d.limiter, d.data_quality, (*set)->classify);
  d.data_quality.sufficient = d.bottleneck.cls != BottleneckClass::Unknown;
  note_quality(d.data_quality, d);
  if (opt.derived) d.derived = facts.all_evidence();
  if (!d.data_quality.problems.empty()) return d;  // a broken capture supports no finding
  Scope scope(**set, facts);
  const DeviceFeatures dev = device_features(d.device, d.compute_capability);
  add_context(kernel, **set, facts, dev, scope);
  set_bound(scope, d.bottleneck, d.limiter);
  Context ctx{report, kernel, opt.sass};
  d.findings = evaluate_rules(**set, scope, ctx, dev);
  if (!enough_stall_samples(facts, **set)) note_few_samples(facts, **set, d);
  ensure_consistent(d.findings, d.bottleneck, d.limiter, **set, scope, ctx, dev);
  fold_restatements(d.findings, d.bottleneck, d.limiter, facts);
  apply_limiter_caps(d.findings, d.bottleneck, d.limiter);
  apply_busiest_unit_cap(d.findings, d.limiter);
  apply_launch_floor(d.findings, d.duration_ns, (*set)->estimates);
  weigh_other_launch_shapes(d.findings, kernel, d.duration_ns, opt.configurations);
  apply_library_advice(kernel, d);
  add_block_size_advice(report, kernel, d);
  keep_advice_the_gpu_can_take(d, dev);
  apply_severity_policy(d.findings, (*set)->estimates, opt.time_share);
  weigh_small_share(d.findings, opt.time_share);
  state_ncu_estimates(d.findings, kernel, **set);
  merge_same_facts(d.findings, facts, d.bottleneck, d.limiter);
  sort_findings(d.findings, d.bottleneck, d.limiter, (*set)->estimates);
  name_the_gain(d.bottleneck, d.findings, d.limiter);
  if (opt.top > 0 && d.findings.size() > static_cast<size_t>(opt.top)) d.findings.resize(opt.top);
  note_missing_sass(ctx, d);
  return d;
}

Diagnosis analyze(const model::Report& report, const std::vector<const model::Kernel*>& kernels,
                  const AnalyzeOptions& opt) {
  Diagnosis d;
  d.report_path = report.path;
  d.report_format = std::string(model::format_name(report.format));
  d.ncu_version = report.ncu_version();
  for (const auto* k : kernels) d.kernels.push_back(analyze_kernel(report, *k, opt));
  return d;
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::High:
      return "high";
    case Severity::Medium:
      return "medium";
    case Severity::Low:
      return "low";
    case Severity::Info:
      return "info";
  }
  return "info";
}

std::string_view class_name(BottleneckClass c) {
  switch (c) {
    case BottleneckClass::Memory:
      return "memory";
    case BottleneckClass::Compute:
      return "compute";
    case BottleneckClass::Latency:
      return "latency";
    case BottleneckClass::Launch:
      return "launch";
    case BottleneckClass::Unknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace keet::analysis
