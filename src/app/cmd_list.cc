// keet list R: one row per profiled launch.
#include <algorithm>

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/derived.h"
#include "analysis/ranking.h"
#include "app/commands.h"
#include "app/common.h"
#include "render/report_json.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct ListArgs {
  ReportArgs report;
  std::string format;
  std::string summary = "none";  // --print-summary
};

// With several reports every row says which report it comes from: a leading
// "report" column, a "report" member in JSON. One report: as before.
struct Listed {
  std::string path;
  Loaded loaded;
};

void with_report(std::vector<std::string>& row, const std::string* report) {
  if (report) row.insert(row.begin(), *report);
}

// --print-summary per-kernel: one row per kernel and launch configuration.
void summary_rows(render::Table& t, const std::vector<analysis::LaunchSummary>& groups, const std::string* report) {
  auto ns = [](const analysis::LaunchSummary& g, double v) { return g.timed ? duration_text(v) : "-"; };
  for (const auto& g : groups) {
    std::vector<std::string> row = {
        g.display,         dim_text(g.grid),   dim_text(g.block), std::to_string(g.indices.size()),
        ns(g, g.total_ns), ns(g, g.mean_ns()), ns(g, g.min_ns),   ns(g, g.max_ns)};
    with_report(row, report);
    t.add(row);
  }
}

nlohmann::json summary_json(const analysis::LaunchSummary& g) {
  auto ns = [&](double v) { return g.timed ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"name", g.display},
          {"grid", {g.grid.x, g.grid.y, g.grid.z}},
          {"block", {g.block.x, g.block.y, g.block.z}},
          {"device", g.device},
          {"launches", g.indices.size()},
          {"indices", g.indices},
          {"timed", g.timed},
          {"total_ns", ns(g.total_ns)},
          {"mean_ns", ns(g.mean_ns())},
          {"min_ns", ns(g.min_ns)},
          {"max_ns", ns(g.max_ns)}};
}

nlohmann::json kernel_json(const model::Kernel& k) {
  auto dur = analysis::kernel_duration_ns(k);
  nlohmann::json out = render::kernel_identity_json(k);
  out["duration_ns"] = dur ? nlohmann::json(*dur) : nlohmann::json(nullptr);
  out["device"] = device_of(k);
  return out;
}

std::vector<analysis::LaunchSummary> summaries(const Loaded& l) {
  analysis::LaunchGroups groups;
  for (const auto* k : l.selected) groups.add(*k);
  return groups.summaries();
}

// How the table is drawn: one row per kernel or per launch, and how wide a
// cell may be (0: whole values, for a pipe).
struct ListStyle {
  bool per_kernel = false;
  size_t cut = 0;
};

std::string summary_table(const std::vector<Listed>& reports, size_t cut) {
  bool several = reports.size() > 1;
  std::vector<std::string> head = {"kernel", "grid", "block", "launches", "total", "mean", "min", "max"};
  std::vector<size_t> right = {3, 4, 5, 6, 7};
  if (several) {
    head.insert(head.begin(), "report");
    for (auto& c : right) ++c;
  }
  render::Table t(head);
  t.right_align(right);
  for (const auto& r : reports) summary_rows(t, summaries(r.loaded), several ? &r.path : nullptr);
  return t.str(cut);
}

// nvprof summaries stand for several launches each: a "calls" column then.
std::string table(const std::vector<Listed>& reports, size_t cut) {
  bool several = reports.size() > 1, calls = false;
  for (const auto& r : reports)
    for (const auto* k : r.loaded.selected) calls = calls || k->invocations != 0;
  std::vector<std::string> head = {"#", "kernel", "grid", "block", "duration", "device"};
  std::vector<size_t> right = {0, 4};
  if (calls) head.insert(head.begin() + 4, "calls"), right = {0, 4, 5};
  if (several) {
    head.insert(head.begin(), "report");
    for (auto& c : right) ++c;
  }
  render::Table t(head);
  t.right_align(right);
  for (const auto& r : reports)
    for (const auto* k : r.loaded.selected) {
      std::vector<std::string> row = {std::to_string(k->index),
                                      k->display_name(),
                                      dim_text(k->grid),
                                      dim_text(k->block),
                                      duration_text(analysis::kernel_duration_ns(*k)),
                                      device_of(*k)};
      if (calls) row.insert(row.begin() + 4, std::to_string(k->launches()));
      with_report(row, several ? &r.path : nullptr);
      t.add(row);
    }
  return t.str(cut);
}

std::string list_json(const std::vector<Listed>& reports, bool per_kernel) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : reports) {
    std::vector<nlohmann::json> items;
    if (per_kernel)
      for (const auto& g : summaries(r.loaded)) items.push_back(summary_json(g));
    else
      for (const auto* k : r.loaded.selected) items.push_back(kernel_json(*k));
    for (auto& j : items) {
      if (reports.size() > 1) j["report"] = r.path;
      arr.push_back(std::move(j));
    }
  }
  return json_text(nlohmann::json{{"kernels", arr}}, 2) + "\n";
}

// --format: the table (one row per launch, or per kernel with
// --print-summary per-kernel) or keet.list/1 JSON.
constexpr FormatWriter<std::vector<Listed>, ListStyle> kListFormats[] = {
    {"table", [](const std::vector<Listed>& r,
                 const ListStyle& s) { return s.per_kernel ? summary_table(r, s.cut) : table(r, s.cut); }},
    {"json", [](const std::vector<Listed>& r, const ListStyle& s) { return list_json(r, s.per_kernel); }},
};

ExitCode run_list(Context& ctx, const ListArgs& a) {
  std::vector<Listed> reports;
  ExitCode rc = ExitCode::Ok;
  for (const auto& one : each_report(a.report)) {
    auto loaded = load_report(ctx, one, light_options());
    if (!loaded) return report_error(ctx, loaded.error());
    if (loaded->partial_exit != ExitCode::Ok) rc = loaded->partial_exit;
    reports.push_back({one.path, std::move(*loaded)});
  }
  ListStyle style{a.summary == "per-kernel", cell_width(ctx, 72)};
  ctx.out << write_format(kListFormats, a.format, reports, style);
  return rc;
}

}  // namespace

Command list_command() {
  return {"list", "list the profiled kernel launches", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ListArgs>();
            add_reports_args(sub, a->report);
            add_format(sub, a->format, format_names(kListFormats));
            sub.add_option("--print-summary", a->summary,
                           "per-kernel: one row per kernel and launch configuration with the launches' count and "
                           "duration spread (as ncu's --print-summary)")
                ->check(CLI::IsMember({"none", "per-kernel"}))
                ->capture_default_str();
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_list(ctx, *a); }; });
          }};
}

}  // namespace keet::app
