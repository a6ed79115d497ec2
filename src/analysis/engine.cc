// The expert engine: classify the bottleneck, evaluate the rule data, and
// assemble findings with evidence, advice, estimated speedup and source lines.
#include "analysis/engine.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/expr.h"
#include "analysis/hotspots.h"
#include "analysis/rules.h"

namespace keet::analysis {
namespace {

// Everything a rule expression or text template may name for one kernel.
class Scope {
 public:
  Scope(const Facts& facts) : facts_(facts) {}
  void set(const std::string& name, double v) { extra_[name] = v; }
  void set_text(const std::string& name, std::string v) { text_[name] = std::move(v); }
  std::optional<double> get(const std::string& name) const {
    if (auto it = extra_.find(name); it != extra_.end()) return it->second;
    if (name.starts_with("ncu_warn_")) return 0.0;  // rule absent or not warning
    return facts_.get(name);
  }
  std::optional<std::string> text(const std::string& name) const {
    auto it = text_.find(name);
    return it == text_.end() ? std::nullopt : std::optional(it->second);
  }
  Lookup lookup() const {
    return [this](const std::string& n) { return get(n); };
  }
  const Facts& facts() const { return facts_; }

 private:
  const Facts& facts_;
  std::map<std::string, double> extra_;
  std::map<std::string, std::string> text_;
};

std::optional<double> eval(const Scope& s, const std::string& expr) {
  auto v = evaluate(expr, s.lookup());
  return v ? *v : std::nullopt;  // syntax errors are caught by the rule-data test
}

// Formats one placeholder body "name" or "name:.1f".
std::string placeholder(const Scope& s, const std::string& body) {
  auto colon = body.find(':');
  std::string name = body.substr(0, colon);
  if (auto t = s.text(name)) return *t;
  auto v = s.get(name);
  if (!v) return "n/a";
  std::string spec = colon == std::string::npos ? "{:.4g}" : "{" + body.substr(colon) + "}";
  return fmt::format(fmt::runtime(spec), *v);
}

std::string render_template(const Scope& s, const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    auto close = text.find('}', i);
    if (text[i] != '{' || close == std::string::npos) {
      out += text[i];
      continue;
    }
    out += placeholder(s, text.substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

// ncu's own guided-analysis results become inputs: ncu_warn_<Rule> and
// ncu_speedup_<Rule> (the largest estimate ncu gave, in percent).
void add_ncu_rules(const model::Kernel& k, Scope& s) {
  for (const auto& r : k.rules) {
    bool warned = false;
    std::optional<double> best;
    for (const auto& m : r.messages) {
      if (m.type < 2) continue;
      warned = true;
      if (m.estimated_speedup) best = std::max(best.value_or(0), *m.estimated_speedup);
    }
    if (warned) s.set("ncu_warn_" + r.id, 1);
    if (best) s.set("ncu_speedup_" + r.id, *best);
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
  std::optional<double> best;
  for (const auto& p : pipes)
    if (auto v = f.get(p.quantity); v && (!best || *v > *best)) {
      best = v;
      s.set_text("pipe_max_name", p.label);
    }
  if (best) s.set("pipe_max_pct", *best);
}

void add_fp_unfused(const Facts& f, Scope& s) {
  double sp = f.get("fp32_flops").value_or(0), dp = f.get("fp64_flops").value_or(0);
  const char* q = dp > sp ? "fp64_unfused_pct" : "fp32_unfused_pct";
  if (auto v = f.get(q)) {
    s.set("fp_unfused_pct", *v);
    s.set_text("fp_unfused_kind", dp > sp ? "FP64" : "FP32");
  }
}

void add_occupancy_context(const Facts& f, Scope& s) {
  std::optional<double> lim;
  for (const char* q : {"limit_registers", "limit_shared_mem", "limit_warps", "limit_blocks"})
    if (auto v = f.get(q)) lim = std::min(lim.value_or(*v), *v);
  if (lim) s.set("occupancy_limit_min", *lim);
  if (auto t = f.get("theoretical_occupancy")) s.set("occupancy_loss_pct", 100 - *t);
}

void add_context(const model::Kernel& k, const Facts& f, Scope& s) {
  add_ncu_rules(k, s);
  add_pipe_max(f, s);
  add_fp_unfused(f, s);
  add_occupancy_context(f, s);
  if (auto major = f.get("cc_major")) s.set("cc", *major + f.get("cc_minor").value_or(0) / 10);
  if (auto ia = f.get("issue_active_pct")) s.set("issue_idle_pct", 100 - *ia);
  if (auto d = f.get("duration_ns")) {
    s.set("duration_us", *d / 1000);
    s.set("tiny_score", std::clamp((10000 - *d) / 100, 0.0, 100.0));
  }
  if (auto fill = f.get("sm_fill_pct")) s.set("sm_idle_pct", 100 - *fill);
  auto eff = f.get("warp_efficiency_pct"), uni = f.get("branch_uniform_pct");
  if (eff || uni) s.set("divergence_pct", 100 - std::min(eff.value_or(100), uni.value_or(100)));
}

// --- Bottleneck class -------------------------------------------------------

Evidence ev(const Facts& f, const std::string& q) {
  auto e = f.evidence_for(q);
  return e.empty() ? Evidence{q, 0, "", "", ""} : e.front();
}

Bottleneck classify(const Facts& f, const Classify& c, std::vector<std::string>& notes) {
  auto compute = f.get("compute_sol"), memory = f.get("memory_sol");
  if (!memory) memory = std::max({f.get("dram_pct").value_or(-1), f.get("l1_pct").value_or(-1), f.get("l2_pct").value_or(-1)});
  if (memory && *memory < 0) memory.reset();
  Bottleneck b;
  double confidence_scale = 1.0;
  if (!compute || !memory) {
    notes.push_back("speed-of-light metrics (sm__throughput, gpu__compute_memory_throughput) are missing: the bottleneck class is a guess from what is present");
    confidence_scale = 0.5;
  }
  double C = compute.value_or(0), M = memory.value_or(0), top = std::max(C, M);
  double dur = f.get("duration_ns").value_or(1e12);
  bool tiny = dur < c.launch_max_duration_ns || f.get("sm_fill_pct").value_or(100) < 50;
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
  for (const char* q : {"compute_sol", "memory_sol", "duration_ns", "issue_active_pct", "eligible_warps"})
    if (f.get(q)) b.evidence.push_back(ev(f, q));
  return b;
}

// --- Findings ---------------------------------------------------------------

Severity severity_of(double score, double high, double medium) {
  if (score >= high) return Severity::High;
  if (score >= medium) return Severity::Medium;
  return Severity::Low;
}

std::optional<double> first_speedup(const Scope& s, const std::vector<std::string>& formulas, std::string& used) {
  for (const auto& f : formulas)
    if (auto v = eval(s, f); v && std::isfinite(*v) && *v > 0) {
      used = f;
      return std::max(1.0, std::round(*v * 1000) / 1000);
    }
  return std::nullopt;
}

// A fix that moves no fewer DRAM bytes cannot make the kernel faster than
// DRAM allows: cap the estimate at dram_headroom when the report has it.
void apply_dram_cap(Finding& f, const Scope& s) {
  auto cap = s.get("dram_headroom");
  if (!cap || !f.estimated_speedup || *cap >= *f.estimated_speedup) return;
  f.estimated_speedup = std::max(1.0, std::round(*cap * 1000) / 1000);
  f.speedup_formula = "min(" + f.speedup_formula + ", dram_headroom = 90 / dram_pct)";
}

std::vector<std::string> advice_for(const std::vector<Advice>& all, const Scope& s) {
  auto cc = s.get("cc");
  std::vector<std::string> out;
  for (const auto& a : all) {
    // Never suggest a feature the device lacks; with an unknown device, keep
    // only advice that needs no particular architecture.
    bool ok = cc ? (*cc + 1e-9 >= a.min_cc && *cc <= a.max_cc + 1e-9) : a.min_cc == 0;
    if (ok) out.push_back(a.text);
  }
  return out;
}

void add_evidence(const Facts& f, const std::vector<std::string>& names, std::vector<Evidence>& out) {
  for (const auto& n : names)
    for (auto& e : f.evidence_for(n))
      if (std::none_of(out.begin(), out.end(), [&](const Evidence& x) { return x.metric == e.metric; }))
        out.push_back(std::move(e));
}

std::vector<std::string> warned_ncu_rules(const Scope& s, const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (const auto& id : ids)
    if (s.get("ncu_warn_" + id).value_or(0) != 0) out.push_back(id);
  return out;
}

Finding make_finding(const Rule& r, const Scope& s, const Context& ctx) {
  Finding f;
  f.id = r.id;
  f.severity = severity_of(eval(s, r.severity_by).value_or(0), r.high, r.medium);
  f.title = render_template(s, r.title);
  f.explanation = render_template(s, r.explanation);
  if (f.explanation.find("n/a") != std::string::npos && !r.explanation_short.empty())
    f.explanation = render_template(s, r.explanation_short);
  add_evidence(s.facts(), r.evidence, f.evidence);
  f.estimated_speedup = first_speedup(s, r.speedup, f.speedup_formula);
  if (r.dram_cap) apply_dram_cap(f, s);
  if (f.speedup_formula.empty()) f.speedup_formula = r.speedup_doc;
  else f.speedup_formula += " (" + r.speedup_doc + ")";
  f.advice = advice_for(r.advice, s);
  f.source = hot_lines(ctx, r.source_metrics, 3);
  f.references = r.references;
  f.ncu_rules = warned_ncu_rules(s, r.ncu_rules);
  return f;
}

// "long_scoreboard" -> "LongScoreboard", as newer ncu names its CPIStall rules.
std::string camel(const std::string& reason) {
  std::string out;
  bool up = true;
  for (char c : reason) {
    if (c == '_') up = true;
    else out += up ? static_cast<char>(std::toupper(c)) : c, up = false;
  }
  return out == "NoInstruction" ? "NoInstructions" : out;
}

// The top two reasons over the share threshold, plus any reason ncu itself
// warned about (CPIStall<Reason>, or the 2022-era CPIStall for the top one).
std::vector<const StallRule*> top_stalls(const Scope& s, const RuleSet& set) {
  std::vector<std::pair<double, const StallRule*>> ranked;
  for (const auto& st : set.stalls)
    if (auto share = s.get("stall_share_" + st.reason)) ranked.emplace_back(*share, &st);
  std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<const StallRule*> out;
  bool generic_warn = s.get("ncu_warn_CPIStall").value_or(0) != 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    auto [share, st] = ranked[i];
    bool ncu = s.get("ncu_warn_CPIStall" + camel(st->reason)).value_or(0) != 0 || (i == 0 && generic_warn);
    if ((i < 2 && share >= set.stall_min_share) || (ncu && share > 0)) out.push_back(st);
  }
  return out;
}

Finding make_stall_finding(const StallRule& st, const RuleSet& set, Scope& s, const Context& ctx) {
  const Facts& f = s.facts();
  double share = *f.get("stall_share_" + st.reason);
  s.set("share", share);
  Finding out;
  out.id = "latency.stall." + st.reason;
  out.severity = severity_of(share, 50, 30);
  out.ncu_rules = warned_ncu_rules(s, {"CPIStall", "CPIStall" + camel(st.reason)});
  out.title = fmt::format("Warps mostly stall on {} ({:.1f}% of stall cycles)", st.reason, share);
  out.explanation = fmt::format(
      "{:.1f}% of the cycles warps spent waiting were '{}' stalls: {}. Each issued instruction waited {:.2f} cycles "
      "on this reason on average.",
      share, st.reason, st.what, f.get("stall_" + st.reason).value_or(0));
  add_evidence(f, {"stall_share_" + st.reason, "issue_active_pct"}, out.evidence);
  out.estimated_speedup = first_speedup(s, {set.stall_speedup}, out.speedup_formula);
  apply_dram_cap(out, s);
  out.speedup_formula += " (" + set.stall_speedup_doc + ")";
  out.advice = advice_for(st.advice, s);
  out.source = hot_lines(ctx, {st.source_metric}, 3);
  out.references = {"finding:latency.stall." + st.reason, "stall:" + st.reason};
  return out;
}

bool has_class_finding(const std::vector<Finding>& fs, BottleneckClass cls, const RuleSet& set) {
  for (const auto& f : fs) {
    if (const Rule* r = set.find(f.id); r && r->cls == cls) return true;
    if (f.id.starts_with("latency.stall.")) {
      for (const auto& st : set.stalls)
        if ("latency.stall." + st.reason == f.id && st.cls == cls) return true;
    }
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
    if (!r || !eval(s, r->severity_by)) continue;
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
  s.set("bound_memory", cls == BottleneckClass::Memory);
  s.set("bound_compute", cls == BottleneckClass::Compute);
  s.set("bound_latency", cls == BottleneckClass::Latency);
  s.set("bound_launch", cls == BottleneckClass::Launch);
  double ia = s.get("issue_active_pct").value_or(100);
  s.set("occupancy_matters", cls == BottleneckClass::Latency || ia < 60);
}

std::vector<Finding> evaluate_rules(const RuleSet& set, Scope& s, const Context& ctx) {
  std::vector<Finding> out;
  for (const auto& r : set.rules)
    if (eval(s, r.when).value_or(0) != 0) out.push_back(make_finding(r, s, ctx));
  for (const auto* st : top_stalls(s, set)) out.push_back(make_stall_finding(*st, set, s, ctx));
  return out;
}

void fill_identity(const model::Kernel& k, KernelDiagnosis& d) {
  d.index = k.index;
  d.name = k.mangled.empty() ? k.display_name() : k.mangled;
  d.demangled = k.display_name();
  d.grid = k.grid;
  d.block = k.block;
  d.duration_ns = k.number("gpu__time_duration.sum");
  d.device.name = k.text("device__attribute_display_name").value_or("");
  auto major = k.number("device__attribute_compute_capability_major");
  auto minor = k.number("device__attribute_compute_capability_minor");
  if (major) d.device.compute_capability = fmt::format("{}.{}", *major, minor.value_or(0));
}

void note_missing(const Facts& f, KernelDiagnosis& d) {
  static const std::set<std::string> key = {"compute_sol", "memory_sol", "achieved_occupancy", "issue_active_pct",
                                            "global_excess_pct", "stall_total"};
  std::vector<std::string> absent;
  for (const auto& m : f.missing())
    if (key.count(m)) absent.push_back(m);
  if (f.find("stall_total") == nullptr) absent.push_back("warp stall reasons");
  if (!absent.empty())
    d.notes.push_back(fmt::format("not in this report (fewer checks ran, confidence lowered): {}",
                                  fmt::join(absent, ", ")));
}

void fill_derived(const Facts& f, KernelDiagnosis& d) {
  for (const auto& [name, q] : f.all())
    d.derived.push_back(Evidence{q.formula.empty() ? q.inputs.front().metric : "derived:" + name, q.value, q.unit,
                                 "", q.formula});
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
  Scope scope(facts);
  add_context(kernel, facts, scope);
  d.bottleneck = classify(facts, (*set)->classify, d.notes);
  set_bound(scope, d.bottleneck.cls);
  Context ctx{report, kernel};
  d.findings = evaluate_rules(**set, scope, ctx);
  ensure_consistent(d.findings, d.bottleneck, **set, scope, ctx);
  sort_findings(d.findings);
  if (opt.top > 0 && d.findings.size() > static_cast<size_t>(opt.top)) d.findings.resize(opt.top);
  note_missing(facts, d);
  fill_derived(facts, d);
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
  }
  return "latency";
}

}  // namespace keet::analysis
