// keet eval LABELS: class, limiter and top-3 accuracy of the engine on labelled
// kernels, per kernel, per repository and overall, with the list of misses.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/evaluation.h"
#include "app/commands.h"
#include "app/pipeline.h"
#include "io/file.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct EvalArgs {
  std::string labels;
  std::string root;
  std::string oracle;
  std::string oracle2024;
  std::string format;
  std::string set;
  double min_class = 0, min_top3 = 0;
};

std::string pct(int n, int d) { return d ? fmt::format("{:.1f}% ({}/{})", 100.0 * n / d, n, d) : "-"; }

std::string limiter_cell(const analysis::LabelResult& r) {
  if (r.label.limiter.empty()) return "";
  std::string keet = r.predicted_limiter.empty() ? "-" : r.predicted_limiter;
  return r.label.limiter + " / " + keet + (r.limiter_ok ? "" : " (x)");
}

std::string kernels_text(const analysis::EvalSummary& s) {
  render::Table t({"report", "k", "fold", "label", "keet", "limiter label/keet", "top-3 findings", "hit"});
  for (const auto& r : s.results) {
    std::string hit = !r.error.empty()         ? "skip: " + r.error
                      : r.label.expect.empty() ? "n/a"
                                               : (r.top3_hit ? "yes" : "no");
    t.add({r.label.report, std::to_string(r.label.kernel),
           r.label.also.empty() ? "" : fmt::format("+{}", r.label.also.size()), r.label.cls,
           r.error.empty() ? r.predicted_class + (r.class_ok ? "" : " (x)") : "-", limiter_cell(r),
           fmt::format("{}", fmt::join(r.top3, ", ")), hit});
  }
  return t.str(60) + "\n";
}

std::string repositories_text(const analysis::EvalSummary& s) {
  render::Table t({"repository", "labels", "scored", "launches", "class", "top-3", "limiter"});
  for (const auto& [repo, st] : s.by_repository)
    t.add({repo, std::to_string(st.labels), std::to_string(st.scored), std::to_string(st.launches),
           pct(st.class_ok, st.scored), pct(st.top3_hits, st.top3_scored), pct(st.limiter_ok, st.limiter_scored)});
  return "\nper repository:\n" + t.str(60) + "\n";
}

std::string confusion_text(const analysis::EvalSummary& s) {
  static const std::vector<std::string> kClasses{"memory", "compute", "latency", "launch", "unknown"};
  std::vector<std::string> header{"label \\ keet"};
  header.insert(header.end(), kClasses.begin(), kClasses.end());
  render::Table t(header);
  for (const auto& l : kClasses) {
    auto it = s.confusion.find(l);
    if (it == s.confusion.end()) continue;
    std::vector<std::string> row{l};
    for (const auto& p : kClasses) {
      auto c = it->second.find(p);
      row.push_back(c == it->second.end() ? "" : std::to_string(c->second));
    }
    t.add(row);
  }
  return "\nclass confusion (rows: label, columns: KEET):\n" + t.str(60) + "\n";
}

std::string misses_text(const analysis::EvalSummary& s) {
  int n = 0;
  std::string out;
  for (const auto& r : s.results) {
    if (!analysis::is_miss(r)) continue;
    ++n;
    out +=
        fmt::format("  {} kernel {}: class {} -> {}", r.label.report, r.label.kernel, r.label.cls, r.predicted_class);
    if (!r.label.limiter.empty() && !r.limiter_ok)
      out += fmt::format("; limiter {} -> {}", r.label.limiter,
                         r.predicted_limiter.empty() ? "none" : r.predicted_limiter);
    if (!r.label.expect.empty() && !r.top3_hit)
      out +=
          fmt::format("; expected one of [{}], top 3 [{}]", fmt::join(r.label.expect, ", "), fmt::join(r.top3, ", "));
    out += "\n";
  }
  return fmt::format("\nmisses: {}\n{}", n, out);
}

std::string eval_table(const analysis::EvalSummary& s) {
  const auto& o = s.overall;
  std::string out = kernels_text(s) + repositories_text(s) + confusion_text(s) + misses_text(s);
  out += fmt::format(
      "\nlabels scored: {} of {} (standing for {} launches)\nbottleneck class accuracy: {:.1f}%\n"
      "top-3 finding accuracy: {:.1f}% ({} labels with expectations)\nmean recall of expected findings in top 3: "
      "{:.1f}%\n",
      o.scored, o.labels, o.launches, 100 * o.class_accuracy(), 100 * o.top3_accuracy(), o.top3_scored,
      100 * o.mean_recall3());
  if (o.limiter_scored > 0)
    out += fmt::format("limiter accuracy: {:.1f}% ({} labels with a limiter; KEET named one for {})\n",
                       100 * o.limiter_accuracy(), o.limiter_scored, o.limiter_answered);
  return out;
}

