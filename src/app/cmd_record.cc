// keet record R: store the report's kernels in the performance history.
#include <chrono>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/compare.h"

namespace keet::app {
namespace {

struct RecordArgs {
  ReportArgs report;
  std::string tag, commit, db;
};

// CI systems export the commit being built; record it when --commit is absent.
std::string commit_from_env(Context& ctx) {
  for (const char* name : {"GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT"})
    if (auto v = ctx.getenv(name); !v.empty()) return v;
  return "";
}

ExitCode run_record(Context& ctx, const RecordArgs& a) {
  auto analysed = load_and_analyse(ctx, a.report);
  if (!analysed) return report_error(ctx, analysed.error());
  if (analysed->kernels.empty())
    return report_error(ctx, {ExitCode::BadInput, a.report.path + ": no kernels to record"});
  auto db = open_history(ctx, a.db);
  if (!db) return report_error(ctx, db.error());
  store::Run run{0,
                 a.tag,
                 a.commit.empty() ? commit_from_env(ctx) : a.commit,
                 ctx.clock() / 1000,
                 a.report.path,
                 std::move(analysed->kernels)};
  // The previous run of this tag on this device and this one are a
  // before/after pair: its resolved findings are calibration points.
  auto previous = (*db)->baseline(run.tag.empty() ? "latest" : run.tag, run.device());
  auto id = (*db)->record(run);
  if (!id) return report_error(ctx, id.error());
  if (previous && *previous) {
    // By name only: a calibration point from a guessed pair of renamed kernels would skew keet calibrate.
    auto d = compare::diff(std::move((*previous)->kernels), run.kernels, {.matching = compare::Matching::NameOnly});
    if (auto c = (*db)->add_calibration(compare::calibration_points(d, "record", run.recorded_at)); !c)
      ctx.err << "keet: warning: calibration not stored: " << c.error().message << "\n";
  }
  ctx.out << fmt::format("recorded run #{}: {} kernel(s) on {}{} into {}\n", *id, run.kernels.size(),
                         run.device().empty() ? "unknown device" : run.device(),
                         run.tag.empty() ? "" : " (tag " + run.tag + ")", (*db)->describe());
  return ExitCode::Ok;
}

}  // namespace

Command record_command() {
  return {"record", "store the report's kernels (durations, key metrics, findings) in the history",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<RecordArgs>();
            add_report_args(sub, a->report);
            sub.add_option("--tag", a->tag, "label for this run (branch, release), used by gate --baseline");
            sub.add_option("--commit", a->commit, "commit SHA (default $GITHUB_SHA / $CI_COMMIT_SHA)");
            add_db_option(sub, a->db);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_record(ctx, *a); }; });
          }};
}

}  // namespace keet::app
