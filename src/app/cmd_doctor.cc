// keet doctor R: what the report holds for each kernel, and whether it can
// support a diagnosis. A CI step runs it before a gate, so a release is never
// judged on a missing metric read as zero or on an interrupted capture.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include <CLI/CLI.hpp>

#include "analysis/engine.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/pipeline.h"
#include "render/analysis_json.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct DoctorArgs {
  ReportArgs report;
  std::string format;
};

// What doctor keeps of each kernel's diagnosis (kernels stream through the engine).
struct Health {
  int index = 0;
  std::string name;
  analysis::BottleneckClass cls = analysis::BottleneckClass::Unknown;
  analysis::DataQuality quality;
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
  return {{"index", h.index},
          {"name", h.name},
          {"class", analysis::class_name(h.cls)},
          {"data_quality", render::data_quality_json(h.quality)},
          {"bad", is_bad(h.quality)}};
}

// What a format writes: every kernel's health, and how many are bad.
struct Checkup {
  std::vector<Health> rows;
  std::string report;
  size_t bad = 0;
  size_t cut = 0;  // the widest a table cell may be (0: whole values, for a pipe)
};

std::string doctor_json(const Checkup& c) {
  std::ostringstream out;
  JsonObjectStream doc(out, 2);  // members in json_text()'s (sorted) order
  doc.member("bad_kernels", c.bad);
  auto kernels = doc.array_member("kernels");
  for (const auto& h : c.rows) kernels.add(health_json(h));
  kernels.close();
  doc.member("report", c.report);
  doc.member("schema", "keet.doctor/1");
  doc.close();
  return std::move(out).str();
}

std::string doctor_table(const Checkup& c) {
  render::Table t({"#", "kernel", "outcome", "sections missing", "stalls", "issues"});
  t.right_align({0});
  for (const auto& h : c.rows) {
    const auto& q = h.quality;
    t.add({std::to_string(h.index), h.name, std::string(render::outcome_name(q)),
           q.sections_missing.empty() ? "-" : fmt::format("{}", fmt::join(q.sections_missing, ", ")), stall_text(q),
           issues_text(q)});
  }
  return t.str(c.cut) + fmt::format("{} of {} kernels {} data a diagnosis cannot rest on.\n", c.bad, c.rows.size(),
                                    c.bad == 1 ? "has" : "have");
}

constexpr FormatWriter<Checkup> kDoctorFormats[] = {{"table", doctor_table}, {"json", doctor_json}};

ExitCode run_doctor(Context& ctx, const DoctorArgs& a) {
  readers::ReadOptions opt;
  opt.instances = opt.modules = false;
  Checkup c;
  c.cut = cell_width(ctx, 60);
  model::Report head;
  auto ok = analyse_kernels(ctx, a.report, {.read = opt}, head, [&](model::Kernel&&, const model::Report&, auto&& d) {
    c.rows.push_back({d.index, std::move(d.display), d.bottleneck.cls, std::move(d.data_quality)});
    return true;
  });
  if (!ok) return report_error(ctx, ok.error());
  c.report = head.path;
  c.bad = std::ranges::count_if(c.rows, [](const Health& h) { return is_bad(h.quality); });
  ctx.out << write_format(kDoctorFormats, a.format, c);
  if (c.bad > 0) return ExitCode::Failed;
  return ok->partial_exit;
}

}  // namespace

Command doctor_command() {
  return {"doctor",
          "check what a report holds for each kernel: sections, implausible values, broken captures "
          "(exit 1 when a kernel's data cannot support a diagnosis)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<DoctorArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, format_names(kDoctorFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_doctor(ctx, *a); }; });
          }};
}

}  // namespace keet::app
