// keet metrics R [-k SEL] [--grep RE]: the metric values of selected kernels.
#include <memory>
#include <optional>
#include <ostream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/known_names.h"
#include "app/commands.h"
#include "app/common.h"
#include "model/units.h"
#include "render/raw_csv.h"
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

// ncu's pseudo-metrics (metric-name lists such as group:memory__dram_table)
// are requests, not values: no row of any format shows them.
Result<Matcher> make_matcher(const std::string& pattern) {
  if (pattern.empty())
    return Matcher([](const std::string& n) {
      return render::raw_csv_hidden(n) ? std::nullopt : std::optional<std::string>(std::string());
    });
  auto re = Pattern::compile(pattern, {.case_insensitive = true});
  if (!re)
    return fail(ExitCode::BadInput, fmt::format("--grep {}: invalid regular expression: {}", pattern, re.error()));
  return Matcher([re = std::move(*re)](const std::string& n) {
    return render::raw_csv_hidden(n) ? std::nullopt : match_name_or_alias(re, n);
  });
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

// What a run writes, and to where.
struct MetricsSetup {
  std::ostream& out;
  const Matcher& match;
  model::PrintUnits units;
  size_t width;
  bool several;  // several reports: each kernel says which report it comes from
};

// One --format's writer: it sees the kernels as they are read (each is then
// dropped); begin() comes before the first kernel, end() after the last.
class MetricsSink {
 public:
  explicit MetricsSink(const MetricsSetup& s) : s_(s) {}
  virtual ~MetricsSink() = default;
  virtual void begin() {}
  virtual void kernel(const model::Kernel& k, const std::string& report) = 0;
  virtual void end() {}

 protected:
  const MetricsSetup& s_;
};

class MetricsTableSink : public MetricsSink {
 public:
  using MetricsSink::MetricsSink;
  void kernel(const model::Kernel& k, const std::string& report) override {
    s_.out << (s_.several ? report + " " : "") << kernel_table(k, s_.match, s_.units, s_.width);
  }
};

class MetricsCsvSink : public MetricsSink {
 public:
  using MetricsSink::MetricsSink;
  void begin() override {
    s_.out << (s_.several ? "\"report\"," : "") << "\"kernel_index\",\"kernel\",\"metric\",\"unit\",\"value\"\n";
  }
  void kernel(const model::Kernel& k, const std::string& report) override {
    s_.out << kernel_csv(k, s_.match, s_.units, s_.several ? render::csv_quote(report) + "," : "");
  }
};

class MetricsJsonSink : public MetricsSink {
 public:
  explicit MetricsJsonSink(const MetricsSetup& s) : MetricsSink(s), doc_(s.out, "kernels") {}
  void begin() override { doc_.open(); }
  void kernel(const model::Kernel& k, const std::string& report) override {
    auto j = kernel_json(k, s_.match, s_.units);
    if (s_.several) j["report"] = report;
    doc_.add(j);
  }
  void end() override { doc_.close(); }

 private:
  JsonArrayDocument doc_;
};

// metrics' formats: the sink each --format name makes (the first is the default).
struct MetricsFormat {
  std::string_view name;
  std::unique_ptr<MetricsSink> (*make)(const MetricsSetup&);
};
template <class Sink>
std::unique_ptr<MetricsSink> make_sink(const MetricsSetup& s) {
  return std::make_unique<Sink>(s);
}
constexpr MetricsFormat kMetricsFormats[] = {
    {"table", make_sink<MetricsTableSink>}, {"json", make_sink<MetricsJsonSink>}, {"csv", make_sink<MetricsCsvSink>}};

// Several reports: one document (or table, or CSV) with their kernels in
// order, each saying which report it comes from.
ExitCode run_metrics(Context& ctx, const MetricsArgs& a) {
  auto matcher = make_matcher(a.grep);
  if (!matcher) return report_error(ctx, matcher.error());
  readers::ReadOptions opt;
  opt.instances = opt.modules = opt.rules = false;
  auto reports = each_report(a.report);
  MetricsSetup setup{ctx.out, *matcher, model::parse_print_units(a.units).value_or(model::PrintUnits::Base),
                     table_width(ctx), reports.size() > 1};
  auto sink = find_format(kMetricsFormats, a.format).make(setup);
  const std::string* current = nullptr;
  bool started = false;
  auto begin = [&](const model::Report&) {
    if (!std::exchange(started, true)) sink->begin();
  };
  auto visit = [&](model::Kernel&& k, const model::Report&) {
    sink->kernel(k, *current);
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
  sink->end();
  return rc;
}

}  // namespace

Command metrics_command() {
  return {"metrics", "show metric values of the selected kernels", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<MetricsArgs>();
            add_reports_args(sub, a->report);
            sub.add_option("--grep,-g", a->grep, "case-insensitive regex on metric names (aliases too)");
            add_format(sub, a->format, format_names(kMetricsFormats));
            sub.add_option("--print-units", a->units,
                           "base (as the report stores them) or auto (scaled, as ncu's auto)")
                ->check(CLI::IsMember({"base", "auto"}))
                ->capture_default_str();
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_metrics(ctx, *a); }; });
          }};
}

}  // namespace keet::app
