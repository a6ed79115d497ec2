// keet history: each kernel's duration over the recorded runs, oldest first.
#include <map>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/compare.h"
#include "render/diff_format.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct HistoryArgs {
  std::string kernel, db, tag, format;
  size_t limit = 20;
};

struct Point {
  const store::Run* run;
  const compare::KernelSnapshot* kernel;
};

// -k applies the report selector's rules (index, exact name, regex:) to a
// stored kernel through a stand-in model kernel.
bool selected(const model::KernelSelector& sel, const compare::KernelSnapshot& s) {
  model::Kernel k;
  k.index = s.index;
  k.demangled = s.display;
  return sel.matches(k);
}

std::map<std::string, std::vector<Point>> trends(const std::vector<store::Run>& newest_first,
                                                 const model::KernelSelector& sel, const std::string& tag) {
  std::map<std::string, std::vector<Point>> out;
  for (auto run = newest_first.rbegin(); run != newest_first.rend(); ++run) {
    if (!tag.empty() && run->tag != tag) continue;
    for (const auto& k : run->kernels)
      if (sel.all() || selected(sel, k)) out[k.identity() + " on " + k.device].push_back({&*run, &k});
  }
  return out;
}

std::string trend_table(const std::vector<Point>& points) {
  render::Table t({"run", "tag", "commit", "duration", "change", "findings"});
  t.right_align({0, 3, 4});
  std::optional<double> previous;
  for (const auto& p : points) {
    std::optional<double> change;
    if (previous && p.kernel->duration_ns && *previous > 0) change = *p.kernel->duration_ns / *previous - 1;
    std::vector<std::string> ids;
    for (const auto& f : p.kernel->findings) ids.push_back(f.id);
    t.add({"#" + std::to_string(p.run->id), p.run->tag, p.run->commit.substr(0, 10),
           render::format_duration(p.kernel->duration_ns), change ? render::format_change(change) : "",
           render::join_ids(ids)});
    previous = p.kernel->duration_ns;
  }
  return t.str(100);
}

nlohmann::json trend_json(const std::string& identity, const std::vector<Point>& points) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : points)
    arr.push_back({{"run", p.run->id},
                   {"tag", p.run->tag},
                   {"commit", p.run->commit},
                   {"recorded_at", p.run->recorded_at},
                   {"kernel", compare::snapshot_json(*p.kernel)}});
  return {{"kernel", identity}, {"points", arr}};
}

struct HistoryAnswer {
  std::map<std::string, std::vector<Point>> series;  // by kernel identity and device
  std::string db;
};

std::string history_text(const HistoryAnswer& h) {
  std::string out;
  if (h.series.empty()) out += fmt::format("no recorded kernels match in {}\n", h.db);
  for (const auto& [id, points] : h.series) out += id + "\n" + trend_table(points) + "\n";
  return out;
}

std::string history_json(const HistoryAnswer& h) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [id, points] : h.series) arr.push_back(trend_json(id, points));
  return json_text(nlohmann::json{{"schema", "keet.history/1"}, {"kernels", arr}}, 2) + "\n";
}

constexpr FormatWriter<HistoryAnswer> kHistoryFormats[] = {{"text", history_text}, {"json", history_json}};

ExitCode run_history(Context& ctx, const HistoryArgs& a) {
  auto sel = model::KernelSelector::parse(a.kernel);
  if (!sel) return report_error(ctx, sel.error());
  auto db = open_history(ctx, a.db);
  if (!db) return report_error(ctx, db.error());
  auto runs = (*db)->runs(a.limit);
  if (!runs) return report_error(ctx, runs.error());
  ctx.out << write_format(kHistoryFormats, a.format, HistoryAnswer{trends(*runs, *sel, a.tag), (*db)->describe()});
  return ExitCode::Ok;
}

}  // namespace

Command history_command() {
  return {"history", "show kernel duration trends across recorded runs", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<HistoryArgs>();
            sub.add_option("-k,--kernel", a->kernel, "kernel: index, exact name, or regex:<pattern>");
            sub.add_option("--tag", a->tag, "only runs with this tag");
            sub.add_option("--limit", a->limit, "newest runs read (0 = all)")->capture_default_str();
            add_format(sub, a->format, format_names(kHistoryFormats));
            add_db_option(sub, a->db);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_history(ctx, *a); }; });
          }};
}

}  // namespace keet::app
