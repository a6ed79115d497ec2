// keet metrics R [-k SEL] [--grep RE]: the metric values of selected kernels.
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/known_names.h"
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
  std::string units = "base";  // --print-units
};

// A metric's unit and value as --print-units asks: base as stored, or auto
// (a number with a unit in the scaled unit ncu's auto mode gives it).
struct Shown {
  std::string unit;
  std::string text;
  std::optional<double> scaled;  // auto: the number in `unit`
};

Shown shown(const model::Metric& m, model::PrintUnits units) {
  Shown s{model::unit_of(m.name), model::csv_value_text("", m.value, !m.value.empty()), std::nullopt};
  if (units == model::PrintUnits::Base || s.unit.empty() || !m.value.is_number()) return s;
  double v = *m.value.as_number();
  auto scale = model::auto_scale(s.unit, v);
  return {scale.unit, model::auto_value_text(v, scale), v / scale.factor};
}

// How a metric name matched --grep: nullopt = not at all, "" = by its own
// name, else the nvprof-era name that matched (analysis/known_names.h).
using Matcher = std::function<std::optional<std::string>(const std::string&)>;

std::optional<std::string> match_name_or_alias(const Pattern& re, const std::string& name) {
  if (re.search(name)) return std::string();
  for (const auto& alias : analysis::known_names_of(name))
    if (re.search(alias)) return alias;
  return std::nullopt;
}

Result<Matcher> make_matcher(const std::string& pattern) {
  if (pattern.empty()) return Matcher([](const std::string&) { return std::string(); });
  auto re = Pattern::compile(pattern, {.case_insensitive = true});
  if (!re)
    return fail(ExitCode::BadInput, fmt::format("--grep {}: invalid regular expression: {}", pattern, re.error()));
  return Matcher([re = std::move(*re)](const std::string& n) { return match_name_or_alias(re, n); });
}

// Fits `width` columns: a long metric name (with the alias that matched)
// wraps onto further lines of its column, a long value is cut.
std::string kernel_table(const model::Kernel& k, const Matcher& m, model::PrintUnits units, size_t width) {
  render::Table t({"metric", "unit", "value"});
  t.right_align({2});
  size_t rows = 0;
  for (const auto& mt : k.metrics)
    if (auto how = m(mt.name)) {
      auto s = shown(mt, units);
      t.add({how->empty() ? mt.name : fmt::format("{} (alias {})", mt.name, *how), s.unit, s.text});
      ++rows;
    }
  std::string head = fmt::format("[{}] {}\n", k.index, k.display_name());
  if (rows == 0)
    return head + "  no metric of this kernel matches (keet metrics R -k " + std::to_string(k.index) +
           " lists them all)\n\n";
  return head + t.str_fit(width, 0, 40) + "\n";
}

// `lead`: the row's first cells (the report, when there are several).
std::string kernel_csv(const model::Kernel& k, const Matcher& m, model::PrintUnits units, const std::string& lead) {
  std::string out;
  for (const auto& mt : k.metrics)
    if (m(mt.name)) {
      auto s = shown(mt, units);
      out += lead + fmt::format("{},{},{},{},{}\n", k.index, render::csv_quote(k.display_name()),
                                render::csv_quote(mt.name), render::csv_quote(s.unit), render::csv_quote(s.text));
    }
  return out;
}

nlohmann::json kernel_json(const model::Kernel& k, const Matcher& m, model::PrintUnits units) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& mt : k.metrics)
    if (m(mt.name)) {
      auto s = shown(mt, units);
      metrics[mt.name] = {{"value", s.scaled ? nlohmann::json(*s.scaled) : render::value_json(mt.value)},
                          {"unit", s.unit}};
    }
  return {{"index", k.index}, {"name", k.display_name()}, {"metrics", metrics}};
}

// Each kernel is written as it is read and then dropped.
ExitCode run_metrics(Context& ctx, const MetricsArgs& a) {
  auto matcher = make_matcher(a.grep);
  if (!matcher) return report_error(ctx, matcher.error());
  auto units = model::parse_print_units(a.units).value_or(model::PrintUnits::Base);
  size_t width = output_width(ctx);
  readers::ReadOptions opt;
  opt.instances = opt.modules = opt.rules = false;
  // Several reports: one document (or table, or CSV) with their kernels in
  // order, each saying which report it comes from.
  auto reports = each_report(a.report);
  bool several = reports.size() > 1;
  const std::string* current = nullptr;
  JsonObjectStream doc(ctx.out, 2);
  std::optional<JsonArrayStream> kernels;
  bool started = false;
  auto begin = [&](const model::Report&) {
    if (std::exchange(started, true)) return;
    if (a.format == "json")
      kernels.emplace(doc.array_member("kernels"));
    else if (a.format == "csv")
      ctx.out << (several ? "\"report\"," : "") << "\"kernel_index\",\"kernel\",\"metric\",\"unit\",\"value\"\n";
  };
  auto visit = [&](model::Kernel&& k, const model::Report&) {
    if (a.format == "json") {
      auto j = kernel_json(k, *matcher, units);
      if (several) j["report"] = *current;
      kernels->add(j);
      return true;
    }
    if (a.format == "csv")
      ctx.out << kernel_csv(k, *matcher, units, several ? render::csv_quote(*current) + "," : "");
    else
      ctx.out << (several ? *current + " " : "") << kernel_table(k, *matcher, units, width);
    return true;
  };
  ExitCode rc = ExitCode::Ok;
  for (const auto& one : reports) {
    current = &one.path;
    model::Report head;
    auto ok = stream_report(ctx, one, opt, head, {.begin = begin, .visit = visit});
    if (!ok) return report_error(ctx, ok.error());
    if (ok->partial_exit != ExitCode::Ok) rc = ok->partial_exit;
  }
  if (kernels) {
    kernels->close();
    doc.close();
  }
  return rc;
}

}  // namespace

Command metrics_command() {
  return {"metrics", "show metric values of the selected kernels", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<MetricsArgs>();
            add_reports_args(sub, a->report);
            sub.add_option("--grep,-g", a->grep, "case-insensitive regex on metric names (aliases too)");
            add_format(sub, a->format, {"table", "json", "csv"});
            sub.add_option("--print-units", a->units,
                           "base (as the report stores them) or auto (scaled, as ncu's auto)")
                ->check(CLI::IsMember({"base", "auto"}))
                ->capture_default_str();
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_metrics(ctx, *a); }; });
          }};
}

}  // namespace keet::app
