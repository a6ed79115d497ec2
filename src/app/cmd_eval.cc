// keet eval LABELS: class and top-3 accuracy of the engine on labelled kernels.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/evaluation.h"
#include "app/commands.h"
#include "io/file.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct EvalArgs {
  std::string labels;
  std::string root;
  std::string oracle;
  std::string format;
  double min_class = 0, min_top3 = 0;
};

void print_table(Context& ctx, const analysis::EvalSummary& s) {
  render::Table t({"report", "k", "label", "keet", "top-3 findings", "hit"});
  for (const auto& r : s.results) {
    std::string hit = !r.error.empty() ? "skip: " + r.error : (r.top3_hit ? "yes" : "no");
    t.add({r.label.report, std::to_string(r.label.kernel), r.label.cls,
           r.error.empty() ? r.predicted_class + (r.class_ok ? "" : " (x)") : "-",
           fmt::format("{}", fmt::join(r.top3, ", ")), hit});
  }
  ctx.out << t.str(60) << "\n";
  ctx.out << fmt::format("labels scored: {} of {}\nbottleneck class accuracy: {:.1f}%\ntop-3 finding accuracy: {:.1f}%\nmean recall of expected findings in top 3: {:.1f}%\n",
                         s.scored, s.results.size(), 100 * s.class_accuracy, 100 * s.top3_accuracy, 100 * s.mean_recall3);
}

void print_json(Context& ctx, const analysis::EvalSummary& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : s.results)
    rows.push_back({{"report", r.label.report}, {"kernel", r.label.kernel}, {"label", r.label.cls},
                    {"predicted", r.predicted_class}, {"top3", r.top3}, {"expect", r.label.expect},
                    {"class_ok", r.class_ok}, {"top3_hit", r.top3_hit}, {"error", r.error}});
  ctx.out << json_text(nlohmann::json{{"scored", s.scored},
                                      {"class_accuracy", s.class_accuracy},
                                      {"top3_accuracy", s.top3_accuracy},
                                      {"mean_recall3", s.mean_recall3},
                                      {"results", rows}},
                      2)
          << "\n";
}

ExitCode run_eval(Context& ctx, const EvalArgs& a) {
  auto text = io::read_text_file(a.labels);
  if (!text) return report_error(ctx, text.error());
  auto labels = analysis::parse_labels(*text);
  if (!labels) return report_error(ctx, {ExitCode::BadInput, a.labels + ": " + labels.error().message});
  auto summary = analysis::evaluate_labels(*labels, a.root, a.oracle);
  if (a.format == "json") print_json(ctx, summary);
  else print_table(ctx, summary);
  if (summary.scored == 0) return report_error(ctx, {ExitCode::BadInput, "no label could be scored (check --root)"});
  bool pass = summary.class_accuracy >= a.min_class && summary.top3_accuracy >= a.min_top3;
  return pass ? ExitCode::Ok : ExitCode::Failed;
}

}  // namespace

Command eval_command() {
  return {"eval", "score the engine against expert labels (class and top-3 accuracy)", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<EvalArgs>();
            sub.add_option("labels", a->labels, "labels file (eval/labels.json)")->required();
            sub.add_option("--root", a->root, "folder the label paths are relative to")->required();
            sub.add_option("--oracle-examples", a->oracle, "folder of NVIDIA's sample reports (for oracle: labels)");
            sub.add_option("--min-class", a->min_class, "exit 1 when class accuracy is below this fraction");
            sub.add_option("--min-top3", a->min_top3, "exit 1 when top-3 accuracy is below this fraction");
            a->format = "table";
            sub.add_option("--format,-f", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_eval(ctx, *a); }; });
          }};
}

}  // namespace keet::app
