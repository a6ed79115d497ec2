// keet profile [options] -- [ncu options] ./app args: run ncu, then analyse
// the report it wrote with analyze's flags.
//
// -o/--export is the report ncu writes (ncu adds .ncu-rep), as ncu has it,
// since the command runs ncu. -f means --format, as in every other command;
// ncu's --force-overwrite has only its long name here, so a short flag never
// means two things. The analysis goes to stdout, or to --analysis-output FILE.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/analyze.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/profile.h"
#include "app/profile_nsys.h"

namespace keet::app {
namespace {

struct ProfileArgs {
  ProfileRequest request;
  AnalyzeArgs analysis;
  bool nsys = false;  // --nsys: a timeline first, then ncu on its hottest kernels
  NsysProfileRequest timeline;
};

ExitCode run_profile(Context& ctx, ProfileArgs a, ProcessRunner& runner) {
  const ProfileRequest& r = a.request;
  auto tail = split_tail(r.tail);
  if (!tail) return report_error(ctx, tail.error());
  auto ncu = find_ncu(r.ncu, ctx.getenv);
  if (!ncu) return report_error(ctx, ncu.error());
  std::string name = r.output.empty() ? default_report_path(tail->app) : r.output;
  std::string report = ncu_report_file(name);  // what ncu writes for -o name
  auto args = ncu_arguments(*ncu, r, name);
  if (!args) return report_error(ctx, args.error());
  if (auto ok = prepare_report_path(report, r.force); !ok) return report_error(ctx, ok.error());
  ctx.err << "keet: running " << fmt::format("{}", fmt::join(*args, " ")) << "\n";
  OutputTail output;
  auto status = runner.run(
      *args,
      [&](std::string_view chunk) {
        output.add(chunk);
        ctx.err << chunk;  // ncu's progress stays visible
      },
      std::chrono::seconds(r.timeout_s));
  if (!status) return report_error(ctx, status.error());
  if (auto ok = check_ncu_outcome(*status, output.text(), report); !ok) return report_error(ctx, ok.error());
  if (*status != 0)
    ctx.err << fmt::format("keet: warning: ncu exited with status {}; analysing what it wrote\n", *status);
  ctx.err << "keet: report written to " << report << "\n";
  a.analysis.report.path = report;
  a.analysis.report.allow_partial = true;  // ncu's own output, whatever it managed to write
  return run_analyze(ctx, a.analysis);
}

void add_ncu_flags(CLI::App& sub, ProfileRequest& r) {
  sub.add_option("--ncu", r.ncu, "ncu executable (default: $NCU, PATH, /usr/local/cuda*/bin)");
  sub.add_option("-o,--export", r.output, "report ncu writes (ncu adds .ncu-rep; default <app>.ncu-rep)");
  sub.add_flag("--force-overwrite", r.force,
               "replace an existing report (as ncu; -f means --format here, as in every command)");
  sub.add_option("--set", r.set, "ncu section set (default: full, with source counters and imported source)");
  sub.add_option("--section", r.sections, "collect this ncu section (repeatable); alone, only these sections");
  sub.add_option("-k,--kernel", r.kernel,
                 "profile only this kernel: launch index, or ncu's --kernel-name (name, regex:<pattern>)");
  sub.add_option("--kernel-name-base", r.name_base, "name -k is matched against (as ncu; default function)")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}));
  sub.add_option("-s,--launch-skip", r.skip, "skip this many matching launches (as ncu)");
  sub.add_option("-c,--launch-count", r.count, "profile at most this many matching launches (as ncu)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--timeout", r.timeout_s, "stop ncu and its processes after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
}

void add_analysis_flags(CLI::App& sub, AnalyzeArgs& a) {
  a.format = analyze_format_names().front();
  sub.add_option("-f,--format", a.format, "analysis format, as analyze")
      ->check(CLI::IsMember(analyze_format_names()))
      ->capture_default_str();
  sub.add_option("--top", a.top, "findings shown per kernel (0 = all)")->capture_default_str();
  sub.add_option("--analysis-output", a.output, "write the analysis to this file instead of stdout (analyze's -o)");
  sub.add_option("--print-summary", a.summary, "per-kernel: one diagnosis per kernel and launch configuration")
      ->check(CLI::IsMember({"none", "per-kernel"}))
      ->capture_default_str();
  sub.add_option("--launches", a.launches, "fold or all: identical launches share one diagnosis, as analyze")
      ->check(CLI::IsMember({"fold", "all"}))
      ->capture_default_str();
}

}  // namespace

Command profile_command() {
  return {
      "profile",
      "run ncu on an application, then analyse the report: keet profile [options] -- [ncu options] ./app [args]",
      [](CLI::App& sub, Action& action) {
        auto a = std::make_shared<ProfileArgs>();
        add_ncu_flags(sub, a->request);
        add_analysis_flags(sub, a->analysis);
        sub.add_flag("--nsys", a->nsys,
                     "run Nsight Systems first, then ncu only on the kernels with most of the GPU time (-k, -s "
                     "and -c give way), then analyse them weighed by the timeline");
        sub.add_option("--nsys-path", a->timeline.nsys, "nsys executable (default: $NSYS, PATH, /usr/local/cuda*/bin)");
        sub.add_option("--top-kernels", a->timeline.top, "with --nsys: how many of the hottest kernels ncu profiles")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
        sub.add_option("app", a->request.tail,
                       "after --: any other ncu options (passed on verbatim), then the application and its "
                       "arguments")
            ->required();
        sub.callback([a, &action] {
          action = [a](Context& ctx) {
            return a->nsys ? run_profile_nsys(ctx, a->request, a->timeline, system_runner())
                           : run_profile(ctx, *a, system_runner());
          };
        });
      }};
}

}  // namespace keet::app
