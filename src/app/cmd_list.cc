// keet list R: one row per profiled launch.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "analysis/derived.h"
#include "analysis/ranking.h"
#include "app/commands.h"
#include "app/common.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct ListArgs {
  ReportArgs report;
  std::string format;
  std::string summary = "none";  // --print-summary
};

// --print-summary per-kernel: one row per kernel and launch configuration.
std::string summary_table(const std::vector<analysis::LaunchSummary>& groups) {
  render::Table t({"kernel", "grid", "block", "launches", "total", "mean", "min", "max"});
  t.right_align({3, 4, 5, 6, 7});
  auto ns = [](const analysis::LaunchSummary& g, double v) { return g.timed ? duration_text(v) : "-"; };
  for (const auto& g : groups)
    t.add({g.name, dim_text(g.grid), dim_text(g.block), std::to_string(g.indices.size()), ns(g, g.total_ns),
           ns(g, g.mean_ns()), ns(g, g.min_ns), ns(g, g.max_ns)});
  return t.str(60);
}

nlohmann::json summary_json(const analysis::LaunchSummary& g) {
  auto ns = [&](double v) { return g.timed ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"name", g.name},         {"grid", {g.grid.x, g.grid.y, g.grid.z}}, {"block", {g.block.x, g.block.y, g.block.z}},
          {"launches", g.indices.size()}, {"indices", g.indices},            {"timed", g.timed},
          {"total_ns", ns(g.total_ns)}, {"mean_ns", ns(g.mean_ns())},         {"min_ns", ns(g.min_ns)},
          {"max_ns", ns(g.max_ns)}};
}

nlohmann::json kernel_json(const model::Kernel& k) {
  auto dur = analysis::kernel_duration_ns(k);
  return {{"index", k.index},
          {"name", k.display_name()},
          {"mangled", k.mangled},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"invocations", k.launches()},
          {"duration_ns", dur ? nlohmann::json(*dur) : nlohmann::json(nullptr)},
          {"device", device_of(k)}};
}

// nvprof summaries stand for several launches each: a "calls" column then.
std::string table(const std::vector<const model::Kernel*>& kernels) {
  bool summaries = std::any_of(kernels.begin(), kernels.end(), [](const auto* k) { return k->invocations != 0; });
  std::vector<std::string> head = {"#", "kernel", "grid", "block", "duration", "device"};
  if (summaries) head.insert(head.begin() + 4, "calls");
  render::Table t(head);
  t.right_align(summaries ? std::vector<size_t>{0, 4, 5} : std::vector<size_t>{0, 4});
  for (const auto* k : kernels) {
    std::vector<std::string> row = {std::to_string(k->index), k->display_name(), dim_text(k->grid),
                                    dim_text(k->block), duration_text(analysis::kernel_duration_ns(*k)),
                                    device_of(*k)};
    if (summaries) row.insert(row.begin() + 4, std::to_string(k->launches()));
    t.add(row);
  }
  return t.str(72);
}

ExitCode run_list(Context& ctx, const ListArgs& a) {
  auto loaded = load_report(ctx, a.report, light_options());
  if (!loaded) return report_error(ctx, loaded.error());
  if (a.summary == "per-kernel") {
    analysis::LaunchGroups groups;
    for (const auto* k : loaded->selected) groups.add(*k);
    if (a.format == "json") {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& g : groups.summaries()) arr.push_back(summary_json(g));
      ctx.out << json_text(nlohmann::json{{"kernels", arr}}, 2) << "\n";
    } else {
      ctx.out << summary_table(groups.summaries());
    }
    return loaded->partial_exit;
  }
  if (a.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto* k : loaded->selected) arr.push_back(kernel_json(*k));
    ctx.out << json_text(nlohmann::json{{"kernels", arr}}, 2) << "\n";
  } else {
    ctx.out << table(loaded->selected);
  }
  return loaded->partial_exit;
}

}  // namespace

Command list_command() {
  return {"list", "list the profiled kernel launches", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ListArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, {"table", "json"});
            sub.add_option("--print-summary", a->summary,
                           "per-kernel: one row per kernel and launch configuration with the launches' count and "
                           "duration spread (as ncu's --print-summary)")
                ->check(CLI::IsMember({"none", "per-kernel"}))
                ->capture_default_str();
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_list(ctx, *a); }; });
          }};
}

}  // namespace keet::app
