#include "app/compare.h"

#include <fmt/format.h>

#include <chrono>

#include <CLI/CLI.hpp>

#include "analysis/arch.h"
#include "app/pipeline.h"
#include "io/file.h"

namespace keet::app {

Result<Analysed> load_and_analyse(Context& ctx, const ReportArgs& a) {
  Analysed out{a.path, {}};
  model::Report head;
  KEET_TRY(ok, analyse_kernels(ctx, a, {}, head, [&](model::Kernel&& k, const model::Report& h, auto&& d) {
             out.kernels.push_back(compare::snapshot(k, &d, &h));
             return true;
           }));
  if (ok->partial_exit != ExitCode::Ok)
    return fail(ok->partial_exit, fmt::format("{}: report is truncated (use --allow-partial)", a.path));
  return out;
}

void add_db_option(CLI::App& sub, std::string& db) {
  sub.add_option("--db", db,
                 "history database: PATH, sqlite:PATH or postgresql://... "
                 "(default $XDG_DATA_HOME/keet/history.sqlite)");
}

Result<std::unique_ptr<store::HistoryStore>> open_history(Context& ctx, const std::string& db) {
  if (!db.empty()) return store::open_store(db);
  return store::open_store(store::default_store_path(ctx.getenv("XDG_DATA_HOME"), ctx.getenv("HOME")));
}

Result<double> fraction_flag(const std::string& flag, const std::string& text) {
  auto v = compare::parse_fraction(text);
  if (!v) return fail(ExitCode::BadInput, fmt::format("{}: '{}' is not a percentage (e.g. 5%)", flag, text));
  return *v;
}

}  // namespace keet::app
