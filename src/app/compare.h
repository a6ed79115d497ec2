// Shared by diff, record, gate and profile: a report loaded, analysed and
// reduced to kernel snapshots, plus the history database flag.
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "app/common.h"
#include "render/diff.h"
#include "store/history.h"

namespace keet::app {

// Kernels stream through the engine and only their snapshots (identity,
// duration, key metrics, finding summaries) are kept, so comparing two
// 20,000-kernel reports holds neither report in memory.
struct Analysed {
  std::string path;
  std::vector<compare::KernelSnapshot> kernels;
};
Result<Analysed> load_and_analyse(Context& ctx, const ReportArgs& a);

// --db URL; default $XDG_DATA_HOME/keet/history.sqlite (or ~/.local/share/...).
void add_db_option(CLI::App& sub, std::string& db);
Result<std::unique_ptr<store::HistoryStore>> open_history(Context& ctx, const std::string& db);

// Parses a percentage flag ("5%", "0.05") or fails naming the flag.
Result<double> fraction_flag(const std::string& flag, const std::string& text);

}  // namespace keet::app
