// keet doctor R: what the report holds for each kernel, and whether it can
// support a diagnosis. A CI step runs it before a gate, so a release is never
// judged on a missing metric read as zero or on an interrupted capture.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analysis/engine.h"
#include "app/commands.h"
#include "app/common.h"
#include "render/analysis_json.h"
#include "render/table.h"

namespace keet::app {
namespace {

struct DoctorArgs {
  ReportArgs report;
  std::string format;
};

struct Health {
  const model::Kernel* kernel;
  analysis::KernelDiagnosis diagnosis;
};

// Bad data: no class can be supported, or something the report holds cannot be right.
bool is_bad(const analysis::DataQuality& q) { return !q.sufficient || !q.problems.empty() || !q.invalid.empty(); }

std::string issues_text(const analysis::DataQuality& q) {
  std::vector<std::string> parts;
  for (const auto& p : q.problems) parts.push_back(p);
  for (const auto& bad : q.invalid) parts.push_back(bad.metric + " is " + bad.why);
  for (const auto& e : q.ncu_errors) parts.push_back("ncu rule error: " + e);
  if (!q.sufficient && q.problems.empty() && !q.collect.empty())
    parts.push_back(fmt::format("collect: ncu {}", fmt::join(q.collect, " ")));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, "; "));
}

std::string stall_text(const analysis::DataQuality& q) {
  if (q.stall_reasons.empty()) return "none";
  return fmt::format("{} reasons{}", q.stall_reasons.size(), q.stall_shares ? "" : " (partial: no shares)");
}

nlohmann::json health_json(const Health& h) {
  const auto& d = h.diagnosis;
  return {{"index", d.index},
          {"name", d.demangled},
          {"class", analysis::class_name(d.bottleneck.cls)},
          {"data_quality", render::data_quality_json(d.data_quality)},
          {"bad", is_bad(d.data_quality)}};
}

ExitCode run_doctor(Context& ctx, const DoctorArgs& a) {
  readers::ReadOptions opt;
  opt.instances = opt.modules = false;
  auto loaded = load_report(ctx, a.report, opt);
  if (!loaded) return report_error(ctx, loaded.error());
  std::vector<Health> rows;
  for (const auto* k : loaded->selected) rows.push_back({k, analysis::analyze_kernel(loaded->report, *k, {0})});
  size_t bad = std::ranges::count_if(rows, [](const Health& h) { return is_bad(h.diagnosis.data_quality); });
  if (a.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& h : rows) arr.push_back(health_json(h));
    ctx.out << nlohmann::json{{"schema", "keet.doctor/1"}, {"report", loaded->report.path}, {"kernels", arr},
                              {"bad_kernels", bad}}
                   .dump(2)
            << "\n";
  } else {
    render::Table t({"#", "kernel", "outcome", "sections missing", "stalls", "issues"});
    t.right_align({0});
    for (const auto& h : rows) {
      const auto& q = h.diagnosis.data_quality;
      t.add({std::to_string(h.diagnosis.index), h.diagnosis.demangled, std::string(render::outcome_name(q)),
             q.sections_missing.empty() ? "-" : fmt::format("{}", fmt::join(q.sections_missing, ", ")), stall_text(q),
             issues_text(q)});
    }
    ctx.out << t.str(60);
    ctx.out << fmt::format("{} of {} kernels {} data a diagnosis cannot rest on.\n", bad, rows.size(),
                           bad == 1 ? "has" : "have");
  }
  if (bad > 0) return ExitCode::Failed;
  return loaded->partial_exit;
}

}  // namespace

Command doctor_command() {
  return {"doctor",
          "check what a report holds for each kernel: sections, implausible values, broken captures "
          "(exit 1 when a kernel's data cannot support a diagnosis)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<DoctorArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, {"table", "json"});
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_doctor(ctx, *a); }; });
          }};
}

}  // namespace keet::app
