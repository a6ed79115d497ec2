// keet export R --format csv|json: a drop-in for `ncu --import R --page raw
// --csv --print-units base`, or the whole model as JSON.
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "render/raw_csv.h"
#include "render/report_json.h"

namespace keet::app {
namespace {

struct ExportArgs {
  ReportArgs report;
  std::string format;
};

ExitCode run_export(Context& ctx, const ExportArgs& a) {
  readers::ReadOptions opt;
  opt.modules = false;
  opt.instances = true;  // json lists them; csv prints "" (not "no data") for a value-less metric that has them
  auto loaded = load_report(ctx, a.report, opt);
  if (!loaded) return report_error(ctx, loaded.error());
  if (a.format == "csv") ctx.out << render::raw_csv(loaded->report, loaded->selected);
  else ctx.out << render::report_json(loaded->report, loaded->selected).dump(1) << "\n";
  return loaded->partial_exit;
}

}  // namespace

Command export_command() {
  return {"export", "export metrics as ncu-compatible raw CSV or as JSON", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ExportArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, {"csv", "json"});
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_export(ctx, *a); }; });
          }};
}

}  // namespace keet::app
