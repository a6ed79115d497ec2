#include "app/common.h"

#include <fmt/format.h>

namespace keet::app {

void add_report_args(CLI::App& sub, ReportArgs& a, bool with_kernel) {
  sub.add_option("report", a.path, "report file (.ncu-rep, .ncu-repz, .nsight-cuprof-report, ncu CSV, nvprof CSV)")
      ->required();
  if (with_kernel)
    sub.add_option("-k,--kernel", a.kernel, "kernel: index, exact name, or regex:<pattern> on the demangled name");
  sub.add_flag("--allow-partial", a.allow_partial, "accept a truncated report (exit 0 with a warning)");
}

Result<Loaded> load_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt) {
  auto sel = model::KernelSelector::parse(a.kernel);
  if (!sel) return std::unexpected(sel.error());
  auto report = readers::load_file(a.path, opt);
  if (!report) return std::unexpected(report.error());
  Loaded l{std::move(*report), {}, ExitCode::Ok};
  for (const auto& w : l.report.warnings) ctx.err << "keet: warning: " << w << "\n";
  if (l.report.partial && !a.allow_partial) l.partial_exit = ExitCode::BadInput;
  l.selected = model::select(l.report, *sel);
  if (l.selected.empty() && !l.report.kernels.empty() && !sel->all())
    return fail(ExitCode::BadInput, fmt::format("{}: no kernel matches -k {}", a.path, a.kernel));
  return l;
}

CLI::Option* add_format(CLI::App& sub, std::string& value, std::vector<std::string> allowed) {
  value = allowed.front();
  return sub.add_option("--format,-f", value, "output format")->check(CLI::IsMember(allowed))->capture_default_str();
}

// (0, 0, 0) is "not in the input" (nvprof tables have no launch shape).
std::string dim_text(const model::Dim3& d) {
  return d.product() == 0 ? "-" : fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

std::string duration_text(std::optional<double> ns) {
  if (!ns) return "-";
  if (*ns >= 1e6) return fmt::format("{:.3f} ms", *ns / 1e6);
  if (*ns >= 1e3) return fmt::format("{:.2f} us", *ns / 1e3);
  return fmt::format("{:.0f} ns", *ns);
}

std::string device_of(const model::Kernel& k) {
  auto name = k.text("device__attribute_display_name");
  return name ? *name : "";
}

}  // namespace keet::app
