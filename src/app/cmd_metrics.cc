// keet metrics R [-k SEL] [--grep RE]: the metric values of selected kernels.
#include <optional>

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

std::string kernel_table(const model::Kernel& k, const Matcher& m) {
  render::Table t({"metric", "unit", "value"});
  t.right_align({2});
  for (const auto& mt : k.metrics)
    if (auto how = m(mt.name))
      t.add({how->empty() ? mt.name : fmt::format("{} (alias {})", mt.name, *how), model::unit_of(mt.name),
             value_text(mt.value)});
  return fmt::format("[{}] {}\n", k.index, k.display_name()) + t.str(100) + "\n";
}

std::string kernel_csv(const model::Kernel& k, const Matcher& m) {
  std::string out;
  for (const auto& mt : k.metrics)
    if (m(mt.name))
      out += fmt::format("{},{},{},{},{}\n", k.index, render::csv_quote(k.display_name()), render::csv_quote(mt.name),
                         render::csv_quote(model::unit_of(mt.name)), render::csv_quote(value_text(mt.value)));
  return out;
}

nlohmann::json kernel_json(const model::Kernel& k, const Matcher& m) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& mt : k.metrics)
    if (m(mt.name)) metrics[mt.name] = {{"value", render::value_json(mt.value)}, {"unit", model::unit_of(mt.name)}};
  return {{"index", k.index}, {"name", k.display_name()}, {"metrics", metrics}};
}

// Each kernel is written as it is read and then dropped.
ExitCode run_metrics(Context& ctx, const MetricsArgs& a) {
  auto matcher = make_matcher(a.grep);
  if (!matcher) return report_error(ctx, matcher.error());
  readers::ReadOptions opt;
  opt.instances = opt.modules = opt.rules = false;
  JsonObjectStream doc(ctx.out, 2);
  std::optional<JsonArrayStream> kernels;
  auto begin = [&](const model::Report&) {
    if (a.format == "json") kernels.emplace(doc.array_member("kernels"));
    else if (a.format == "csv") ctx.out << "\"kernel_index\",\"kernel\",\"metric\",\"unit\",\"value\"\n";
  };
  auto visit = [&](model::Kernel&& k, const model::Report&) {
    if (a.format == "json") kernels->add(kernel_json(k, *matcher));
    else ctx.out << (a.format == "csv" ? kernel_csv(k, *matcher) : kernel_table(k, *matcher));
    return true;
  };
  model::Report head;
  auto ok = stream_report(ctx, a.report, opt, head, {.begin = begin, .visit = visit});
  if (!ok) return report_error(ctx, ok.error());
  if (kernels) {
    kernels->close();
    doc.close();
  }
  return ok->partial_exit;
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
