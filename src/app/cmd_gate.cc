// keet gate R --baseline TAG|latest: fail CI when a kernel got slower.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/ci_flags.h"
#include "app/commands.h"
#include "app/compare.h"
#include "app/timeline_input.h"
#include "render/diff_gate.h"
#include "util/error.h"

namespace keet::app {
namespace {

struct GateArgs {
  ReportArgs report;
  std::string baseline = "latest", max_slowdown = "5%", min_delta = "0", format, output, db, source_root;
  std::string baseline_report;     // --baseline-report: a report file instead of the history
  std::vector<std::string> pairs;  // "I:J": baseline kernel I with report kernel J
  TimelineArgs timeline;           // --timeline: weigh the changes by the run
  double coverage_threshold = 0.5;
};

std::string describe(const GateArgs& a, const store::Run& run) {
  if (!a.baseline_report.empty()) return "baseline report " + a.baseline_report;
  std::string out = fmt::format("baseline run #{}", run.id);
  if (!run.tag.empty()) out += " tag " + run.tag;
  if (!run.commit.empty()) out += " commit " + run.commit.substr(0, 12);
  return out;
}

// --baseline-report OLD: last night's report, kept as a CI artifact, is the
// baseline; it is read and analysed as the report is (same -k, same launches).
Result<store::Run> baseline_from_report(Context& ctx, const GateArgs& a) {
  if (a.baseline != "latest") return fail(ExitCode::BadInput, "--baseline and --baseline-report: give one of them");
  ReportArgs r = a.report;
  r.path = a.baseline_report;
  r.paths.clear();
  KEET_TRY(old, load_and_analyse(ctx, r));
  if (old->kernels.empty()) return fail(ExitCode::BadInput, a.baseline_report + ": no kernels");
  store::Run run;
  run.kernels = std::move(old->kernels);
  return run;
}

Result<store::Run> find_baseline(Context& ctx, const GateArgs& a, const std::string& device) {
  if (!a.baseline_report.empty()) return baseline_from_report(ctx, a);
  KEET_TRY(db, open_history(ctx, a.db));
  KEET_TRY(base, (*db)->baseline(a.baseline, device));
  if (!*base)
    return fail(ExitCode::BadInput,
                fmt::format("no baseline '{}' recorded for device '{}' in {} (run keet record first)", a.baseline,
                            device, (*db)->describe()));
  return std::move(**base);
}

ExitCode run_gate(Context& ctx, const GateArgs& a) {
  auto outputs = output_list(a.output, a.format, format_names(kGateFormats));
  if (!outputs) return report_error(ctx, outputs.error());
  auto limit = fraction_flag("--max-slowdown", a.max_slowdown);
  if (!limit) return report_error(ctx, limit.error());
  auto min_delta = duration_flag("--min-delta", a.min_delta);
  if (!min_delta) return report_error(ctx, min_delta.error());
  auto forced = pair_flags(a.pairs);
  if (!forced) return report_error(ctx, forced.error());
  auto timeline = load_optional_timeline(ctx, a.timeline);
  if (!timeline) return report_error(ctx, timeline.error());
  auto current = load_and_analyse(ctx, a.report);
  if (!current) return report_error(ctx, current.error());
  if (current->kernels.empty()) return report_error(ctx, {ExitCode::BadInput, a.report.path + ": no kernels"});
  auto base = find_baseline(ctx, a, current->kernels.front().device);
  if (!base) return report_error(ctx, base.error());
  base->kernels = compare::select_snapshots(base->kernels, a.report.kernel);  // -k: the same kernels on both sides
  if (auto ok = compare::check_forced_pairs(base->kernels, current->kernels, *forced, "baseline", "report"); !ok)
    return report_error(ctx, ok.error());
  // Name-only pairing (unlike keet diff): the gate's exit status fails CI, and
  // a verdict on a guessed pair of differently named kernels could fail a
  // build, or pass it, on a comparison nobody asked for. A renamed kernel is
  // missing + new; the text report suggests the --pair that compares it.
  auto d = compare::diff(std::move(base->kernels), std::move(current->kernels),
                         {*limit, *forced, *min_delta, compare::Matching::NameOnly});
  std::vector<std::string> app_views;  // each output's, the timeline's coverage warned once
  for (const auto& o : *outputs)
    app_views.push_back(*timeline ? change_view(ctx, **timeline, d, a.coverage_threshold, o.format, app_views.empty())
                                  : "");
  auto g = compare::gate(std::move(d), *limit, *min_delta);
  g.report = a.report.path;
  g.baseline = describe(a, *base);
  g.source_root = a.source_root.empty() ? ctx.getenv("GITHUB_WORKSPACE") : a.source_root;  // Actions' checkout
  g.timestamp = io::utc_timestamp(ctx.clock());  // the form the Ant JUnit schema allows
  g.hostname = host_name();
  size_t written = 0;
  return write_outputs(
      ctx, *outputs,
      [&](const std::string& format, std::ostream& out) {
        out << write_format(kGateFormats, format, g) << app_views[written++];
      },
      g.failed() ? ExitCode::Failed : ExitCode::Ok);
}

}  // namespace

Command gate_command() {
  return {
      "gate", "compare with a recorded baseline; exit 1 on a performance regression",
      [](CLI::App& sub, Action& action) {
        auto a = std::make_shared<GateArgs>();
        add_report_args(sub, a->report);
        sub.add_option("--baseline", a->baseline, "tag of the baseline run, or 'latest'")->capture_default_str();
        sub.add_option("--baseline-report", a->baseline_report,
                       "a report file (e.g. last night's CI artifact) as the baseline, instead of the history");
        sub.add_option("--max-slowdown", a->max_slowdown, "allowed duration growth per kernel")->capture_default_str();
        sub.add_option("--min-delta", a->min_delta, "smallest absolute slowdown that fails (e.g. 2us; ns, us, ms, s)")
            ->capture_default_str();
        sub.add_option("--pair", a->pairs, "pair baseline kernel I with report kernel J (I:J, repeatable)");
        add_format(sub, a->format, format_names(kGateFormats));
        sub.add_option("--source-root", a->source_root,
                       "SARIF and GitHub paths are relative to this folder (default $GITHUB_WORKSPACE)");
        add_output_option(sub, a->output);
        add_db_option(sub, a->db);
        add_app_view_flags(sub, a->timeline, a->coverage_threshold);
        sub.callback([a, &action] { action = [a](Context& ctx) { return run_gate(ctx, *a); }; });
      }};
}

}  // namespace keet::app
