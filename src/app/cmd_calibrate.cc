// keet calibrate: how the engine's estimated speedups compare with measured
// ones, per rule and architecture, over every before/after pair the history
// holds (keet tune, keet diff --db, keet record).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/compare.h"
#include "compare/calibration.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct CalibrateArgs {
  std::string db, format;
};

nlohmann::json calibration_json(const std::vector<compare::CalibrationRow>& rows, size_t points,
                                const std::string& db) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"rule", r.rule},
                   {"arch", r.arch},
                   {"count", r.count},
                   {"median_ratio", r.median_ratio},
                   {"min_ratio", r.min_ratio},
                   {"max_ratio", r.max_ratio},
                   {"median_predicted", r.median_predicted},
                   {"median_measured", r.median_measured}});
  return {{"schema", "keet.calibration/1"}, {"database", db}, {"points", points}, {"rows", out}};
}

std::string calibration_text(const std::vector<compare::CalibrationRow>& rows, size_t points, const std::string& db) {
  if (rows.empty())
    return fmt::format("no calibration points in {}: keet tune, keet diff --db and keet record store them\n", db);
  std::string out = fmt::format(
      "{} point(s) in {}; ratio = measured / predicted speedup (1.00: the estimate came true)\n", points, db);
  out += fmt::format("{:<36} {:<18} {:>5} {:>8} {:>15} {:>10} {:>10}\n", "rule", "arch", "pairs", "ratio", "spread",
                     "predicted", "measured");
  for (const auto& r : rows)
    out += fmt::format("{:<36} {:<18} {:>5} {:>8.2f} {:>15} {:>9.2f}x {:>9.2f}x\n", r.rule, r.arch, r.count,
                       r.median_ratio, fmt::format("{:.2f}-{:.2f}", r.min_ratio, r.max_ratio), r.median_predicted,
                       r.median_measured);
  return out;
}

struct CalibrationAnswer {
  std::vector<compare::CalibrationRow> rows;
  size_t points = 0;
  std::string db;
};
constexpr FormatWriter<CalibrationAnswer> kCalibrateFormats[] = {
    {"text", [](const CalibrationAnswer& c) { return calibration_text(c.rows, c.points, c.db); }},
    {"json", [](const CalibrationAnswer& c) { return json_text(calibration_json(c.rows, c.points, c.db), 2) + "\n"; }},
};

ExitCode run_calibrate(Context& ctx, const CalibrateArgs& a) {
  auto db = open_history(ctx, a.db);
  if (!db) return report_error(ctx, db.error());
  auto points = (*db)->calibration_points();
  if (!points) return report_error(ctx, points.error());
  ctx.out << write_format(
      kCalibrateFormats, a.format,
      CalibrationAnswer{compare::summarise_calibration(*points), points->size(), (*db)->describe()});
  return ExitCode::Ok;
}

}  // namespace

Command calibrate_command() {
  return {"calibrate",
          "predicted vs measured speedups per rule and architecture, from the history's before/after pairs",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<CalibrateArgs>();
            add_db_option(sub, a->db);
            add_format(sub, a->format, format_names(kCalibrateFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_calibrate(ctx, *a); }; });
          }};
}

}  // namespace keet::app
