// keet tune: propose changes (LLM diffs, or -DNAME=value sweeps), apply each
// to a scratch copy, build, check, profile, and keep only measured wins.
#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/compare.h"
#include "app/tune.h"

namespace keet::app {

Command tune_command() {
  return {
      "tune", "optimisation loop: try changes in a scratch copy, build, check, profile, keep measured wins",
      [](CLI::App& sub, Action& action) {
        auto r = std::make_shared<TuneRequest>();
        sub.add_option("--root", r->root, "project tree, copied for every attempt")->capture_default_str();
        sub.add_option("--file", r->files,
                       "a file a change may touch, relative to --root (repeatable; needed without --sweep)");
        sub.add_option("--build", r->build,
                       "build command, run with /bin/sh in the copy ({defines}: the -D flags of --sweep)")
            ->required();
        sub.add_option("--run", r->run, "run command (what ncu profiles); its output must match the baseline's")
            ->required();
        sub.add_option("--check", r->check,
                       "correctness command run after --run instead of comparing outputs (exit 0: correct)");
        sub.add_option("-k,--kernel", r->kernel, "profile only this kernel: launch index, name, or regex:<pattern>");
        sub.add_option("--ncu", r->ncu, "ncu executable (default: $NCU, PATH, /usr/local/cuda*/bin)");
        sub.add_option("-o,--output", r->out_dir, "folder for reports, logs, diffs and the summary")
            ->capture_default_str();
        sub.add_option("--candidates", r->candidates, "changes to ask the LLM for per round")
            ->check(CLI::Range(1, 20))
            ->capture_default_str();
        sub.add_option("--rounds", r->rounds, "rounds, each starting from the best so far")
            ->check(CLI::Range(1, 20))
            ->capture_default_str();
        sub.add_option("--build-timeout", r->build_timeout_s, "seconds a build may take")
            ->check(CLI::Range(1, 86400))
            ->capture_default_str();
        sub.add_option("--run-timeout", r->run_timeout_s, "seconds a run (and --check) may take")
            ->check(CLI::Range(1, 86400))
            ->capture_default_str();
        sub.add_option("--profile-timeout", r->profile_timeout_s, "seconds ncu may take")
            ->check(CLI::Range(1, 86400))
            ->capture_default_str();
        sub.add_option("--threshold", r->threshold, "noise: a smaller change of the kernels' time is 'unchanged'")
            ->capture_default_str();
        sub.add_flag("--apply", r->apply, "write the winner's files into --root (atomically, file by file)");
        sub.add_option("--sweep", r->sweeps,
                       "NAME=v1,v2,... rebuilds with -DNAME=v and ranks by measured time (no LLM); NAME=auto: "
                       "block sizes from the occupancy calculator (repeatable: every combination)");
        add_format(sub, r->format, format_names(kTuneFormats));
        add_db_option(sub, r->db);
        sub.add_flag("--no-calibration", r->no_record, "do not store predicted vs measured speedups in the history");
        add_llm_args(sub, r->llm);
        sub.callback([r, &action] { action = [r](Context& ctx) { return run_tune(ctx, *r, system_runner()); }; });
      }};
}

}  // namespace keet::app
