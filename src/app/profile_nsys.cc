#include "app/profile_nsys.h"
#include "app/pipeline.h"
#include "util/error.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/engine.h"
#include "analysis/ranking.h"
#include "analysis/timeline_join.h"
#include "app/common.h"
#include "app/timeline_input.h"
#include "render/analysis_text.h"
#include "render/timeline.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

std::string regex_escape(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') out += '\\';
    out += c;
  }
  return out;
}

// Runs a tool with its output shown on stderr; returns its status and output tail.
Result<std::pair<int, std::string>> run_tool(Context& ctx, ProcessRunner& runner, const std::vector<std::string>& args,
                                             int timeout_s) {
  ctx.err << "keet: running " << fmt::format("{}", fmt::join(args, " ")) << "\n";
  OutputTail output;
  KEET_TRY(status, runner.run(
                       args,
                       [&](std::string_view chunk) {
                         output.add(chunk);
                         ctx.err << chunk;
                       },
                       std::chrono::seconds(timeout_s)));
  return std::pair{*status, output.text()};
}

Result<model::TimelineSummary> record_timeline(Context& ctx, const ProfileRequest& r, const NsysProfileRequest& n,
                                               ProcessRunner& runner) {
  auto nsys = find_nsys(n.nsys, ctx.getenv);
  if (!nsys)
    return fail(ExitCode::Dependency, nsys.error().message +
                                          ": install Nsight Systems, put nsys on PATH, set "
                                          "NSYS=/path/to/nsys, or pass --nsys-path");
  KEET_TRY(tail, split_tail(r.tail));
  std::string ncu_name = r.output.empty() ? default_report_path(tail->app) : r.output;
  std::string base = fs::path(ncu_report_file(ncu_name)).replace_extension("").string() + "-timeline";
  std::string report = base + ".nsys-rep";
  std::error_code ec;
  fs::remove(report, ec);
  KEET_TRY(ran, run_tool(ctx, runner, nsys_profile_arguments(*nsys, base, tail->app), r.timeout_s));
  if (!fs::is_regular_file(report, ec))
    return fail(ExitCode::Dependency,
                fmt::format("nsys exited with status {} and wrote no report at {}", ran->first, report));
  ctx.err << "keet: timeline written to " << report << "\n";
  return load_timeline(ctx, TimelineArgs{report, *nsys}, runner);
}

Result<std::string> profile_hot_kernels(Context& ctx, const ProfileRequest& r, const model::TimelineSummary& t,
                                        size_t top, ProcessRunner& runner) {
  KEET_TRY(ncu, find_ncu(r.ncu, ctx.getenv));
  KEET_TRY(tail, split_tail(r.tail));
  std::string name = r.output.empty() ? default_report_path(tail->app) : r.output;
  std::string report = ncu_report_file(name);
  KEET_TRY_VOID(prepare_report_path(report, r.force));
  ProfileRequest all = r;  // the timeline picks the kernels: -k, -s and -c give way to its filter
  all.kernel.clear();
  all.skip.reset();
  all.count.reset();
  all.name_base.clear();
  KEET_TRY(args, ncu_arguments(*ncu, all, name));
  auto filter = hot_kernel_filter(t, top);
  args->insert(args->end() - static_cast<std::ptrdiff_t>(tail->app.size()), filter.begin(), filter.end());
  KEET_TRY(ran, run_tool(ctx, runner, *args, r.timeout_s));
  KEET_TRY_VOID(check_ncu_outcome(ran->first, ran->second, report));
  if (ran->first != 0)
    ctx.err << fmt::format("keet: warning: ncu exited with status {}; analysing what it wrote\n", ran->first);
  ctx.err << "keet: report written to " << report << "\n";
  return report;
}

ExitCode analyse_joined(Context& ctx, const std::string& report, const model::TimelineSummary& t, double threshold) {
  auto analysed = analyse_report(ctx, ReportArgs{.path = report, .allow_partial = true});
  if (!analysed) return report_error(ctx, analysed.error());
  const auto* loaded = &analysed->loaded;
  const auto& d = analysed->diagnosis;
  std::vector<analysis::ProfiledKernel> profiled;
  for (size_t i = 0; i < d.kernels.size() && i < loaded->selected.size(); ++i)
    profiled.push_back(analysis::profiled_kernel(*loaded->selected[i], d.kernels[i]));
  render::TextStyle style{ctx.color(), false};
  ctx.out << render::analysis_text(d, analysis::rank_kernels(loaded->selected), style);
  auto join = analysis::join_timeline(t, profiled, threshold);
  ctx.out << "\n" << render::join_text(join, style);
  if (auto w = analysis::coverage_warning(join); !w.empty()) ctx.err << "keet: warning: " << w << "\n";
  return ExitCode::Ok;
}

}  // namespace

std::vector<std::string> nsys_profile_arguments(const std::string& nsys, const std::string& base,
                                                const std::vector<std::string>& app) {
  std::vector<std::string> args = {nsys, "profile", "--trace", "cuda,nvtx", "--force-overwrite", "true", "-o", base};
  for (size_t i = 0; i < app.size(); ++i) args.push_back(i == 0 && app[i].starts_with('-') ? "./" + app[i] : app[i]);
  return args;
}

std::vector<std::string> hot_kernel_filter(const model::TimelineSummary& t, size_t top) {
  std::vector<std::string> names;
  uint64_t launches = 0;
  for (const auto& k : t.kernels) {
    if (names.size() == top || t.gpu_share(k) <= 0) break;
    names.push_back(regex_escape(k.short_name.empty() ? k.name : k.short_name));
    launches += k.time.count;
  }
  if (names.empty()) return {};
  auto count = std::min<uint64_t>(launches, 3 * names.size());
  return {"--kernel-name-base", "function",
          "--kernel-name",      fmt::format("regex:^({})$", fmt::join(names, "|")),
          "--launch-count",     std::to_string(count)};
}

ExitCode run_profile_nsys(Context& ctx, const ProfileRequest& r, const NsysProfileRequest& n, ProcessRunner& runner) {
  auto t = record_timeline(ctx, r, n, runner);
  if (!t) return report_error(ctx, t.error());
  if (t->kernels.empty())
    return report_error(
        ctx, Error{ExitCode::Dependency, "nsys recorded no kernel: check that the application launches CUDA kernels"});
  auto report = profile_hot_kernels(ctx, r, *t, n.top, runner);
  if (!report) return report_error(ctx, report.error());
  return analyse_joined(ctx, *report, *t, n.coverage_threshold);
}

}  // namespace keet::app
