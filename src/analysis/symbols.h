// The names rule data may refer to, interned to dense ids once when the rules
// load. A kernel's values then live in one flat array indexed by id, so
// evaluating a rule or filling a template never hashes or compares a string.
//
// Ids are laid out as: every quantity Facts computes (a quantity's symbol is
// its QuantityId), then the engine's context values (ContextVar), then any
// other name the rule data uses (ncu_warn_<Rule>, ncu_speedup_<Rule>, ...).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/derived.h"

namespace keet::analysis {

using SymbolId = uint32_t;

// Values the engine works out for the rules on top of a kernel's quantities.
enum class ContextVar : uint8_t {
  PipeMaxPct,
  FpUnfusedPct,
  OccupancyLimitMin,
  OccupancyLossPct,
  Cc,
  IssueIdlePct,
  DurationUs,
  TinyScore,
  SmIdlePct,
  DivergencePct,
  BoundMemory,
  BoundCompute,
  BoundLatency,
  BoundLaunch,
  Share,
  BoundPct,          // utilisation of the binding unit, %
  NextPct,           // utilisation of the next-busiest unit, %
  OccupancyCanGrow,  // 1 when the grid supplies more CTAs per SM than the resources allow
  SmallGrid,         // 1 when the grid has fewer CTAs than the GPU has SMs
  BoundIsL1,         // the binding unit is L1/TEX or shared memory
  LaunchFloorNs,     // the shortest a kernel can run (findings.json estimates.launch_floor_ns)
  Count
};
std::string_view context_var_name(ContextVar v);

// Words (not numbers) a text template may name.
enum class TextVar : uint8_t { PipeMaxName, FpUnfusedKind, BoundName, NextName, Count };
std::optional<TextVar> text_var(std::string_view name);
using TextValues = std::array<std::optional<std::string>, static_cast<size_t>(TextVar::Count)>;

// Lets string-keyed maps be searched with a string_view, without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class SymbolTable {
 public:
  SymbolTable();
  SymbolId intern(std::string_view name);
  std::optional<SymbolId> find(std::string_view name) const;
  const std::string& name(SymbolId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }
  static SymbolId of(QuantityId q) { return q; }
  static SymbolId of(ContextVar v) { return static_cast<SymbolId>(quantity_count()) + static_cast<SymbolId>(v); }
  // What a kernel's values start as: unknown, except that ncu_warn_<Rule> is
  // 0 (ncu did not warn) when the report has no warning from that rule.
  const std::vector<std::optional<double>>& initial_values() const { return initial_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, SymbolId, StringHash, std::equal_to<>> ids_;
  std::vector<std::optional<double>> initial_;
};

}  // namespace keet::analysis
