#include "analysis/derived.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "model/units.h"

namespace keet::analysis {
namespace {

// Plain quantities: a name and the metric spellings that carry it, newest first.
struct MetricQuantity {
  const char* name;
  std::vector<std::string> candidates;
};

const std::vector<MetricQuantity>& metric_quantities() {
  static const std::vector<MetricQuantity> table = {
      {"duration_ns", {"gpu__time_duration.sum"}},
      {"compute_sol", {"sm__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"memory_sol", {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"dram_pct", {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                    "dram__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"l1_pct", {"l1tex__throughput.avg.pct_of_peak_sustained_active"}},
      {"l2_pct", {"lts__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"l1_hit", {"l1tex__t_sector_hit_rate.pct"}},
      {"l2_hit", {"lts__t_sector_hit_rate.pct"}},
      {"achieved_occupancy", {"sm__warps_active.avg.pct_of_peak_sustained_active"}},
      {"theoretical_occupancy", {"sm__maximum_warps_per_active_cycle_pct"}},
      {"issue_active_pct", {"smsp__issue_active.avg.pct_of_peak_sustained_active",
                            "sm__inst_issued.avg.pct_of_peak_sustained_active"}},
      {"eligible_warps", {"smsp__warps_eligible.avg.per_cycle_active"}},
      {"active_warps_per_scheduler", {"smsp__warps_active.avg.per_cycle_active"}},
      {"waves", {"launch__waves_per_multiprocessor"}},
      {"grid_size", {"launch__grid_size"}},
      {"block_size", {"launch__block_size"}},
      {"registers", {"launch__registers_per_thread"}},
      {"sm_count", {"launch__sm_count", "device__attribute_multiprocessor_count"}},
      {"limit_registers", {"launch__occupancy_limit_registers"}},
      {"limit_shared_mem", {"launch__occupancy_limit_shared_mem"}},
      {"limit_warps", {"launch__occupancy_limit_warps"}},
      {"limit_blocks", {"launch__occupancy_limit_blocks"}},
      {"smem_per_block", {"launch__shared_mem_per_block"}},
      {"threads_per_inst", {"smsp__thread_inst_executed_per_inst_executed.ratio"}},
      {"threads_pred_on_per_inst", {"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"}},
      {"branch_uniform_pct", {"smsp__sass_average_branch_targets_threads_uniform.pct"}},
      {"pipe_fp64_pct", {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
                         "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active"}},
      {"pipe_fma_pct", {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"}},
      {"pipe_alu_pct", {"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
                        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"}},
      {"pipe_tensor_pct", {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"}},
      {"pipe_lsu_pct", {"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"}},
      {"pipe_xu_pct", {"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"}},
      {"pipe_shared_pct", {"sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active"}},
      {"global_excess_sectors", {"derived__memory_l2_theoretical_sectors_global_excessive"}},
      {"shared_excess_wavefronts", {"derived__memory_l1_wavefronts_shared_excessive"}},
      {"shared_wavefronts", {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"}},
      {"global_ld_sectors", {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"}},
      {"global_st_sectors", {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"}},
      {"global_ld_requests", {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"}},
      {"global_st_requests", {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"}},
      {"local_ld_sectors", {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"}},
      {"local_st_sectors", {"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"}},
      {"shared_ld_conflicts", {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"}},
      {"shared_st_conflicts", {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"}},
      {"atomic_requests", {"l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"}},
      {"reduction_requests", {"l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"}},
      {"l2_requests", {"lts__t_requests.sum"}},
      {"sysmem_fill_pct", {"lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed"}},
      {"dram_bytes_per_s", {"dram__bytes.sum.per_second"}},
      {"dram_read_bytes", {"dram__bytes_read.sum"}},
      {"dram_write_bytes", {"dram__bytes_write.sum"}},
      {"fadd_per_cycle", {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"}},
      {"fmul_per_cycle", {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"}},
      {"ffma2_per_cycle", {"derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2"}},
      {"dadd_per_cycle", {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed"}},
      {"dmul_per_cycle", {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed"}},
      {"dfma2_per_cycle", {"derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2"}},
      {"fp32_peak_per_cycle", {"derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"}},
      {"fp64_peak_per_cycle", {"derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"}},
      {"smsp_cycles_per_s", {"smsp__cycles_elapsed.avg.per_second"}},
      {"sm_cycles_per_s", {"sm__cycles_elapsed.avg.per_second"}},
      {"dram_peak_bytes_per_cycle", {"dram__bytes.sum.peak_sustained"}},
      {"dram_cycles_per_s", {"dram__cycles_elapsed.avg.per_second"}},
      {"fadd_count", {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"}},
      {"fmul_count", {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"}},
      {"ffma_count", {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"}},
      {"dadd_count", {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum"}},
      {"dmul_count", {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum"}},
      {"dfma_count", {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"}},
      {"cc_major", {"device__attribute_compute_capability_major"}},
      {"cc_minor", {"device__attribute_compute_capability_minor"}},
      {"max_warps_per_sm", {"device__attribute_max_warps_per_multiprocessor"}},
  };
  return table;
}

// Derived quantities: name, unit, formula text, inputs (quantity names), and
// the function of those inputs. Only computed when every input is present.
struct DerivedDef {
  const char* name;
  const char* unit;
  const char* formula;
  std::vector<std::string> inputs;  // at most kMaxInputs
  std::function<std::optional<double>(std::span<const double>)> fn;
};
constexpr size_t kMaxInputs = 8;

std::optional<double> ratio_pct(double num, double den) {
  if (den <= 0) return std::nullopt;
  return 100.0 * num / den;
}

const std::vector<DerivedDef>& derived_defs() {
  using V = std::span<const double>;
  static const std::vector<DerivedDef> table = {
      {"global_excess_pct", "%", "global_excess_sectors / (global_ld_sectors + global_st_sectors) * 100",
       {"global_excess_sectors", "global_ld_sectors", "global_st_sectors"},
       [](const V& v) { return ratio_pct(v[0], v[1] + v[2]); }},
      {"ld_sectors_per_request", "sector/request", "global_ld_sectors / global_ld_requests",
       {"global_ld_sectors", "global_ld_requests"},
       [](const V& v) -> std::optional<double> { return v[1] > 0 ? std::optional(v[0] / v[1]) : std::nullopt; }},
      {"st_sectors_per_request", "sector/request", "global_st_sectors / global_st_requests",
       {"global_st_sectors", "global_st_requests"},
       [](const V& v) -> std::optional<double> { return v[1] > 0 ? std::optional(v[0] / v[1]) : std::nullopt; }},
      {"shared_excess_pct", "%", "shared_excess_wavefronts / shared_wavefronts * 100",
       {"shared_excess_wavefronts", "shared_wavefronts"}, [](const V& v) { return ratio_pct(v[0], v[1]); }},
      {"bank_conflict_pct", "%", "(shared_ld_conflicts + shared_st_conflicts) / shared_wavefronts * 100",
       {"shared_ld_conflicts", "shared_st_conflicts", "shared_wavefronts"},
       [](const V& v) { return ratio_pct(v[0] + v[1], v[2]); }},
      {"local_share_pct", "%",
       "(local_ld_sectors + local_st_sectors) / (local + global_ld_sectors + global_st_sectors) * 100",
       {"local_ld_sectors", "local_st_sectors", "global_ld_sectors", "global_st_sectors"},
       [](const V& v) { return ratio_pct(v[0] + v[1], v[0] + v[1] + v[2] + v[3]); }},
      {"local_bytes", "byte", "(local_ld_sectors + local_st_sectors) * 32", {"local_ld_sectors", "local_st_sectors"},
       [](const V& v) { return std::optional((v[0] + v[1]) * 32); }},
      {"atomic_share_pct", "%", "(atomic_requests + reduction_requests) / (global_ld_requests + global_st_requests + atomic_requests + reduction_requests) * 100",
       {"atomic_requests", "reduction_requests", "global_ld_requests", "global_st_requests"},
       [](const V& v) { return ratio_pct(v[0] + v[1], v[0] + v[1] + v[2] + v[3]); }},
      {"warp_efficiency_pct", "%", "threads_per_inst / 32 * 100", {"threads_per_inst"},
       [](const V& v) { return std::optional(v[0] / 32 * 100); }},
      {"predicated_off_pct", "%", "(threads_per_inst - threads_pred_on_per_inst) / threads_per_inst * 100",
       {"threads_per_inst", "threads_pred_on_per_inst"}, [](const V& v) { return ratio_pct(v[0] - v[1], v[0]); }},
      {"occupancy_gap_pct", "%", "(theoretical_occupancy - achieved_occupancy) / theoretical_occupancy * 100",
       {"theoretical_occupancy", "achieved_occupancy"}, [](const V& v) { return ratio_pct(v[0] - v[1], v[0]); }},
      {"tail_waste_pct", "%", "(ceil(waves) - waves) / ceil(waves) * 100", {"waves"},
       [](const V& v) -> std::optional<double> {
         double c = std::ceil(v[0]);
         return c > 0 ? std::optional(100 * (c - v[0]) / c) : std::nullopt;
       }},
      {"sm_fill_pct", "%", "min(grid_size / sm_count, 1) * 100", {"grid_size", "sm_count"},
       [](const V& v) { return ratio_pct(std::min(v[0], v[1]), v[1]); }},
      {"block_lane_waste_pct", "%", "(ceil(block_size / 32) * 32 - block_size) / (ceil(block_size / 32) * 32) * 100",
       {"block_size"},
       [](const V& v) {
         double lanes = std::ceil(v[0] / 32) * 32;
         return ratio_pct(lanes - v[0], lanes);
       }},
      {"fp32_unfused_pct", "%", "(fadd_count + fmul_count) / (fadd_count + fmul_count + ffma_count) * 100",
       {"fadd_count", "fmul_count", "ffma_count"}, [](const V& v) { return ratio_pct(v[0] + v[1], v[0] + v[1] + v[2]); }},
      {"fp64_unfused_pct", "%", "(dadd_count + dmul_count) / (dadd_count + dmul_count + dfma_count) * 100",
       {"dadd_count", "dmul_count", "dfma_count"}, [](const V& v) { return ratio_pct(v[0] + v[1], v[0] + v[1] + v[2]); }},
      {"fp32_flops", "flop", "fadd_count + fmul_count + 2 * ffma_count", {"fadd_count", "fmul_count", "ffma_count"},
       [](const V& v) { return std::optional(v[0] + v[1] + 2 * v[2]); }},
      {"fp64_flops", "flop", "dadd_count + dmul_count + 2 * dfma_count", {"dadd_count", "dmul_count", "dfma_count"},
       [](const V& v) { return std::optional(v[0] + v[1] + 2 * v[2]); }},
      {"fp32_flop_per_s", "flop/second", "(fadd + fmul + 2*ffma per cycle) * smsp_cycles_per_s",
       {"fadd_per_cycle", "fmul_per_cycle", "ffma2_per_cycle", "smsp_cycles_per_s"},
       [](const V& v) { return std::optional((v[0] + v[1] + v[2]) * v[3]); }},
      {"fp64_flop_per_s", "flop/second", "(dadd + dmul + 2*dfma per cycle) * smsp_cycles_per_s",
       {"dadd_per_cycle", "dmul_per_cycle", "dfma2_per_cycle", "smsp_cycles_per_s"},
       [](const V& v) { return std::optional((v[0] + v[1] + v[2]) * v[3]); }},
      {"fp32_peak_flop_per_s", "flop/second", "fp32_peak_per_cycle * sm_cycles_per_s",
       {"fp32_peak_per_cycle", "sm_cycles_per_s"}, [](const V& v) { return std::optional(v[0] * v[1]); }},
      {"fp64_peak_flop_per_s", "flop/second", "fp64_peak_per_cycle * sm_cycles_per_s",
       {"fp64_peak_per_cycle", "sm_cycles_per_s"}, [](const V& v) { return std::optional(v[0] * v[1]); }},
      {"dram_peak_bytes_per_s", "byte/second", "dram_peak_bytes_per_cycle * dram_cycles_per_s",
       {"dram_peak_bytes_per_cycle", "dram_cycles_per_s"}, [](const V& v) { return std::optional(v[0] * v[1]); }},
      {"fp32_to_fp64_ratio", "", "fp32_peak_per_cycle / fp64_peak_per_cycle", {"fp32_peak_per_cycle", "fp64_peak_per_cycle"},
       [](const V& v) -> std::optional<double> { return v[1] > 0 ? std::optional(v[0] / v[1]) : std::nullopt; }},
      {"arithmetic_intensity", "flop/byte", "(fp32_flop_per_s + fp64_flop_per_s) / dram_bytes_per_s",
       {"fp32_flop_per_s", "fp64_flop_per_s", "dram_bytes_per_s"},
       [](const V& v) -> std::optional<double> { return v[2] > 0 ? std::optional((v[0] + v[1]) / v[2]) : std::nullopt; }},
      {"fp32_peak_pct", "%", "fp32_flop_per_s / fp32_peak_flop_per_s * 100", {"fp32_flop_per_s", "fp32_peak_flop_per_s"},
       [](const V& v) { return ratio_pct(v[0], v[1]); }},
      {"fp64_peak_pct", "%", "fp64_flop_per_s / fp64_peak_flop_per_s * 100", {"fp64_flop_per_s", "fp64_peak_flop_per_s"},
       [](const V& v) { return ratio_pct(v[0], v[1]); }},
      {"global_ideal_bytes", "byte", "(global_ld_sectors + global_st_sectors - global_excess_sectors) * 32",
       {"global_ld_sectors", "global_st_sectors", "global_excess_sectors"},
       [](const V& v) { return std::optional((v[0] + v[1] - v[2]) * 32); }},
      {"dram_bytes", "byte", "dram_read_bytes + dram_write_bytes", {"dram_read_bytes", "dram_write_bytes"},
       [](const V& v) { return std::optional(v[0] + v[1]); }},
      {"dram_headroom", "", "90 / max(dram_pct, 1)", {"dram_pct"},
       [](const V& v) { return std::optional(90 / std::max(v[0], 1.0)); }},
      {"issue_active", "", "issue_active_pct / 100", {"issue_active_pct"},
       [](const V& v) { return std::optional(v[0] / 100); }},
  };
  return table;
}

std::string stall_metric(const std::string& reason) {
  return "smsp__average_warps_issue_stalled_" + reason + "_per_issue_active.ratio";
}

std::string legacy_stall_metric(const std::string& reason) {
  return "smsp__warp_issue_stalled_" + reason + "_per_warp_active.pct";
}

// --- The catalogue: every quantity in computation order -----------------------

enum class Kind : uint8_t { Metric, Stall, StallTotal, StallShare, Derived };

// A metric name with what every kernel would otherwise work out again.
struct Spelling {
  model::MetricName metric;
  std::string unit;
};

struct QuantityDef {
  std::string name;
  Kind kind = Kind::Metric;
  std::vector<Spelling> spellings;  // Metric, Stall: newest first
  std::string unit, formula;        // StallTotal, StallShare, Derived
  std::vector<QuantityId> inputs;   // StallShare: its stall; Derived: the formula's inputs
  const DerivedDef* derived = nullptr;
  std::string label;  // "derived:<name>"
};

constexpr QuantityId kNoQuantity = UINT32_MAX;

struct Catalogue {
  std::vector<QuantityDef> defs;
  std::unordered_map<std::string_view, QuantityId> ids;  // views into defs
  std::vector<QuantityId> by_name;                       // the order of KernelDiagnosis::derived
  QuantityId id_of(std::string_view name) const {
    auto it = ids.find(name);
    return it == ids.end() ? kNoQuantity : it->second;
  }
};

Spelling spelling(const std::string& metric) { return {model::MetricName(metric), model::unit_of(metric)}; }

QuantityDef metric_def(std::string name, Kind kind, const std::vector<std::string>& candidates) {
  QuantityDef d{std::move(name), kind};
  for (const auto& c : candidates) d.spellings.push_back(spelling(c));
  return d;
}

QuantityDef formula_def(std::string name, Kind kind, std::string unit, std::string formula) {
  QuantityDef d{std::move(name), kind};
  d.unit = std::move(unit);
  d.formula = std::move(formula);
  d.label = "derived:" + d.name;
  return d;
}

void add_stall_defs(std::vector<QuantityDef>& defs) {
  for (const auto& r : stall_reasons())
    defs.push_back(metric_def("stall_" + r, Kind::Stall, {stall_metric(r), legacy_stall_metric(r)}));
  defs.push_back(formula_def("stall_total", Kind::StallTotal, "", "sum of stall_<reason> over all reasons"));
  for (const auto& r : stall_reasons())
    defs.push_back(formula_def("stall_share_" + r, Kind::StallShare, "%", "stall_" + r + " / stall_total * 100"));
}

// Inputs are resolved by name after every quantity is listed.
void resolve_inputs(Catalogue& c) {
  for (auto& d : c.defs) {
    if (d.kind == Kind::StallShare) d.inputs = {c.id_of("stall_" + d.name.substr(std::strlen("stall_share_")))};
    if (d.kind != Kind::Derived) continue;
    for (const auto& in : d.derived->inputs) d.inputs.push_back(c.id_of(in));
  }
}

Catalogue make_catalogue() {
  Catalogue c;
  for (const auto& mq : metric_quantities()) c.defs.push_back(metric_def(mq.name, Kind::Metric, mq.candidates));
  add_stall_defs(c.defs);
  for (const auto& d : derived_defs()) {
    c.defs.push_back(formula_def(d.name, Kind::Derived, d.unit, d.formula));
    c.defs.back().derived = &d;
  }
  for (QuantityId i = 0; i < c.defs.size(); ++i) c.ids.emplace(c.defs[i].name, i);
  resolve_inputs(c);
  for (QuantityId i = 0; i < c.defs.size(); ++i) c.by_name.push_back(i);
  std::sort(c.by_name.begin(), c.by_name.end(),
            [&](QuantityId a, QuantityId b) { return c.defs[a].name < c.defs[b].name; });
  return c;
}

const Catalogue& catalogue() {
  static const Catalogue c = make_catalogue();
  return c;
}

const QuantityDef& def(QuantityId id) { return catalogue().defs[id]; }

}  // namespace

size_t quantity_count() { return catalogue().defs.size(); }
const std::string& quantity_name(QuantityId id) { return def(id).name; }

std::optional<QuantityId> quantity_id(std::string_view name) {
  QuantityId id = catalogue().id_of(name);
  return id == kNoQuantity ? std::nullopt : std::optional(id);
}

const std::vector<std::string>& stall_reasons() {
  static const std::vector<std::string> reasons = {
      "long_scoreboard", "short_scoreboard", "barrier",      "membar",     "mio_throttle", "lg_throttle",
      "math_pipe_throttle", "wait",          "branch_resolving", "no_instruction", "not_selected",
      "dispatch_stall",  "tex_throttle",     "drain",        "sleeping",   "imc_miss",     "misc"};
  return reasons;
}

Facts::Facts(const model::Report&, const model::Kernel& kernel)
    : k_(kernel), values_(quantity_count()), spelling_(quantity_count(), 0) {
  // Catalogue order is computation order: every input precedes its users.
  double stall_total = 0;
  for (QuantityId id = 0; id < values_.size(); ++id) {
    switch (def(id).kind) {
      case Kind::Metric:
      case Kind::Stall:
        compute_metric(id);
        if (def(id).kind == Kind::Stall && values_[id]) stall_total += *values_[id];
        break;
      case Kind::StallTotal:
        if (stall_total > 0) values_[id] = stall_total;
        break;
      case Kind::StallShare:
        compute_stall_share(id, stall_total);
        break;
      case Kind::Derived:
        compute_derived(id);
        break;
    }
  }
}

// The first spelling present with a finite value (older/newer ncu names).
void Facts::compute_metric(QuantityId id) {
  const auto& spellings = def(id).spellings;
  for (size_t i = 0; i < spellings.size(); ++i) {
    auto v = k_.number(spellings[i].metric);
    if (v && std::isfinite(*v)) {
      values_[id] = *v;
      spelling_[id] = static_cast<uint8_t>(i);
      return;
    }
  }
  if (def(id).kind == Kind::Metric) missing_.push_back(id);  // absent stall reasons are normal
}

void Facts::compute_stall_share(QuantityId id, double total) {
  auto stall = values_[def(id).inputs.front()];
  if (total > 0 && stall) values_[id] = 100 * *stall / total;
}

// Computed only when every input is present (else the quantity is missing);
// a formula with no finite result on present inputs leaves it absent only.
void Facts::compute_derived(QuantityId id) {
  const QuantityDef& d = def(id);
  double vals[kMaxInputs];
  size_t n = 0;
  for (QuantityId in : d.inputs) {
    if (in == kNoQuantity || !values_[in] || n == kMaxInputs) break;
    vals[n++] = *values_[in];
  }
  if (n != d.inputs.size()) {
    missing_.push_back(id);
    return;
  }
  auto v = d.derived->fn(std::span<const double>(vals, n));
  if (v && std::isfinite(*v)) values_[id] = *v;
}

std::optional<double> Facts::get(std::string_view name) const {
  auto id = quantity_id(name);
  return id ? values_[*id] : std::nullopt;
}

Evidence Facts::evidence(QuantityId id) const {
  const QuantityDef& d = def(id);
  if (d.kind == Kind::Metric || d.kind == Kind::Stall) {
    const Spelling& s = d.spellings[spelling_[id]];
    return Evidence{s.metric.name, *values_[id], s.unit, "", ""};
  }
  return Evidence{d.label, *values_[id], d.unit, "", d.formula};
}

namespace {

bool lists(const std::vector<Evidence>& out, const std::string& metric) {
  return std::any_of(out.begin(), out.end(), [&](const Evidence& e) { return e.metric == metric; });
}

}  // namespace

// The report values a quantity came from, in formula order, each metric once.
void Facts::add_inputs(QuantityId id, std::vector<Evidence>& out) const {
  const QuantityDef& d = def(id);
  switch (d.kind) {
    case Kind::Metric:
    case Kind::Stall:
      if (!lists(out, d.spellings[spelling_[id]].metric.name)) out.push_back(evidence(id));
      break;
    case Kind::StallTotal:
      break;
    case Kind::StallShare:
    case Kind::Derived:
      for (QuantityId in : d.inputs) add_inputs(in, out);
      break;
  }
}

void Facts::add_evidence(QuantityId id, std::vector<Evidence>& out) const {
  if (!values_[id]) return;
  if (def(id).kind == Kind::Metric || def(id).kind == Kind::Stall) return add_inputs(id, out);
  if (!lists(out, def(id).label)) out.push_back(evidence(id));
  add_inputs(id, out);
}

std::vector<Evidence> Facts::evidence_for(QuantityId id) const {
  std::vector<Evidence> out;
  add_evidence(id, out);
  return out;
}

std::vector<Evidence> Facts::evidence_for(std::string_view name) const {
  auto id = quantity_id(name);
  return id ? evidence_for(*id) : std::vector<Evidence>{};
}

std::vector<Evidence> Facts::all_evidence() const {
  std::vector<Evidence> out;
  out.reserve(
      static_cast<size_t>(std::count_if(values_.begin(), values_.end(), [](auto& v) { return v.has_value(); })));
  for (QuantityId id : catalogue().by_name)
    if (values_[id]) out.push_back(evidence(id));
  return out;
}

}  // namespace keet::analysis
