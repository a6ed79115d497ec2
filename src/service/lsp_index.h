// What `keet lsp` knows about source code: for every loaded report, each
// kernel's summary (for code lenses) and the source lines it spends its cost
// on (for diagnostics and hovers), made from the kernel's per-PC source
// counters (analysis/source_costs.h) and its diagnosis. Only numbers the
// report holds or the engine derived from it are kept; nothing is estimated here.
//
// Typical use (app/cmd_lsp.cc, from the one pipeline's sink):
//   LspIndex index;
//   analyse_kernels(..., [&](Kernel&& k, const Report& head, KernelDiagnosis&& d) {
//     index.add(path, head, k, d);  return true; });
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/diagnosis.h"
#include "model/report.h"

namespace keet::service {

// Why a kernel marks no source line, each with its own fix.
enum class LspLineGap {
  None,              // it marks lines
  NoSourceCounters,  // the report has no per-instruction counters: profile with --set full
  NoLineTable,       // its cubin has no line table: compile with -lineinfo
  Unmapped,          // the line table maps none of its costly instructions
};

// One kernel of a loaded report, as its code lens and the hovers show it.
struct LspKernel {
  std::string report;  // the report's path
  model::KernelIdentity identity;
  std::string function;        // the function's own name, to find its definition in a source file
  std::string bottleneck;      // "memory-bound", "latency-bound", "insufficient data"
  std::string top_finding;     // title of the most impactful finding; "" when none
  std::string top_finding_id;  // its id ("memory.uncoalesced_global")
  std::optional<double> top_speedup;
  std::string cost_metric;  // what line shares are of: "stall samples" or "executed instructions"
  double cost_total = 0;    // the kernel's total of that metric
  // Where its code starts (the line of its first instruction), when the
  // report's cubin has a line table.
  std::optional<analysis::SourceRef> start;
  LspLineGap line_gap = LspLineGap::None;
};

// A finding whose cost a line carries.
struct LspLineFinding {
  std::string id, title;
  analysis::Severity severity = analysis::Severity::Info;
  double share = 0;  // of the finding's cost on this line
  std::optional<double> speedup;
};

// One source line one kernel spends cost on.
struct LspLine {
  std::string file;  // as the report's line table names it
  int line = 0;
  size_t kernel = 0;  // into LspIndex::kernels
  double share = 0;   // of the kernel's cost_metric
  double cost = 0;    // the line's value of that metric
  double samples = 0, instructions = 0;
  std::vector<std::pair<std::string, double>> stalls;  // reason, share of the line's samples; largest first, 3 at most
  std::vector<LspLineFinding> findings;
};

struct LspIndex {
  std::vector<LspKernel> kernels;
  std::vector<LspLine> lines;
  std::vector<std::string> notes;  // why a kernel gives no lines

  // Adds one diagnosed kernel of the report at `report_path`.
  void add(const std::string& report_path, const model::Report& head, const model::Kernel& kernel,
           const analysis::KernelDiagnosis& diagnosis);
};

// How well a path in a report names a file of the workspace: the number of
// trailing path components the two share (0 when the file names differ).
// Backslashes count as slashes; "." components are ignored.
int shared_suffix(std::string_view report_path, std::string_view file);

// Whether `file` (absolute) is the report's `report_path` under `source_root`:
// the file lies under the root and the report's path ends with its path
// relative to the root (the report may name it relatively, or absolutely on
// the machine that profiled). Returns the number of components matched, 0 when not.
int rooted_match(std::string_view report_path, std::string_view file, std::string_view source_root);

// Why no line of a kernel with this gap is marked, and the one-line fix; ""
// for LspLineGap::None.
std::string line_gap_text(LspLineGap gap);

// Column-free text helpers the server shares with its tests.
std::string percent(double fraction);  // 0.234 -> "23.4%"

}  // namespace keet::service
