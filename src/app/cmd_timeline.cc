// keet timeline R: where the whole run's GPU time goes, from an Nsight
// Systems report or its SQLite export (kernels by share, idle gaps, copies,
// launch latency, NVTX ranges, kernels that slow down over the run).
#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/timeline_input.h"
#include "render/timeline.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct TimelineCmdArgs {
  TimelineArgs input;
  std::string format;
  std::string output;
  size_t top = 20;
  double drift = 0.2;
  std::string names = "demangled";  // --name-base
};

constexpr FormatWriter<model::TimelineSummary, render::TimelineStyle> kTimelineFormats[] = {
    {"text", render::timeline_text},
    {"json", [](const model::TimelineSummary& t,
                const render::TimelineStyle& s) { return json_text(render::timeline_json(t, s), 2) + "\n"; }},
    {"html", render::timeline_html},
};

ExitCode run_timeline(Context& ctx, const TimelineCmdArgs& a, ProcessRunner& runner) {
  auto outputs = output_list(a.output, a.format, format_names(kTimelineFormats));
  if (!outputs) return report_error(ctx, outputs.error());
  auto t = load_timeline(ctx, a.input, runner);
  if (!t) return report_error(ctx, t.error());
  for (const auto& w : t->warnings) ctx.err << "keet: warning: " << w << "\n";
  render::TimelineStyle style{a.top, a.drift, ctx.color() && a.output.empty(),
                              a.output.empty() ? cell_width(ctx, 160) : 0};
  style.names = model::parse_name_base(a.names).value_or(model::NameBase::Demangled);
  return write_outputs(ctx, *outputs, [&](const std::string& format, std::ostream& out) {
    out << write_format(kTimelineFormats, format, *t, style);
  });
}

}  // namespace

Command timeline_command() {
  return {
      "timeline", "the whole run from Nsight Systems: kernels by share of GPU time, idle gaps, copies, latency, drift",
      [](CLI::App& sub, Action& action) {
        auto a = std::make_shared<TimelineCmdArgs>();
        add_timeline_flags(sub, a->input, true);
        add_format(sub, a->format, format_names(kTimelineFormats));
        add_output_option(sub, a->output);
        add_name_base(sub, a->names);
        sub.add_option("--top", a->top, "kernels and NVTX ranges listed (0 = all; JSON lists all)")
            ->capture_default_str();
        sub.add_option("--drift-threshold", a->drift,
                       "growth of a kernel's mean duration from its first to its last quarter of launches that "
                       "counts as drift (the drift table and the kernel-drift verdict)")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
        sub.callback([a, &action] { action = [a](Context& ctx) { return run_timeline(ctx, *a, system_runner()); }; });
      }};
}

}  // namespace keet::app
