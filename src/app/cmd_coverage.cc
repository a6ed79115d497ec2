// keet coverage R: how KEET's findings cover ncu's own guided-analysis warnings.
#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/engine.h"
#include "analysis/ncu_coverage.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/pipeline.h"
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

// Kernels stream through the engine; only their coverage rows are kept.
struct Collected {
  std::vector<Row> rows;
  ExitCode partial_exit = ExitCode::Ok;
};

Result<Collected> collect(Context& ctx, const CoverageArgs& a) {
  Collected c;
  std::optional<Error> failure;
  model::Report head;
  KEET_TRY(ok, analyse_kernels(ctx, a.report, {}, head, [&](model::Kernel&& k, const model::Report&, auto&& diag) {
             auto cov = analysis::ncu_coverage(k, diag);
             if (!cov) {
               failure = cov.error();
               return false;
             }
             for (auto& row : *cov) c.rows.push_back({k.index, std::move(row)});
             return true;
           }));
  if (failure) return std::unexpected(*failure);
  c.partial_exit = ok->partial_exit;
  return c;
}

int uncovered(const std::vector<Row>& rows) {
  return static_cast<int>(
      std::ranges::count_if(rows, [](const Row& r) { return r.c.status == analysis::Coverage::Uncovered; }));
}

std::string coverage_json(const std::vector<Row>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows)
    arr.push_back({{"kernel", r.kernel},
                   {"rule", r.c.rule},
                   {"status", analysis::coverage_name(r.c.status)},
                   {"matched_by", r.c.matched_by},
                   {"message", r.c.message}});
  return json_text(nlohmann::json{{"warnings", arr}, {"uncovered", uncovered(rows)}}, 2) + "\n";
}

std::string coverage_table(const std::vector<Row>& rows) {
  render::Table t({"kernel", "ncu rule", "status", "KEET"});
  for (const auto& r : rows)
    t.add({std::to_string(r.kernel), r.c.rule, std::string(analysis::coverage_name(r.c.status)), r.c.matched_by});
  return t.str(70) + fmt::format("{} ncu warning(s), {} not covered\n", rows.size(), uncovered(rows));
}

constexpr FormatWriter<std::vector<Row>> kCoverageFormats[] = {{"table", coverage_table}, {"json", coverage_json}};

ExitCode run_coverage(Context& ctx, const CoverageArgs& a) {
  auto collected = collect(ctx, a);
  if (!collected) return report_error(ctx, collected.error());
  ctx.out << write_format(kCoverageFormats, a.format, collected->rows);
  return collected->partial_exit;
}

}  // namespace

Command coverage_command() {
  return {"coverage", "check that every ncu rule warning is covered by a KEET finding",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<CoverageArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, format_names(kCoverageFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_coverage(ctx, *a); }; });
          }};
}

}  // namespace keet::app
