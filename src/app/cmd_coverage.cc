// keet coverage R: how KEET's findings cover ncu's own guided-analysis warnings.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/engine.h"
#include "analysis/ncu_coverage.h"
#include "app/commands.h"
#include "app/common.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct CoverageArgs {
  ReportArgs report;
  std::string format;
};

struct Row {
  int kernel;
  analysis::RuleCoverage c;
};

Result<std::vector<Row>> collect(const Loaded& l) {
  std::vector<Row> rows;
  for (const auto* k : l.selected) {
    auto diag = analysis::analyze_kernel(l.report, *k, {0});
    auto cov = analysis::ncu_coverage(*k, diag);
    if (!cov) return std::unexpected(cov.error());
    for (auto& c : *cov) rows.push_back({k->index, std::move(c)});
  }
  return rows;
}

ExitCode run_coverage(Context& ctx, const CoverageArgs& a) {
  auto loaded = load_report(ctx, a.report);
  if (!loaded) return report_error(ctx, loaded.error());
  auto rows = collect(*loaded);
  if (!rows) return report_error(ctx, rows.error());
  int uncovered = 0;
  for (const auto& r : *rows) uncovered += r.c.status == analysis::Coverage::Uncovered;
  if (a.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *rows)
      arr.push_back({{"kernel", r.kernel}, {"rule", r.c.rule}, {"status", analysis::coverage_name(r.c.status)},
                     {"matched_by", r.c.matched_by}, {"message", r.c.message}});
    ctx.out << json_text(nlohmann::json{{"warnings", arr}, {"uncovered", uncovered}}, 2) << "\n";
  } else {
    render::Table t({"kernel", "ncu rule", "status", "KEET"});
    for (const auto& r : *rows)
      t.add({std::to_string(r.kernel), r.c.rule, std::string(analysis::coverage_name(r.c.status)), r.c.matched_by});
    ctx.out << t.str(70) << fmt::format("{} ncu warning(s), {} not covered\n", rows->size(), uncovered);
  }
  return loaded->partial_exit;
}

}  // namespace

Command coverage_command() {
  return {"coverage", "check that every ncu rule warning is covered by a KEET finding", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<CoverageArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, {"table", "json"});
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_coverage(ctx, *a); }; });
          }};
}

}  // namespace keet::app
