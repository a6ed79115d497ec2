// The names people use for quantities of the catalogue (data/metrics/
// quantities.json): nvprof-era metric names (achieved_occupancy,
// gld_efficiency, stall_exec_dependency) and colloquial ones (l2_hit_rate),
// each with the ncu metrics that carry it. A quantity lists them under
// "known_as"; nvprof's stall names are the "nvprof" table of "stalls". Served
// from the compiled catalogue of analysis/derived.cc, like every quantity.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace keet::analysis {

struct KnownName {
  std::string name;                     // "gld_efficiency"
  std::vector<std::string> quantities;  // what it names: {"ld_sector_use_pct"}; a sum names each term
  std::vector<std::string> metrics;     // ncu metrics that carry it: spellings, then the metrics its formulas name
  std::string formula;                  // "stall_short_scoreboard + stall_wait"; empty when a metric carries it alone
};

// Every known name, in catalogue order (quantities, then nvprof's stall names).
const std::vector<KnownName>& known_names();
// Case-insensitive; nullptr for a name the catalogue does not know.
const KnownName* find_known_name(std::string_view name);
// The known names a report metric is linked to (a decoration such as
// "breakdown:" removed), in catalogue order; `keet metrics --grep` matches
// them too. Only a quantity's own ncu spellings and the metrics its formulas
// name directly link, never the inputs of the quantities a formula names.
const std::vector<std::string>& known_names_of(std::string_view metric);
// Where the names come from (the Transition Guide, section files, fixtures).
const std::vector<std::string>& known_name_sources();

}  // namespace keet::analysis
