// The expert engine: classify the bottleneck, evaluate the rule data, and
// assemble findings with evidence, advice, estimated speedup and source lines.
#include "analysis/engine.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/expr.h"
#include "analysis/hotspots.h"
#include "analysis/rules.h"
#include "analysis/symbols.h"

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
      if (m.type < 2) continue;
      warned = true;
      if (m.estimated_speedup) best = std::max(best.value_or(0), *m.estimated_speedup);
    }
    const NcuSymbols* sym = warned ? set.ncu(r.id) : nullptr;
    if (!sym) continue;
    if (sym->warn) s.set(*sym->warn, 1);
    if (best && sym->speedup) s.set(*sym->speedup, *best);
  }
}

struct Pipe {
  const char* quantity;
  const char* label;
};

void add_pipe_max(const Facts& f, Scope& s) {
  static const Pipe pipes[] = {{"pipe_fma_pct", "FMA"},         {"pipe_alu_pct", "ALU"},
                               {"pipe_fp64_pct", "FP64"},       {"pipe_tensor_pct", "tensor"},
                               {"pipe_lsu_pct", "load/store (LSU)"}, {"pipe_xu_pct", "XU (special function)"},
                               {"pipe_shared_pct", "shared (FP16/tensor)"}};
  static const auto ids = [] {
    std::vector<QuantityId> out;
    for (const auto& p : pipes) out.push_back(quantity(p.quantity));
    return out;
  }();
  std::optional<double> best;
  const char* label = nullptr;
  for (size_t i = 0; i < ids.size(); ++i)
    if (auto v = f.get(ids[i]); v && (!best || *v > *best)) {
      best = v;
      label = pipes[i].label;
    }
  if (label) s.set_text(TextVar::PipeMaxName, label);
  if (best) s.set(ContextVar::PipeMaxPct, *best);
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
}

