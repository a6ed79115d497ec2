#include "analysis/run_verdicts.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/expr.h"
#include "analysis/symbols.h"
#include "analysis/text_template.h"
#include "analysis/timeline_join.h"
#include "model/units.h"
#include "util/data_value.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::analysis {
namespace {

struct CheckRule {
  std::string list, nsys_rule, what;
};

// Why a verdict stays quiet: the first text whose condition holds (none:
// always), so the sentence names the limit the run did not reach.
struct QuietText {
  std::optional<Expr> when;
  TextTemplate text;
};

struct VerdictRule {
  std::string id, evidence;
  Expr when;
  std::optional<Expr> cost_ms;
  TextTemplate title, explanation;
  std::vector<QuietText> quiet;
  std::vector<std::string> advice, references;
};

// CUDA API functions of one kind (allocation, stream creation, ...), by name.
struct ApiGroup {
  std::string id, what;
  Pattern match;
};

struct RunRules {
  SymbolTable symbols;
  model::RunLimits limits;
  std::vector<CheckRule> checks;
  std::vector<VerdictRule> verdicts;
  std::vector<ApiGroup> api_groups;
  double api_churn_calls = 100;  // a function called this often churns
};

Expr bound(const std::string& text, SymbolTable& symbols) {
  auto e = Expr::parse(text);
  if (!e) throw std::invalid_argument(fmt::format("{}: {}", text, e.error().message));
  e->bind([&](const std::string& name) { return symbols.intern(name); });
  return std::move(*e);
}

std::vector<QuietText> quiet_texts(const DataValue& q, SymbolTable& symbols) {
  std::vector<QuietText> out;
  if (q.is_string()) {
    if (!q.view().empty()) out.push_back({std::nullopt, TextTemplate(q.view(), symbols)});
    return out;
  }
  if (!q.is_array()) return out;
  for (auto t : q) {
    QuietText qt{std::nullopt, TextTemplate(t.at("text").view(), symbols)};
    if (auto w = t.value("when", ""); !w.empty()) qt.when = bound(w, symbols);
    out.push_back(std::move(qt));
  }
  return out;
}

// The rule data is compiled in and checked by the unit tests; a broken one
// here leaves the run without verdicts rather than the program without a timeline.
const RunRules& run_rules() {
  static const RunRules loaded = [] {
    RunRules r;
    auto doc = compiled_data("rules/timeline.json");
    if (!doc) return r;
    try {
      auto l = doc->at("limits");
      r.limits.gap_ns = static_cast<int64_t>(l.value("gap_ms", 500.0) * 1e6);
      r.limits.chunks = static_cast<int64_t>(l.value("chunks", 30.0));
      r.limits.low_use_pct = l.value("low_use_pct", 50.0);
      r.limits.small_h2d_bytes = static_cast<uint64_t>(l.value("small_h2d_bytes", 64000.0));
      r.limits.keep = static_cast<size_t>(l.value("keep", 200.0));
      for (auto p : doc->at("phases")) r.limits.phases.push_back({p.at("match").str(), p.at("what").str()});
      r.limits.nccl_kernel = doc->at("nccl_kernel").str();
      r.api_churn_calls = doc->value("api_churn_calls", 100.0);
      for (auto g : doc->at("api_groups")) {
        auto match = Pattern::compile(g.at("match").view());
        if (!match) throw std::invalid_argument(match.error());
        r.api_groups.push_back({g.at("id").str(), g.at("what").str(), std::move(*match)});
      }
      for (auto c : doc->at("checks"))
        r.checks.push_back({c.at("list").str(), c.at("nsys_rule").str(), c.at("what").str()});
      for (auto v : doc->at("verdicts")) {
        VerdictRule rule{.id = v.at("id").str(),
                         .evidence = v.at("evidence").str(),
                         .when = bound(v.at("when").str(), r.symbols),
                         .cost_ms = std::nullopt,
                         .title = TextTemplate(v.at("title").view(), r.symbols),
                         .explanation = TextTemplate(v.at("explanation").view(), r.symbols),
                         .quiet = quiet_texts(v.member("quiet"), r.symbols),
                         .advice = v.member("advice").strings(),
                         .references = v.member("references").strings()};
        if (auto cost = v.value("cost_ms", ""); !cost.empty()) rule.cost_ms = bound(cost, r.symbols);
        r.verdicts.push_back(std::move(rule));
      }
    } catch (const std::exception&) {
      return RunRules{};
    }
    return r;
  }();
  return loaded;
}

constexpr double kMs = 1e6;

double percent(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

struct RunFacts {
  std::vector<std::pair<std::string, double>> values;
  void set(std::string name, double v) { values.emplace_back(std::move(name), v); }
  void list(const std::string& prefix, const model::OpList& ops, double span_ns) {
    set(prefix + "_count", static_cast<double>(ops.count));
    set(prefix + "_ms", static_cast<double>(ops.total_ns) / kMs);
    set(prefix + "_mb", static_cast<double>(ops.bytes) / 1e6);
    if (span_ns > 0) set(prefix + "_span_pct", percent(static_cast<double>(ops.total_ns), span_ns));
  }
};

const model::Lane* busiest_stream(const model::TimelineSummary& t) {
  const model::Lane* best = nullptr;
  for (const auto& l : t.streams)
    if (!best || l.kernels > best->kernels) best = &l;
  return best;
}

const model::KernelSummary* most_drifting(const model::TimelineSummary& t) {
  const model::KernelSummary* best = nullptr;
  double growth = 0;
  for (const auto& k : t.kernels)
    if (auto g = drift_growth(k); g && *g > growth) best = &k, growth = *g;
  return best;
}

// Of [from, to), the time inside the run's one-time phases.
int64_t phase_overlap(const model::TimelineSummary& t, int64_t from, int64_t to) {
  int64_t total = 0;
  for (const auto& p : t.phases) total += std::max<int64_t>(0, std::min(to, p.end) - std::max(from, p.start));
  return total;
}

// The API calls of one group: every call, and the longest single one (the
// first call of a kind often carries one-time set-up, context creation).
struct ApiTotals {
  model::DurationStats time;
  std::vector<const model::ApiCallStats*> functions;
};
ApiTotals api_totals(const model::TimelineSummary& t, const ApiGroup& g) {
  ApiTotals out;
  for (const auto& a : t.api)
    if (g.match.search(a.name)) {
      out.time.merge(a.time);
      out.functions.push_back(&a);
    }
  return out;
}

// Churn: the functions of a group called at least `churn_calls` times, each
// without its longest call (the first call of a kind often carries one-time
// set-up such as creating the context).
void api_facts(RunFacts& f, const model::TimelineSummary& t, const RunRules& rules, double span) {
  for (const auto& g : rules.api_groups) {
    auto totals = api_totals(t, g);
    const auto& a = totals.time;
    std::string p = "api_" + g.id;
    f.set(p + "_count", static_cast<double>(a.count));
    f.set(p + "_ms", static_cast<double>(a.total_ns) / kMs);
    if (a.count == 0) continue;
    f.set(p + "_max_ms", static_cast<double>(a.max_ns) / kMs);
    double churn_count = 0, churn_ns = 0;
    for (const auto* fn : totals.functions)
      if (static_cast<double>(fn->time.count) >= rules.api_churn_calls) {
        churn_count += static_cast<double>(fn->time.count);
        churn_ns += static_cast<double>(fn->time.total_ns - fn->time.max_ns);
      }
    f.set(p + "_churn_count", churn_count);
    f.set(p + "_churn_ms", churn_ns / kMs);
    if (span > 0) {
      f.set(p + "_span_pct", percent(static_cast<double>(a.total_ns), span));
      f.set(p + "_churn_span_pct", percent(churn_ns, span));
    }
  }
}

// NCCL kernels against the computation beside them, and how evenly the
// devices compute: each device's kernels other than NCCL's (their union),
// compared in absolute time since devices join a run at different times.
void device_facts(RunFacts& f, const model::TimelineSummary& t, double span) {
  double nccl = 0, exposed = 0, worst = -1, launches = 0;
  const model::DeviceUse* worst_device = nullptr;
  const model::DeviceUse *busiest = nullptr, *idlest = nullptr;
  auto compute = [](const model::DeviceUse& d) {
    return static_cast<double>(d.kernel_ns - d.nccl_ns + d.nccl_overlap_ns);
  };
  double computing = 0, devices = 0;
  for (const auto& d : t.device_use) {
    if (d.range_ns <= 0 || d.kernel_ns <= 0) continue;
    ++devices;
    computing += compute(d);
    if (!busiest || compute(d) > compute(*busiest)) busiest = &d;
    if (!idlest || compute(d) < compute(*idlest)) idlest = &d;
    if (d.nccl_launches == 0) continue;
    launches += static_cast<double>(d.nccl_launches);
    nccl += static_cast<double>(d.nccl_ns);
    auto e = static_cast<double>(d.nccl_ns - d.nccl_overlap_ns);
    exposed += e;
    if (e > worst) worst = e, worst_device = &d;
  }
  f.set("devices", devices);
  if (devices >= 2 && compute(*busiest) > 0) {
    f.set("device_busiest", static_cast<double>(busiest->device));
    f.set("device_idlest", static_cast<double>(idlest->device));
    f.set("device_compute_max_ms", compute(*busiest) / kMs);
    f.set("device_compute_min_ms", compute(*idlest) / kMs);
    f.set("device_compute_gap_pct", percent(compute(*busiest) - compute(*idlest), compute(*busiest)));
    // The step waits for the GPU with the most work: spread evenly, each
    // would compute the mean.
    f.set("device_balance_ms", std::max(0.0, compute(*busiest) - computing / devices) / kMs);
  }
  f.set("nccl_launches", launches);
  if (launches == 0) return;
  f.set("nccl_ms", nccl / kMs);
  f.set("nccl_exposed_ms", exposed / kMs);
  f.set("nccl_exposed_pct", percent(exposed, nccl));
  f.set("nccl_device", static_cast<double>(worst_device->device));
  f.set("nccl_device_exposed_ms", worst / kMs);
  f.set("nccl_device_exposed_pct", percent(worst, static_cast<double>(worst_device->range_ns)));
  if (span > 0) f.set("nccl_exposed_span_pct", percent(worst, span));
}

// The run is on an AMD GPU (a ROCm/HIP PyTorch trace): Nsight Compute
// profiles NVIDIA GPUs only, so no ncu command is offered for it.
bool runs_on_amd(const model::TimelineSummary& t) {
  return std::ranges::any_of(t.meta.gpus, [](const auto& g) { return g.name.starts_with("AMD"); }) ||
         std::ranges::any_of(t.api, [](const auto& a) { return a.name.starts_with("hip"); });
}

// The kernel worth profiling next: the one with the most GPU time that is no
// NCCL collective (a collective's time is mostly waiting for its peers and
// the interconnect, which the exposed-communication verdict covers and
// Nsight Compute cannot shorten). None on an AMD GPU.
const model::KernelSummary* kernel_to_profile(const model::TimelineSummary& t) {
  if (runs_on_amd(t)) return nullptr;
  auto it = std::ranges::find_if(t.kernels, [](const model::KernelSummary& k) { return k.collective.empty(); });
  return it == t.kernels.end() ? nullptr : &*it;
}

RunFacts facts_of(const model::TimelineSummary& t, const RunOptions& opt, const RunRules& rules) {
  RunFacts f;
  auto span = static_cast<double>(t.span_ns());
  double ranges = 0;
  for (const auto& r : t.meta.gpu_ranges) ranges += static_cast<double>(r.end - r.start);
  const auto& c = t.checks;
  f.set("span_ms", span / kMs);
  f.set("kernel_ms", static_cast<double>(t.kernel_ns) / kMs);
  f.set("gpu_busy_ms", static_cast<double>(t.gpu_busy_ns) / kMs);
  if (ranges > 0) f.set("gpu_busy_pct", percent(static_cast<double>(t.gpu_busy_ns), ranges));
  f.set("chunks", static_cast<double>(t.limits.chunks));
  f.list("sync_copy", c.sync_copies, span);
  uint64_t pageable = 0;
  for (const auto& op : c.sync_copies.longest)
    pageable += op.src == model::HostMemory::Pageable || op.dst == model::HostMemory::Pageable;
  f.set("sync_copy_pageable_count", static_cast<double>(pageable));
  f.list("pageable_async", c.pageable_async_copies, span);
  f.list("sync_memset", c.sync_memsets, span);
  f.list("sync_call", c.sync_calls, span);
  f.set("gap_count", static_cast<double>(c.gaps.count));
  f.set("gap_ms", static_cast<double>(c.gaps.total_ns) / kMs);
  f.set("gap_limit_ms", static_cast<double>(t.limits.gap_ns) / kMs);
  if (!c.gaps.longest.empty()) f.set("gap_max_ms", static_cast<double>(c.gaps.longest.front().duration()) / kMs);
  if (ranges > 0) f.set("gap_range_pct", percent(static_cast<double>(c.gaps.total_ns), ranges));
  double kept = 0, in_sync = 0, issued = 0, issued_of = 0, gap_phase = 0;
  for (const auto& gap : c.gaps.longest) {
    kept += static_cast<double>(gap.duration());
    gap_phase += static_cast<double>(gap.phase_ns);
    in_sync += static_cast<double>(gap.host_sync_ns);
    if (gap.issued_after_ns) {
      issued += static_cast<double>(*gap.issued_after_ns);
      issued_of += static_cast<double>(gap.duration());
    }
  }
  // Without the CUDA API trace the export cannot say what the host did.
  if (kept > 0 && t.meta.has_api_trace()) f.set("gap_sync_pct", percent(in_sync, kept));
  if (issued_of > 0) f.set("gap_issued_pct", percent(issued, issued_of));
  // Idle time inside one-time phases (compilation, warm-up) is no steady-state loss.
  f.set("gap_steady_ms", (static_cast<double>(c.gaps.total_ns) - gap_phase) / kMs);
  if (gap_phase > 0) f.set("gap_phase_ms", gap_phase / kMs);
  f.set("low_use_count", static_cast<double>(c.low_use.count));
  f.set("low_use_ms", static_cast<double>(c.low_use.total_ns) / kMs);
  f.set("low_use_limit_pct", t.limits.low_use_pct);
  double weighted = 0, idle = 0, idle_in_phases = 0;
  for (const auto& op : c.low_use.longest) {
    weighted += op.in_use_pct.value_or(0) * static_cast<double>(op.duration());
    double stretch_idle = static_cast<double>(op.duration()) * (1 - op.in_use_pct.value_or(0) / 100);
    idle += stretch_idle;
    idle_in_phases += std::min(stretch_idle, static_cast<double>(phase_overlap(t, op.start, op.end)));
  }
  if (idle_in_phases > 0) f.set("low_use_phase_ms", idle_in_phases / kMs);
  f.set("low_use_steady_idle_ms", (idle - idle_in_phases) / kMs);
  if (c.low_use.total_ns > 0) f.set("low_use_pct", weighted / static_cast<double>(c.low_use.total_ns));
  f.set("low_use_idle_ms", idle / kMs);
  if (ranges > 0) f.set("low_use_range_pct", percent(static_cast<double>(c.low_use.total_ns), ranges));
  if (const auto* s = busiest_stream(t); s && s->kernels > 0) {
    // The steady state: idle time inside one-time phases is left out.
    auto idle = static_cast<double>(s->idle_ns - s->phase_idle_ns);
    f.set("launch_stream_kernels", static_cast<double>(s->kernels));
    f.set("launch_stream_mean_us", static_cast<double>(s->busy_ns) / static_cast<double>(s->kernels) / 1e3);
    f.set("launch_stream_idle_pct",
          percent(idle, static_cast<double>(s->last_end - s->first_start - s->phase_idle_ns)));
    f.set("launch_stream_idle_ms", idle / kMs);
    if (s->phase_idle_ns > 0) f.set("launch_stream_phase_ms", static_cast<double>(s->phase_idle_ns) / kMs);
  }
  if (t.queue.count > 0) {
    f.set("queue_launches", static_cast<double>(t.queue.count));
    f.set("queue_mean_us", t.queue.mean_ns() / 1e3);
  }
  api_facts(f, t, rules, span);
  device_facts(f, t, span);
  if (t.latency.count > 0) {
    // Each host synchronisation drains the GPU's queue: refilling it takes
    // at least one launch latency, the shortest this run measured (the mean
    // also holds launches that queued behind others).
    auto refill_ns = static_cast<double>(t.latency.min_ns);
    f.set("launch_latency_us", t.latency.mean_ns() / 1e3);
    f.set("sync_call_refill_us", refill_ns / 1e3);
    f.set("sync_call_refill_ms", static_cast<double>(c.sync_calls.count) * refill_ns / kMs);
  }
  f.set("drift_limit_pct", 100 * opt.drift_threshold);
  if (const auto* k = most_drifting(t)) {
    auto [early, late] = k->drift.early_late_means();
    f.set("drift_pct", 100 * drift_growth(*k).value_or(0));
    f.set("drift_early_us", early / 1e3);
    f.set("drift_late_us", late / 1e3);
    f.set("drift_cost_ms", std::max(0.0, late - early) * static_cast<double>(k->time.count) / 4 / kMs);
  }
  if (c.copy_ns > 0) {
    f.set("copy_ms", static_cast<double>(c.copy_ns) / kMs);
    f.list("copy_exposed", c.exposed_copies, span);
    f.set("copy_hideable_ms", static_cast<double>(c.hideable_ns) / kMs);
    if (span > 0) f.set("copy_hideable_span_pct", percent(static_cast<double>(c.hideable_ns), span));
  }
  if (const auto* hot = kernel_to_profile(t)) {
    const auto& k = *hot;
    f.set("hot_kernel_pct", 100 * t.gpu_share(k));
    f.set("hot_kernel_ms", static_cast<double>(k.time.total_ns) / kMs);
    f.set("hot_kernel_launches", static_cast<double>(k.time.count));
    f.set("hot_kernel_span_pct", 100 * t.span_share(k));
  }
  return f;
}

// keet profile (and the bare ncu line) for one launch of the kernel, on the
// program nsys profiled when the export names it.
std::vector<std::string> profile_commands(const model::TimelineSummary& t, const model::KernelSummary& k) {
  std::string app;
  for (const auto& a : t.meta.command) app += (app.empty() ? "" : " ") + shell_word(a);
  if (app.empty()) app = "<your program and its arguments>";
  std::string base = k.short_name.empty() ? k.name : k.short_name;
  std::string pattern = shell_word("regex:^" + base + "$");
  return {fmt::format("keet profile -k {} -c 1 -- {}", pattern, app),
          fmt::format("ncu -k {} -c 1 --set full -o {} {}", pattern, shell_word(base), app)};
}

std::string api_subject(const model::TimelineSummary& t, const ApiGroup& g) {
  std::vector<std::string> parts;
  for (const auto* a : api_totals(t, g).functions)
    parts.push_back(fmt::format("{} {} call(s), {} (longest {})", a->name, a->time.count,
                                model::readable_duration(static_cast<double>(a->time.total_ns)),
                                model::readable_duration(static_cast<double>(a->time.max_ns))));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string collectives(const model::TimelineSummary& t) {
  std::vector<std::string> parts;
  for (const auto& k : t.kernels)
    if (!k.collective.empty())
      parts.push_back(fmt::format("{} {} launch(es), {}", k.collective, k.time.count,
                                  model::readable_duration(static_cast<double>(k.time.total_ns))));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string subject_of(const model::TimelineSummary& t, const std::string& evidence, const RunOptions& opt) {
  for (const auto& g : run_rules().api_groups)
    if (evidence == "api_" + g.id) return api_subject(t, g);
  if (evidence == "nccl") return collectives(t);
  if (evidence == "hot_kernel")
    if (const auto* k = kernel_to_profile(t)) return k->name_in(opt.names);
  if (evidence == "drift_kernel")
    if (const auto* k = most_drifting(t)) return k->name_in(opt.names);
  if (evidence == "launch_stream")
    if (const auto* s = busiest_stream(t)) return fmt::format("device {} stream {}", s->device, s->stream);
  return {};
}

const model::OpList* list_named(const model::TimelineSummary& t, const std::string& name) {
  const auto& c = t.checks;
  if (name == "sync_copies") return &c.sync_copies;
  if (name == "pageable_async_copies") return &c.pageable_async_copies;
  if (name == "sync_memsets") return &c.sync_memsets;
  if (name == "sync_calls") return &c.sync_calls;
  if (name == "gaps") return &c.gaps;
  if (name == "low_use") return &c.low_use;
  if (name == "exposed_copies") return &c.exposed_copies;
  return nullptr;
}

std::string subject_label(const std::string& evidence) {
  if (evidence == "launch_stream") return "Stream";
  if (evidence == "nccl") return "Collectives";
  if (evidence.starts_with("api_")) return "Calls";
  return "Kernel";
}

std::string quiet_text(const VerdictRule& rule, std::span<const std::optional<double>> values,
                       const TextValues& words) {
  for (const auto& q : rule.quiet) {
    if (q.when) {
      auto holds = q.when->eval(values);
      if (!holds || *holds == 0) continue;
    }
    return q.text.render(values, words);
  }
  return "";
}

}  // namespace

model::RunLimits run_limits() { return run_rules().limits; }

RunDiagnosis diagnose_run(const model::TimelineSummary& t, const RunOptions& opt) {
  const auto& r = run_rules();
  RunDiagnosis out{.timeline = &t};
  std::vector<std::optional<double>> values(r.symbols.size());
  for (auto& [name, v] : facts_of(t, opt, r).values)
    if (auto id = r.symbols.find(name)) values[*id] = v;
  TextValues words;
  for (const auto& rule : r.verdicts) {
    auto fires = rule.when.eval(values);
    if (!fires || *fires == 0) continue;
    RunVerdict v{.id = rule.id,
                 .title = rule.title.render(values, words),
                 .explanation = rule.explanation.render(values, words),
                 .advice = rule.advice,
                 .references = rule.references,
                 .evidence = rule.evidence,
                 .ops = list_named(t, rule.evidence),
                 .subject = subject_of(t, rule.evidence, opt)};
    if (rule.cost_ms)
      if (auto ms = rule.cost_ms->eval(values))  // never more than the whole run
        v.cost_ns = t.span_ns() > 0 ? std::min(*ms * kMs, static_cast<double>(t.span_ns())) : *ms * kMs;
    v.subject_label = subject_label(rule.evidence);
    if (rule.evidence == "launch_stream" || rule.evidence == "gaps" || rule.evidence == "low_use")
      for (const auto& p : t.phases)
        if (static_cast<double>(p.end - p.start) >= 0.01 * static_cast<double>(t.span_ns()))  // ones that matter
          v.notes.push_back(fmt::format("One-time {} (NVTX range {}, {}) left out.", p.what, p.name,
                                        model::readable_duration(static_cast<double>(p.end - p.start))));
    for (const auto& c : r.checks)
      if (c.list == rule.evidence) v.nsys_rule = c.nsys_rule;
    if (rule.evidence == "hot_kernel")
      if (const auto* k = kernel_to_profile(t)) v.commands = profile_commands(t, *k);
    out.verdicts.push_back(std::move(v));
  }
  std::ranges::stable_sort(out.verdicts, [](const RunVerdict& a, const RunVerdict& b) {
    return a.cost_ns.value_or(-1) > b.cost_ns.value_or(-1);
  });
  for (const auto& c : r.checks) {
    RunCheck check{.list = c.list, .nsys_rule = c.nsys_rule, .what = c.what, .ops = list_named(t, c.list)};
    for (const auto& v : out.verdicts)
      if (v.evidence == c.list) check.verdict = v.id;
    if (check.verdict.empty() && check.ops && check.ops->count > 0)
      for (const auto& rule : r.verdicts)
        if (rule.evidence == c.list) check.quiet = quiet_text(rule, values, words);
    out.checks.push_back(std::move(check));
  }
  return out;
}

}  // namespace keet::analysis
