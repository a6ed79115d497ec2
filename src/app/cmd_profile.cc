// keet profile -- ./app args: run ncu with a full collection, then analyse.
#include <fmt/format.h>

#include <filesystem>

#include "analysis/engine.h"
#include "analysis/ranking.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/profile.h"
#include "app/profile_nsys.h"
#include "render/analysis_text.h"

namespace keet::app {
namespace {

ExitCode analyse_report(Context& ctx, const std::string& path) {
  ReportArgs args{.path = path, .allow_partial = true};
  auto loaded = load_report(ctx, args);
  if (!loaded) return report_error(ctx, loaded.error());
  auto d = analysis::analyze(loaded->report, loaded->selected);
  ctx.out << render::analysis_text(d, analysis::rank_kernels(loaded->selected), render::TextStyle{ctx.color(), false});
  return ExitCode::Ok;
}

ExitCode run_profile(Context& ctx, const ProfileRequest& r, ProcessRunner& runner) {
  auto ncu = find_ncu(r.ncu, ctx.getenv);
  if (!ncu) return report_error(ctx, ncu.error());
  std::string name = r.output.empty() ? default_report_path(r.app) : r.output;
  std::string report = ncu_report_file(name);  // what ncu writes for -o name
  // A report left from an earlier run must not pass for this one's.
  std::error_code ec;
  std::filesystem::remove(report, ec);
  auto args = ncu_arguments(*ncu, r, name);
  ctx.err << "keet: running " << fmt::format("{}", fmt::join(args, " ")) << "\n";
  OutputTail output;
  auto status = runner.run(
      args,
      [&](std::string_view chunk) {
        output.add(chunk);
        ctx.err << chunk;  // ncu's progress stays visible
      },
      std::chrono::seconds(r.timeout_s));
  if (!status) return report_error(ctx, status.error());
  if (auto ok = check_ncu_outcome(*status, output.text(), report); !ok) return report_error(ctx, ok.error());
  if (*status != 0) ctx.err << fmt::format("keet: warning: ncu exited with status {}; analysing what it wrote\n", *status);
  ctx.err << "keet: report written to " << report << "\n";
  return analyse_report(ctx, report);
}

}  // namespace

Command profile_command() {
  return {"profile", "run ncu on an application (full collection, source counters), then analyse the report",
          [](CLI::App& sub, Action& action) {
            auto r = std::make_shared<ProfileRequest>();
            auto timeline = std::make_shared<bool>(false);
            auto n = std::make_shared<NsysProfileRequest>();
            sub.add_flag("--nsys", *timeline,
                         "run Nsight Systems first, then ncu only on the kernels with most of the GPU time (-k is "
                         "ignored), then analyse them weighed by the timeline");
            sub.add_option("--nsys-path", n->nsys, "nsys executable (default: $NSYS, PATH, /usr/local/cuda*/bin)");
            sub.add_option("--top-kernels", n->top, "with --nsys: how many of the hottest kernels ncu profiles")
                ->check(CLI::PositiveNumber)
                ->capture_default_str();
            sub.add_option("--ncu", r->ncu, "ncu executable (default: $NCU, PATH, /usr/local/cuda*/bin)");
            sub.add_option("-k,--kernel", r->kernel, "profile only this kernel: launch index, name, or regex:<pattern>");
            sub.add_option("-o,--output", r->output, "report to write (ncu adds .ncu-rep; default <app>.ncu-rep)");
            sub.add_option("--timeout", r->timeout_s, "stop ncu and its processes after this many seconds (0: never)")
                ->check(CLI::NonNegativeNumber);
            sub.add_option("app", r->app, "application and its arguments (after --)")->required();
            sub.callback([r, timeline, n, &action] {
              action = [r, timeline, n](Context& ctx) {
                return *timeline ? run_profile_nsys(ctx, *r, *n, system_runner()) : run_profile(ctx, *r, system_runner());
              };
            });
          }};
}

}  // namespace keet::app