nlohmann::json stats_json(const analysis::EvalStats& st) {
  return {{"labels", st.labels},
          {"scored", st.scored},
          {"launches", st.launches},
          {"class_accuracy", st.class_accuracy()},
          {"top3_scored", st.top3_scored},
          {"top3_accuracy", st.top3_accuracy()},
          {"mean_recall3", st.mean_recall3()},
          {"limiter_scored", st.limiter_scored},
          {"limiter_answered", st.limiter_answered},
          {"limiter_accuracy", st.limiter_accuracy()}};
}

nlohmann::json result_json(const analysis::LabelResult& r) {
  return {{"report", r.label.report},
          {"kernel", r.label.kernel},
          {"also", r.label.also},
          {"sets", r.label.sets},
          {"label", r.label.cls},
          {"predicted", r.predicted_class},
          {"limiter", r.label.limiter},
          {"predicted_limiter", r.predicted_limiter},
          {"top3", r.top3},
          {"expect", r.label.expect},
          {"class_ok", r.class_ok},
          {"limiter_ok", r.limiter_ok},
          {"top3_hit", r.top3_hit},
          {"miss", analysis::is_miss(r)},
          {"error", r.error}};
}

std::string eval_json(const analysis::EvalSummary& s) {
  nlohmann::json rows = nlohmann::json::array(), misses = nlohmann::json::array();
  for (const auto& r : s.results) {
    rows.push_back(result_json(r));
    if (analysis::is_miss(r)) misses.push_back(result_json(r));
  }
  nlohmann::json repos = nlohmann::json::object();
  for (const auto& [repo, st] : s.by_repository) repos[repo] = stats_json(st);
  auto j = stats_json(s.overall);
  j["overall"] = stats_json(s.overall);
  j["by_repository"] = repos;
  j["confusion"] = s.confusion;
  j["misses"] = misses;
  j["results"] = rows;
  return json_text(j, 2) + "\n";
}

constexpr FormatWriter<analysis::EvalSummary> kEvalFormats[] = {{"table", eval_table}, {"json", eval_json}};

ExitCode run_eval(Context& ctx, const EvalArgs& a) {
  auto text = io::read_text_file(a.labels);
  if (!text) return report_error(ctx, text.error());
  auto labels = analysis::parse_labels(*text);
  if (!labels) return report_error(ctx, {ExitCode::BadInput, a.labels + ": " + labels.error().message});
  auto selected = analysis::select_set(*labels, a.set);
  if (selected.empty())
    return report_error(ctx, {ExitCode::BadInput, a.labels + ": no label in set \"" + a.set + "\""});
  auto open = [](const std::string& path) { return read_report(path); };
  auto summary = analysis::evaluate_labels(selected, a.root, a.oracle, a.oracle2024, open, diagnose);
  ctx.out << write_format(kEvalFormats, a.format, summary);
  if (summary.scored == 0) return report_error(ctx, {ExitCode::BadInput, "no label could be scored (check --root)"});
  bool pass = summary.class_accuracy >= a.min_class && summary.top3_accuracy >= a.min_top3;
  return pass ? ExitCode::Ok : ExitCode::Failed;
}

}  // namespace

Command eval_command() {
  return {"eval", "score the engine against expert labels (class, limiter and top-3 accuracy)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<EvalArgs>();
            sub.add_option("labels", a->labels, "labels file (eval/labels.json)")->required();
            sub.add_option("--root", a->root, "folder the label paths are relative to")->required();
            sub.add_option("--oracle-examples", a->oracle, "NVIDIA's sample folder of ncu 2022.3 (for oracle: labels)");
            sub.add_option("--oracle-examples-2024", a->oracle2024,
                           "NVIDIA's sample folder of ncu 2024.1 (for oracle-2024.1: labels)");
            sub.add_option("--set", a->set, "score only the labels whose \"sets\" name this set (e.g. v1)");
            sub.add_option("--min-class", a->min_class, "exit 1 when class accuracy is below this fraction");
            sub.add_option("--min-top3", a->min_top3, "exit 1 when top-3 accuracy is below this fraction");
            add_format(sub, a->format, format_names(kEvalFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_eval(ctx, *a); }; });
          }};
}

}  // namespace keet::app
