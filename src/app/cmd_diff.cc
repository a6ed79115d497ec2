// keet diff BEFORE AFTER: did the change make the kernels faster, and why.
#include <utility>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/ci_flags.h"
#include "app/commands.h"
#include "app/compare.h"
#include "app/timeline_input.h"
#include "render/html.h"
#include "util/error.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct DiffArgs {
  ReportArgs before, after;
  std::string format, output, threshold = "2%", min_delta = "0";
  std::string db;                  // --db: store the pairs' calibration points there
  std::vector<std::string> pairs;  // "I:J"
  bool names_only = false;         // --names-only: no pairing of renamed kernels
  TimelineArgs timeline;           // --timeline: weigh the changes by the run
  double coverage_threshold = 0.5;
};

Result<compare::DiffOptions> diff_options(const DiffArgs& a) {
  compare::DiffOptions opt;
  KEET_TRY(threshold, fraction_flag("--threshold", a.threshold));
  opt.threshold = *threshold;
  KEET_TRY(min_delta, duration_flag("--min-delta", a.min_delta));
  opt.min_delta_ns = *min_delta;
  KEET_TRY(forced, pair_flags(a.pairs));
  opt.forced = *forced;
  // A person reads a diff, and every rendering says how each pair was made, so
  // a renamed kernel is paired (the only kernel of each report, or by launch
  // configuration and order) rather than left as missing + new.
  opt.matching = a.names_only ? compare::Matching::NameOnly : compare::Matching::NameThenRenamed;
  return opt;
}

std::string diff_json_text(const compare::DiffResult& d) { return json_text(compare::diff_json(d), 2) + "\n"; }

constexpr FormatWriter<compare::DiffResult> kDiffFormats[] = {
    {"text", render::diff_text},
    {"markdown", render::diff_markdown},
    {"json", diff_json_text},
    {"html", render::html_diff},
};

ExitCode run_diff(Context& ctx, const DiffArgs& a) {
  auto opt = diff_options(a);
  if (!opt) return report_error(ctx, opt.error());
  auto outputs = output_list(a.output, a.format, format_names(kDiffFormats));
  if (!outputs) return report_error(ctx, outputs.error());
  auto timeline = load_optional_timeline(ctx, a.timeline);
  if (!timeline) return report_error(ctx, timeline.error());
  auto before = load_and_analyse(ctx, a.before);
  if (!before) return report_error(ctx, before.error());
  auto after = load_and_analyse(ctx, a.after);
  if (!after) return report_error(ctx, after.error());
  if (auto ok = compare::check_forced_pairs(before->kernels, after->kernels, opt->forced); !ok)
    return report_error(ctx, ok.error());
  auto result = compare::diff(std::move(before->kernels), std::move(after->kernels), *opt);
  if (!a.db.empty()) {
    auto db = store::open_store(a.db);
    if (!db) return report_error(ctx, db.error());
    if (auto r = (*db)->add_calibration(compare::calibration_points(result, "diff", ctx.clock() / 1000)); !r)
      return report_error(ctx, r.error());
  }
  bool warned = false;  // the timeline's coverage, once however many outputs
  return write_outputs(ctx, *outputs, [&](const std::string& format, std::ostream& out) {
    std::string app_view =
        *timeline ? change_view(ctx, **timeline, result, a.coverage_threshold, format, !std::exchange(warned, true))
                  : "";
    if (format == "json")
      compare::write_diff_json(out, result);  // a 20,000-pair document is written pair by pair
    else
      out << write_format(kDiffFormats, format, result) << app_view;
  });
}

}  // namespace

Command diff_command() {
  return {
      "diff", "compare two reports: faster or slower, findings resolved, bottleneck shift",
      [](CLI::App& sub, Action& action) {
        auto a = std::make_shared<DiffArgs>();
        sub.add_option("before", a->before.path, "report before the change")->required();
        sub.add_option("after", a->after.path, "report after the change")->required();
        add_format(sub, a->format, format_names(kDiffFormats));
        sub.add_option("--pair", a->pairs, "pair kernel I of BEFORE with kernel J of AFTER (I:J, repeatable)");
        sub.add_flag("--names-only", a->names_only,
                     "pair kernels by name (and --pair) only: a renamed kernel stays missing + new");
        sub.add_option("--threshold", a->threshold, "noise threshold on the duration change")->capture_default_str();
        sub.add_option("--min-delta", a->min_delta,
                       "absolute duration change below which a pair is unchanged (e.g. 2us)")
            ->capture_default_str();
        add_output_option(sub, a->output);
        sub.add_flag("--allow-partial", a->before.allow_partial, "accept truncated reports");
        add_name_base(sub, a->before.name_shown);
        add_app_view_flags(sub, a->timeline, a->coverage_threshold);
        sub.add_option("--db", a->db,
                       "store each resolved finding's predicted and measured speedup in this history (keet calibrate)");
        sub.callback([a, &action] {
          a->after.allow_partial = a->before.allow_partial;
          a->after.name_shown = a->before.name_shown;
          action = [a](Context& ctx) { return run_diff(ctx, *a); };
        });
      }};
}

}  // namespace keet::app
