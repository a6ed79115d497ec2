#include "analysis/symbols.h"

namespace keet::analysis {
namespace {

// In ContextVar order.
constexpr std::string_view kContextNames[] = {
    "pipe_max_pct",   "fp_unfused_pct", "occupancy_limit_min", "occupancy_loss_pct", "cc",
    "issue_idle_pct", "duration_us",    "tiny_score",          "sm_idle_pct",        "divergence_pct",
    "bound_memory",   "bound_compute",  "bound_latency",       "bound_launch",       "share",
    "bound_pct",      "next_pct",       "occupancy_can_grow",  "small_grid",         "bound_is_l1",
    "launch_floor_ns"};
static_assert(std::size(kContextNames) == static_cast<size_t>(ContextVar::Count));

// In TextVar order.
constexpr std::string_view kTextNames[] = {"pipe_max_name", "fp_unfused_kind", "bound_name", "next_name"};
static_assert(std::size(kTextNames) == static_cast<size_t>(TextVar::Count));

}  // namespace

std::string_view context_var_name(ContextVar v) { return kContextNames[static_cast<size_t>(v)]; }

std::optional<TextVar> text_var(std::string_view name) {
  for (size_t i = 0; i < std::size(kTextNames); ++i)
    if (kTextNames[i] == name) return static_cast<TextVar>(i);
  return std::nullopt;
}

SymbolTable::SymbolTable() {
  for (QuantityId q = 0; q < quantity_count(); ++q) intern(quantity_name(q));
  for (auto name : kContextNames) intern(name);  // no quantity has these names (a unit test checks)
}

SymbolId SymbolTable::intern(std::string_view name) {
  if (auto id = find(name)) return *id;
  auto id = static_cast<SymbolId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  initial_.push_back(name.starts_with("ncu_warn_") ? std::optional(0.0) : std::nullopt);
  return id;
}

std::optional<SymbolId> SymbolTable::find(std::string_view name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? std::nullopt : std::optional(it->second);
}

}  // namespace keet::analysis
