// keet metrics R [-k SEL] [--grep RE]: the metric values of selected kernels.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/vocabulary.h"
#include "app/commands.h"
#include "app/common.h"
#include "model/units.h"
#include "render/report_json.h"
#include "render/table.h"
#include "util/json.h"
#include "util/pattern.h"

namespace keet::app {
namespace {

struct MetricsArgs {
  ReportArgs report;
  std::string grep;
  std::string format;
};

std::string value_text(const model::Value& v) { return model::csv_value_text("", v, !v.empty()); }


// How a metric name matched --grep: nullopt = not at all, "" = by its own
// name, else the nvprof-era alias that matched (analysis/vocabulary).
using Matcher = std::function<std::optional<std::string>(const std::string&)>;

std::optional<std::string> match_name_or_alias(const Pattern& re, const std::string& name) {
  if (re.search(name)) return std::string();
  for (const auto& alias : analysis::aliases_of(name))
    if (re.search(alias)) return alias;
  return std::nullopt;
}

Result<Matcher> make_matcher(const std::string& pattern) {
  if (pattern.empty()) return Matcher([](const std::string&) { return std::string(); });
  auto re = Pattern::compile(pattern, {.case_insensitive = true});
  if (!re) return fail(ExitCode::BadInput, fmt::format("--grep {}: invalid regular expression: {}", pattern, re.error()));
  return Matcher([re = std::move(*re)](const std::string& n) { return match_name_or_alias(re, n); });
}

void print_table(Context& ctx, const std::vector<const model::Kernel*>& ks, const Matcher& m) {
  for (const auto* k : ks) {
    ctx.out << fmt::format("[{}] {}\n", k->index, k->display_name());
    render::Table t({"metric", "unit", "value"});
    t.right_align({2});
    for (const auto& mt : k->metrics)
      if (auto how = m(mt.name))
        t.add({how->empty() ? mt.name : fmt::format("{} (alias {})", mt.name, *how), model::unit_of(mt.name),
               value_text(mt.value)});
    ctx.out << t.str(100) << "\n";
  }
}

void print_csv(Context& ctx, const std::vector<const model::Kernel*>& ks, const Matcher& m) {
  ctx.out << "\"kernel_index\",\"kernel\",\"metric\",\"unit\",\"value\"\n";
  for (const auto* k : ks)
    for (const auto& mt : k->metrics)
      if (m(mt.name))
        ctx.out << fmt::format("{},{},{},{},{}\n", k->index, render::csv_quote(k->display_name()),
                               render::csv_quote(mt.name), render::csv_quote(model::unit_of(mt.name)),
                               render::csv_quote(value_text(mt.value)));
}

void print_json(Context& ctx, const std::vector<const model::Kernel*>& ks, const Matcher& m) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto* k : ks) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& mt : k->metrics)
      if (m(mt.name)) metrics[mt.name] = {{"value", render::value_json(mt.value)}, {"unit", model::unit_of(mt.name)}};
    arr.push_back({{"index", k->index}, {"name", k->display_name()}, {"metrics", metrics}});
  }
  ctx.out << json_text(nlohmann::json{{"kernels", arr}}, 2) << "\n";
}

ExitCode run_metrics(Context& ctx, const MetricsArgs& a) {
  auto matcher = make_matcher(a.grep);
  if (!matcher) return report_error(ctx, matcher.error());
  readers::ReadOptions opt;
  opt.instances = opt.modules = opt.rules = false;
  auto loaded = load_report(ctx, a.report, opt);
  if (!loaded) return report_error(ctx, loaded.error());
  if (a.format == "json") print_json(ctx, loaded->selected, *matcher);
  else if (a.format == "csv") print_csv(ctx, loaded->selected, *matcher);
  else print_table(ctx, loaded->selected, *matcher);
  return loaded->partial_exit;
}

}  // namespace

Command metrics_command() {
  return {"metrics", "show metric values of the selected kernels", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<MetricsArgs>();
            add_report_args(sub, a->report);
            sub.add_option("--grep,-g", a->grep, "case-insensitive regex on metric names (aliases too)");
            add_format(sub, a->format, {"table", "json", "csv"});
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_metrics(ctx, *a); }; });
          }};
}

}  // namespace keet::app