void add_context(const model::Kernel& k, const RuleSet& set, const Facts& f, Scope& s) {
  static const QuantityId cc_major = quantity("cc_major"), cc_minor = quantity("cc_minor"),
                          issue_active = quantity("issue_active_pct"), duration = quantity("duration_ns"),
                          sm_fill = quantity("sm_fill_pct"), warp_eff = quantity("warp_efficiency_pct"),
                          uniform = quantity("branch_uniform_pct");
  add_ncu_rules(k, set, s);
  add_pipe_max(f, s);
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

// --- Bottleneck class -------------------------------------------------------

// The headline quantities of the class, in the order the evidence lists them.
struct ClassQuantities {
  QuantityId compute = quantity("compute_sol"), memory = quantity("memory_sol"), dram = quantity("dram_pct"),
             l1 = quantity("l1_pct"), l2 = quantity("l2_pct"), duration = quantity("duration_ns"),
             sm_fill = quantity("sm_fill_pct");
  QuantityId evidence[5] = {compute, memory, duration, quantity("issue_active_pct"), quantity("eligible_warps")};
};

Bottleneck classify(const Facts& f, const Classify& c, std::vector<std::string>& notes) {
  static const ClassQuantities q;
  auto compute = f.get(q.compute), memory = f.get(q.memory);
  if (!memory) memory = std::max({f.get(q.dram).value_or(-1), f.get(q.l1).value_or(-1), f.get(q.l2).value_or(-1)});
  if (memory && *memory < 0) memory.reset();
  Bottleneck b;
  double confidence_scale = 1.0;
  if (!compute || !memory) {
    notes.push_back("speed-of-light metrics (sm__throughput, gpu__compute_memory_throughput) are missing: the bottleneck class is a guess from what is present");
    confidence_scale = 0.5;
  }
  double C = compute.value_or(0), M = memory.value_or(0), top = std::max(C, M);
  double dur = f.get(q.duration).value_or(1e12);
  bool tiny = dur < c.launch_max_duration_ns || f.get(q.sm_fill).value_or(100) < 50;
  if (tiny && top < c.launch_max_sol) {
    b.cls = BottleneckClass::Launch;
    b.confidence = 0.6 + 0.4 * (c.launch_max_sol - top) / c.launch_max_sol;
    b.summary = fmt::format("launch-bound: {} with compute {:.1f}% and memory {:.1f}% of peak",
                            dur < c.launch_max_duration_ns ? fmt::format("only {:.2f} us of work", dur / 1000)
                                                           : "too few blocks to fill the GPU",
                            C, M);
  } else if (top >= c.busy_sol) {
    b.cls = M >= C ? BottleneckClass::Memory : BottleneckClass::Compute;
    double margin = std::fabs(M - C) / std::max(top, 1.0);
    b.confidence = 0.55 + 0.25 * std::min(1.0, (top - c.busy_sol) / (100 - c.busy_sol)) + 0.2 * std::min(1.0, margin * 2);
    b.summary = fmt::format("{}-bound: {} throughput at {:.1f}% of peak ({} at {:.1f}%)",
                            M >= C ? "memory" : "compute", M >= C ? "memory" : "compute", top,
                            M >= C ? "compute" : "memory", std::min(C, M));
  } else {
    b.cls = BottleneckClass::Latency;
    b.confidence = 0.5 + 0.45 * (c.busy_sol - top) / c.busy_sol;
    b.summary = fmt::format("latency-bound: neither compute ({:.1f}%) nor memory ({:.1f}%) is near peak", C, M);
  }
  b.confidence = std::round(std::clamp(b.confidence * confidence_scale, 0.0, 1.0) * 100) / 100;
  for (QuantityId id : q.evidence)
    if (f.get(id)) b.evidence.push_back(f.evidence(id));
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
}

std::vector<std::string> advice_for(const std::vector<Advice>& all, const Scope& s) {
  auto cc = s.get(ContextVar::Cc);
  std::vector<std::string> out;
  for (const auto& a : all) {
    // Never suggest a feature the device lacks; with an unknown device, keep
    // only advice that needs no particular architecture.
    bool ok = cc ? (*cc + 1e-9 >= a.min_cc && *cc <= a.max_cc + 1e-9) : a.min_cc == 0;
    if (ok) out.push_back(a.text);
  }
  return out;
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

Finding make_finding(const Rule& r, const Scope& s, const Context& ctx) {
  Finding f;
  f.id = r.id;
  f.severity = severity_of(s.eval(r.severity_by).value_or(0), r.high, r.medium);
  f.title = s.render(r.title);
  f.explanation = s.render(r.explanation);
  if (f.explanation.find("n/a") != std::string::npos && !r.explanation_short.empty())
    f.explanation = s.render(r.explanation_short);
  add_evidence(s.facts(), r.evidence_ids, f.evidence);
  f.estimated_speedup = first_speedup(s, r.speedup, f.speedup_formula);
  if (r.dram_cap) apply_dram_cap(f, s);
  if (f.speedup_formula.empty()) f.speedup_formula = r.speedup_doc;
  else f.speedup_formula += " (" + r.speedup_doc + ")";
  f.advice = advice_for(r.advice, s);
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

Finding make_stall_finding(const StallRule& st, const RuleSet& set, Scope& s, const Context& ctx) {
  static const QuantityId issue_active = quantity("issue_active_pct");
  double share = *s.get(st.share);  // top_stalls chose it for its share, so share is a quantity
  s.set(ContextVar::Share, share);
  Finding out;
  out.id = "latency.stall." + st.reason;
  out.severity = severity_of(share, 50, 30);
  const std::string ncu_ids[] = {"CPIStall", st.ncu_rule};
  const SymbolId ncu_warn[] = {set.ncu_warn_cpi_stall, st.ncu_warn};
  out.ncu_rules = warned_ncu_rules(s, ncu_ids, ncu_warn);
  out.title = fmt::format("Warps mostly stall on {} ({:.1f}% of stall cycles)", st.reason, share);
  out.explanation = fmt::format(
      "{:.1f}% of the cycles warps spent waiting were '{}' stalls: {}. Each issued instruction waited {:.2f} cycles "
      "on this reason on average.",
      share, st.reason, st.what, s.get(st.stall).value_or(0));
  const QuantityId evidence[] = {st.share, issue_active};
  add_evidence(s.facts(), evidence, out.evidence);
  out.estimated_speedup = first_speedup(s, {&set.stall_speedup, 1}, out.speedup_formula);
  apply_dram_cap(out, s);
  out.speedup_formula += " (" + set.stall_speedup_doc + ")";
  out.advice = advice_for(st.advice, s);
  out.source = hot_lines(ctx, {st.source_metric}, 3);
  out.references = {"finding:latency.stall." + st.reason, "stall:" + st.reason};
  return out;
}

bool is_stall_finding_of(const Finding& f, const StallRule& st) {
  constexpr std::string_view prefix = "latency.stall.";
  return f.id.size() == prefix.size() + st.reason.size() && f.id.starts_with(prefix) && f.id.ends_with(st.reason);
}

bool has_class_finding(const std::vector<Finding>& fs, BottleneckClass cls, const RuleSet& set) {
  for (const auto& f : fs) {
    if (const Rule* r = set.find(f.id); r && r->cls == cls) return true;
    for (const auto& st : set.stalls)
      if (st.cls == cls && is_stall_finding_of(f, st)) return true;
  }
  return false;
}

// The class and the findings must agree: when no rule of the bottleneck's
// class fired, the class's fallback rule explains the saturated unit anyway.
void ensure_consistent(std::vector<Finding>& fs, const Bottleneck& b, const RuleSet& set, const Scope& s,
                       const Context& ctx) {
  if (has_class_finding(fs, b.cls, set)) return;
  auto it = set.classify.fallback.find(b.cls);
  if (it == set.classify.fallback.end()) return;
  for (const auto& id : it->second) {
    const Rule* r = set.find(id);
    if (!r || !s.eval(r->severity_by)) continue;
    Finding f = make_finding(*r, s, ctx);
    if (f.severity == Severity::High) f.severity = Severity::Medium;  // its own threshold did not fire
    fs.push_back(std::move(f));
    return;
  }
}

double rank_key(const Finding& f) {
  double sev = 3 - static_cast<int>(f.severity);  // High=3 ... Info=0
  return f.estimated_speedup.value_or(1.0) + 0.01 * sev;
}

void sort_findings(std::vector<Finding>& fs) {
  std::stable_sort(fs.begin(), fs.end(), [](const Finding& a, const Finding& b) { return rank_key(a) > rank_key(b); });
}

void set_bound(Scope& s, BottleneckClass cls) {
  static const QuantityId issue_active = quantity("issue_active_pct");
  s.set(ContextVar::BoundMemory, cls == BottleneckClass::Memory);
  s.set(ContextVar::BoundCompute, cls == BottleneckClass::Compute);
  s.set(ContextVar::BoundLatency, cls == BottleneckClass::Latency);
  s.set(ContextVar::BoundLaunch, cls == BottleneckClass::Launch);
  double ia = s.get(SymbolTable::of(issue_active)).value_or(100);
  s.set(ContextVar::OccupancyMatters, cls == BottleneckClass::Latency || ia < 60);
}

std::vector<Finding> evaluate_rules(const RuleSet& set, Scope& s, const Context& ctx) {
  std::vector<Finding> out;
  for (const auto& r : set.rules)
    if (s.eval(r.when).value_or(0) != 0) out.push_back(make_finding(r, s, ctx));
  for (const auto* st : top_stalls(s, set)) out.push_back(make_stall_finding(*st, set, s, ctx));
  return out;
}

void fill_identity(const model::Kernel& k, KernelDiagnosis& d) {
  d.index = k.index;
  d.name = k.mangled.empty() ? k.display_name() : k.mangled;
  d.demangled = k.display_name();
  d.grid = k.grid;
  d.block = k.block;
  static const model::MetricName duration("gpu__time_duration.sum"), device("device__attribute_display_name"),
      cc_major("device__attribute_compute_capability_major"), cc_minor("device__attribute_compute_capability_minor");
  d.duration_ns = k.number(duration);
  const model::Metric* name = k.find(device);
  if (name && name->value.kind == model::Value::Kind::String) d.device.name = name->value.text;
  auto major = k.number(cc_major);
  auto minor = k.number(cc_minor);
  if (major) d.device.compute_capability = fmt::format("{}.{}", *major, minor.value_or(0));
}

void note_missing(const Facts& f, KernelDiagnosis& d) {
  static const std::set<QuantityId> key = {quantity("compute_sol"),        quantity("memory_sol"),
                                           quantity("achieved_occupancy"), quantity("issue_active_pct"),
                                           quantity("global_excess_pct"),  quantity("stall_total")};
  static const QuantityId stall_total = quantity("stall_total");
  std::vector<std::string> absent;
  for (QuantityId m : f.missing())
    if (key.count(m)) absent.push_back(quantity_name(m));
  if (!f.get(stall_total)) absent.push_back("warp stall reasons");
  if (!absent.empty())
    d.notes.push_back(fmt::format("not in this report (fewer checks ran, confidence lowered): {}",
                                  fmt::join(absent, ", ")));
}

}  // namespace

KernelDiagnosis analyze_kernel(const model::Report& report, const model::Kernel& kernel, const AnalyzeOptions& opt) {
  KernelDiagnosis d;
  fill_identity(kernel, d);
  auto set = rule_set();
  if (!set) {
    d.notes.push_back(set.error().message);
    return d;
  }
  Facts facts(report, kernel);
  Scope scope(**set, facts);
  add_context(kernel, **set, facts, scope);
  d.bottleneck = classify(facts, (*set)->classify, d.notes);
  set_bound(scope, d.bottleneck.cls);
  Context ctx{report, kernel};
  d.findings = evaluate_rules(**set, scope, ctx);
  ensure_consistent(d.findings, d.bottleneck, **set, scope, ctx);
  sort_findings(d.findings);
  if (opt.top > 0 && d.findings.size() > static_cast<size_t>(opt.top)) d.findings.resize(opt.top);
  note_missing(facts, d);
  d.derived = facts.all_evidence();
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
    case Severity::High: return "high";
    case Severity::Medium: return "medium";
    case Severity::Low: return "low";
    case Severity::Info: return "info";
  }
  return "info";
}

std::string_view class_name(BottleneckClass c) {
  switch (c) {
    case BottleneckClass::Memory: return "memory";
    case BottleneckClass::Compute: return "compute";
    case BottleneckClass::Latency: return "latency";
    case BottleneckClass::Launch: return "launch";
    case BottleneckClass::Unknown: return "unknown";
  }
  return "latency";
}

}  // namespace keet::analysis
