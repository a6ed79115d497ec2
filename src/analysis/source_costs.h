// Per-PC source counters summed per CUDA source line (or per SASS instruction
// when the cubin has no line table).
//
// ncu stores instruction-level metrics ("source counters") as instance lists
// keyed by the absolute PC of each SASS instruction (inst_executed,
// smsp__pcsamp_sample_count, smsp__pcsamp_warps_issue_stalled_<reason>,
// thread_inst_executed, derived__memory_*_excessive, ...). This module maps
// those PCs to source lines through the module's cubin (readers/cubin.h) and
// sums every PC metric per line.
//
// Typical use by the analysis engine (build the table once per kernel, then
// ask it per finding):
//
//   SourceTable t = source_table(report, kernel);
//   auto refs = hottest_lines(t, "smsp__pcsamp_warps_issue_stalled_long_scoreboard", 3);
//
// or, for a one-off query, hottest_lines_for(report, kernel, metric, n).
//
// Which PC metrics are summed, which are not additive (enum codes, averages)
// and the short column names ("samples", "instructions", ...) come from
// data/source/columns.json.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::analysis {

// One row of the table: a source line (file, line > 0) or, in the SASS view,
// one instruction (file empty, line 0, `offset` = PC - kernel start).
struct SourceLineCost {
  std::string file;  // path as the cubin's line table names it
  int line = 0;
  uint64_t offset = 0;          // lowest instruction offset on this line (bytes from kernel start)
  int instructions_mapped = 0;  // SASS instructions with data folded into this row
  std::string text;             // the line's code when the report embeds the file, else ""
  std::string sass;             // SASS rows: the instruction, once analysis/sass.h has filled it
  // Sum over the row's PCs of every additive PC-keyed metric, by metric name.
  std::map<std::string, double, std::less<>> metrics;

  double value(std::string_view metric) const;  // 0 when absent
  double samples() const;                       // smsp__pcsamp_sample_count
  double executed_instructions() const;         // inst_executed
  double thread_instructions() const;           // thread_inst_executed
  double excess_global_sectors() const;         // derived__memory_l2_theoretical_sectors_global_excessive
  double excess_shared_wavefronts() const;      // derived__memory_l1_wavefronts_shared_excessive
  // Per stall reason ("long_scoreboard", ...) sampled warps, largest first.
  std::vector<std::pair<std::string, double>> stalls() const;
  bool is_sass() const { return line == 0; }
};

enum class SourceLevel {
  None,    // no per-PC source counters (or no kernel start PC)
  Sass,    // per-PC counters, but no line table: one row per instruction
  Source,  // rows are CUDA source lines
};

struct SourceTable {
  SourceLevel level = SourceLevel::None;
  std::vector<SourceLineCost> lines;  // sorted by `sorted_by`, largest first
  // Kernel-wide sum per metric over all PCs (the denominator of shares).
  std::map<std::string, double, std::less<>> totals;
  std::string sorted_by;           // metric name
  uint64_t kernel_start = 0;       // launch__function_pcs
  std::vector<std::string> notes;  // why there is no source view, cubin warnings, ...

  // Fraction (0..1) of `metric`'s kernel total on `row`; 0 when the total is 0.
  double share(const SourceLineCost& row, std::string_view metric) const;
  bool has(std::string_view metric) const { return totals.contains(metric); }
};

// Builds the table for one kernel, sorted by the default cost metric
// (stall samples when sampled, else executed instructions).
SourceTable source_table(const model::Report& report, const model::Kernel& kernel);
// The same table over only these PC metrics (full names, not aliases): rows
// and shares of those metrics are as in the whole table, and the per-PC lists
// of the kernel's other metrics are never decoded (a finding's hot lines).
SourceTable source_table(const model::Report& report, const model::Kernel& kernel,
                         const std::vector<std::string>& only);

// Re-sorts by `metric` (ties: file, line, offset).
void sort_by(SourceTable& table, std::string_view metric);

// "samples", "instructions", "thread_instructions", "excess_global_sectors",
// "excess_shared_wavefronts", a stall reason ("long_scoreboard"), or a full
// metric name: the metric name it stands for.
std::string resolve_metric(std::string_view alias);

// Where the kernel's code starts: the source line of its first instruction
// that the cubin's line table covers (the function's opening line in a
// -lineinfo build). Needs launch__function_pcs and an embedded cubin with a
// line table; nullopt otherwise. Cheap: the cubin is decoded once per module.
std::optional<SourceRef> kernel_location(const model::Report& report, const model::Kernel& kernel);

// The rows of source_table(), sorted by default cost.
std::vector<SourceLineCost> source_lines(const model::Report& report, const model::Kernel& kernel);

// The n rows with the largest positive share of `metric` (a name or alias).
// In the SASS view a ref has file "", line 0, text "SASS +0x<offset>" and the
// row's instruction in `sass` (when analysis/sass.h has filled the table's).
// Empty when the kernel has no per-PC values of `metric`.
std::vector<SourceRef> hottest_lines(const SourceTable& table, std::string_view metric, size_t n);
std::vector<SourceRef> hottest_lines_for(const model::Report& report, const model::Kernel& kernel,
                                         std::string_view metric, size_t n);

}  // namespace keet::analysis
