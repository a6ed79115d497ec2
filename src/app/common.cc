#include "app/common.h"
#include "util/error.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ranges>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "analysis/derived.h"
#include "model/units.h"

namespace keet::app {

namespace {
void add_selection_args(CLI::App& sub, ReportArgs& a, bool with_kernel);
}

void add_report_args(CLI::App& sub, ReportArgs& a, bool with_kernel) {
  sub.add_option(
         "report", a.path,
         "report file (.ncu-rep, .ncu-repz, .nsight-cuprof-report, ncu CSV, nvprof CSV); - reads standard input")
      ->required();
  add_selection_args(sub, a, with_kernel);
}

void add_reports_args(CLI::App& sub, ReportArgs& a) {
  sub.add_option("report", a.paths,
                 "one or more report files (.ncu-rep, .ncu-repz, .nsight-cuprof-report, ncu CSV, nvprof CSV), taken "
                 "in order; - reads standard input")
      ->required();
  add_selection_args(sub, a, true);
}

void add_report_name(CLI::App& sub, std::string& name) {
  sub.add_option("--report-name", name, "name the report by NAME in the output instead of by its path");
}

std::vector<ReportArgs> each_report(const ReportArgs& a) {
  if (a.paths.empty()) return {a};
  std::vector<ReportArgs> out;
  for (const auto& p : a.paths) {
    out.push_back(a);
    out.back().path = p;
    out.back().paths.clear();
  }
  return out;
}

namespace {
void add_selection_args(CLI::App& sub, ReportArgs& a, bool with_kernel) {
  if (with_kernel) {
    sub.add_option("-k,--kernel", a.kernel,
                   "kernel: index, exact name, or regex:<pattern> searched in the --kernel-name-base name");
    sub.add_option("--kernel-name-base", a.name_base, "name -k's regex is searched in (as ncu)")
        ->check(CLI::IsMember({"function", "demangled", "mangled"}))
        ->capture_default_str();
    sub.add_option("-s,--launch-skip", a.skip, "skip this many of the kernels -k selects (as ncu)");
    sub.add_option("-c,--launch-count", a.count, "take at most this many of the kernels -k selects (as ncu)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--nvtx-include", a.nvtx_include,
                   "only kernels in this NVTX range (as ncu: Range, Domain@Range, Range/, [Range, Range], A/*/B); "
                   "repeatable, all must match");
    sub.add_option("--nvtx-exclude", a.nvtx_exclude, "leave out kernels in this NVTX range (same syntax; repeatable)");
  }
  add_name_base(sub, a.name_shown);
  sub.add_flag("--allow-partial", a.allow_partial, "accept a truncated report (exit 0 with a warning)");
}
}  // namespace

void add_name_base(CLI::App& sub, std::string& value) {
  sub.add_option("--name-base,--print-kernel-base", value,
                 "kernel name printed: function, demangled or mangled (as ncu's --print-kernel-base)")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}))
      ->capture_default_str();
}

readers::ReadOptions named_as(const ReportArgs& a, readers::ReadOptions opt) {
  // The flag's check admits only the three names; a ReportArgs built in code
  // with another keeps the default.
  opt.name_shown = model::parse_name_base(a.name_shown).value_or(model::NameBase::Demangled);
  return opt;
}

Result<model::KernelFilter> kernel_filter(const ReportArgs& a) {
  auto base = model::parse_name_base(a.name_base);
  if (!base)
    return fail(ExitCode::BadInput, "--kernel-name-base " + a.name_base + ": expected function, demangled or mangled");
  KEET_TRY(sel, model::KernelSelector::parse(a.kernel, *base));
  KEET_TRY(nvtx, model::NvtxFilter::parse(a.nvtx_include, a.nvtx_exclude));
  return model::KernelFilter(std::move(*sel), a.skip, a.count, std::move(*nvtx));
}

Error no_nvtx_error(const ReportArgs& a) {
  return {ExitCode::BadInput, fmt::format("{}: the report holds no NVTX data (profile with ncu --nvtx), so "
                                          "--nvtx-include/--nvtx-exclude cannot select kernels",
                                          a.path)};
}

Result<void> check_nvtx(const ReportArgs& a, const model::KernelFilter& f) {
  if (!f.lacked_nvtx()) return {};
  return std::unexpected(no_nvtx_error(a));
}

Result<std::shared_ptr<const io::ByteSource>> open_report(const std::string& path) {
  if (path != "-") {
    KEET_TRY(src, io::open_file(path));
    return std::shared_ptr<const io::ByteSource>(std::move(*src));
  }
  static std::shared_ptr<const io::ByteSource> piped;  // stdin can be read only once
  if (!piped) {
    KEET_TRY(data, io::read_stdin());
    piped = io::memory_source("-", std::move(*data));
  }
  return piped;
}

Error no_kernel_matches(const ReportArgs& a) {
  std::string sel = a.kernel.empty() ? "" : " -k " + a.kernel;
  if (a.skip) sel += fmt::format(" -s {}", a.skip);
  if (a.count) sel += fmt::format(" -c {}", *a.count);
  return Error{ExitCode::BadInput, fmt::format("{}: no kernel matches{}", a.path, sel)};
}

Result<model::Report> read_report(const std::string& path, const readers::ReadOptions& opt) {
  KEET_TRY(src, open_report(path));
  auto report = readers::load(**src, opt);
  if (!report) return fail(ExitCode::BadInput, report.error().message());
  return std::move(*report);
}

Result<Loaded> load_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt) {
  KEET_TRY(filter, kernel_filter(a));
  KEET_TRY(report, read_report(a.path, named_as(a, opt)));
  Loaded l{std::move(*report), {}, ExitCode::Ok};
  for (const auto& w : l.report.warnings) ctx.err << "keet: warning: " << w << "\n";
  if (l.report.partial && !a.allow_partial) l.partial_exit = ExitCode::BadInput;
  for (const auto& k : l.report.kernels)
    if (filter->take(k)) l.selected.push_back(&k);
  KEET_TRY_VOID(check_nvtx(a, *filter));
  if (l.selected.empty() && !l.report.kernels.empty() && !filter->all()) return std::unexpected(no_kernel_matches(a));
  return l;
}

Result<StreamStats> stream_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt,
                                  model::Report& head, const KernelStream& stream) {
  KEET_TRY(filter, kernel_filter(a));
  KEET_TRY(src, open_report(a.path));
  StreamStats stats;
  auto ok = readers::stream_into(**src, named_as(a, opt), head, [&](model::Kernel&& k) {
    ++stats.seen;
    if (!filter->take(k)) return !filter->done();  // -c reached: the rest of the file is not needed
    const model::Report& context = stream.context ? *stream.context : head;
    if (stats.selected++ == 0 && stream.begin) stream.begin(context);
    return stream.visit(std::move(k), context) && !filter->done();
  });
  if (!ok) return fail(ExitCode::BadInput, ok.error().message());
  KEET_TRY_VOID(check_nvtx(a, *filter));
  if (!stream.quiet)
    for (const auto& w : head.warnings) ctx.err << "keet: warning: " << w << "\n";
  if (head.partial && !a.allow_partial) stats.partial_exit = ExitCode::BadInput;
  if (stats.selected == 0 && stats.seen > 0 && !filter->all()) return std::unexpected(no_kernel_matches(a));
  if (stats.selected == 0 && stream.begin) stream.begin(stream.context ? *stream.context : head);
  return stats;
}

Result<model::Report> read_head(Context& ctx, const ReportArgs& a) {
  readers::ReadOptions opt;
  opt.kernels = false;
  opt.instances = opt.rules = opt.metrics = false;
  opt.allow_partial = true;  // the kernel pass decides what a truncation means
  model::Report head;
  ReportArgs all = a;
  all.kernel.clear();  // no kernel reaches the selector in this pass
  all.skip = 0;
  all.count.reset();
  all.nvtx_include.clear();
  all.nvtx_exclude.clear();
  KEET_TRY(ok, stream_report(ctx, all, opt, head,
                             {.visit = [](model::Kernel&&, const model::Report&) { return true; }, .quiet = true}));
  return head;
}

OutputTarget::OutputTarget(std::ostream* out, std::unique_ptr<std::ofstream> file, std::string path, std::string temp)
    : out_(out), file_(std::move(file)), path_(std::move(path)), temp_(std::move(temp)) {}

OutputTarget::OutputTarget(OutputTarget&& o) noexcept
    : out_(o.out_), file_(std::move(o.file_)), path_(std::move(o.path_)), temp_(std::move(o.temp_)) {
  o.temp_.clear();
}

OutputTarget::~OutputTarget() {
  if (temp_.empty()) return;
  file_.reset();
  std::remove(temp_.c_str());  // not committed: the answer is incomplete
}

Result<OutputTarget> OutputTarget::open(Context& ctx, const std::string& path) {
  if (path.empty()) return OutputTarget(&ctx.out, nullptr, "", "");
  std::string temp = path + ".keet-partial";
  auto file = std::make_unique<std::ofstream>(temp, std::ios::binary | std::ios::trunc);
  if (!*file) return fail(ExitCode::BadInput, fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  std::ostream* out = file.get();
  return OutputTarget(out, std::move(file), path, std::move(temp));
}

Result<void> OutputTarget::commit() {
  if (!file_) {
    out_->flush();
    return {};
  }
  file_->flush();
  bool written = file_->good();
  file_->close();
  if (!written || std::rename(temp_.c_str(), path_.c_str()) != 0)
    return fail(ExitCode::BadInput, fmt::format("{}: cannot write: {}", path_, std::strerror(errno)));
  temp_.clear();
  return {};
}

namespace {

// "json=a.json" -> {json, a.json} when json is one of `formats`.
std::optional<OutputSpec> output_part(std::string_view part, const std::vector<std::string>& formats) {
  auto eq = part.find('=');
  if (eq == std::string_view::npos || eq + 1 == part.size()) return std::nullopt;
  auto name = part.substr(0, eq);
  if (std::ranges::find(formats, name) == formats.end()) return std::nullopt;
  return OutputSpec{std::string(name), std::string(part.substr(eq + 1))};
}

}  // namespace

Result<std::vector<OutputSpec>> output_list(const std::string& value, const std::string& format,
                                            const std::vector<std::string>& formats) {
  std::vector<OutputSpec> list;
  for (auto part : std::views::split(std::string_view(value), ',')) {
    auto spec = output_part(std::string_view(part.begin(), part.end()), formats);
    if (!spec) break;
    list.push_back(std::move(*spec));
  }
  if (list.empty() || value.empty()) return std::vector<OutputSpec>{{format.empty() ? formats.front() : format, value}};
  if (static_cast<size_t>(std::ranges::count(value, ',')) + 1 != list.size())
    return fail(ExitCode::BadInput, fmt::format("-o {}: a list of outputs is FORMAT=FILE,... with FORMAT one of {}",
                                                value, fmt::join(formats, ", ")));
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      if (list[i].format == list[j].format)
        return fail(ExitCode::BadInput, fmt::format("-o: {} is given twice", list[i].format));
      if (list[i].path == list[j].path)
        return fail(ExitCode::BadInput, fmt::format("-o: {} is named twice", list[i].path));
    }
  return list;
}

Result<std::vector<OutputTarget>> open_outputs(Context& ctx, const std::vector<OutputSpec>& outputs) {
  std::vector<OutputTarget> targets;
  for (const auto& o : outputs) {
    KEET_TRY(t, OutputTarget::open(ctx, o.path));
    targets.push_back(std::move(*t));
  }
  return targets;
}

Result<void> commit_outputs(std::vector<OutputTarget>& targets) {
  for (auto& t : targets)
    if (auto w = t.commit(); !w) return w;
  return {};
}

ExitCode write_outputs(Context& ctx, const std::vector<OutputSpec>& outputs,
                       const std::function<void(const std::string& format, std::ostream& out)>& write, ExitCode ok) {
  auto targets = open_outputs(ctx, outputs);
  if (!targets) return report_error(ctx, targets.error());
  for (size_t i = 0; i < outputs.size(); ++i) write(outputs[i].format, (*targets)[i].stream());
  if (auto w = commit_outputs(*targets); !w) return report_error(ctx, w.error());
  return ok;
}

readers::ReadOptions kernel_pass_options() {
  readers::ReadOptions o;
  o.modules = false;
  return o;
}

readers::ReadOptions light_options() {
  readers::ReadOptions o;
  o.instances = o.rules = o.modules = false;
  o.metric_filter = [](std::string_view n) {
    return analysis::is_duration_metric(n) || n == "device__attribute_display_name" ||
           n == "device__attribute_compute_capability_major" || n == "device__attribute_compute_capability_minor";
  };
  o.metric_filter_by_name = true;
  return o;
}

CLI::Option* add_output_option(CLI::App& sub, std::string& value) {
  return sub.add_option("-o,--output", value,
                        "write to this file instead of stdout; FORMAT=FILE,... writes each format to its file from "
                        "one reading (e.g. json=a.json,html=a.html)");
}

CLI::Option* add_format(CLI::App& sub, std::string& value, std::vector<std::string> allowed) {
  value = allowed.front();
  return sub.add_option("--format,-f", value, "output format")->check(CLI::IsMember(allowed))->capture_default_str();
}

size_t output_width(const Context& ctx) {
  auto columns = ctx.getenv("COLUMNS");
  size_t n = 0;
  if (auto [p, ec] = std::from_chars(columns.data(), columns.data() + columns.size(), n); ec == std::errc() && n >= 40)
    return n;
  winsize ws{};
  if (ctx.out_is_tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 100;
}

size_t cell_width(const Context& ctx, size_t cell) { return table_width(ctx) == 0 ? 0 : cell; }

size_t table_width(const Context& ctx) {
  return ctx.out_is_tty || !ctx.getenv("COLUMNS").empty() ? output_width(ctx) : 0;
}

// (0, 0, 0) is "not in the input" (nvprof tables have no launch shape).
std::string dim_text(const model::Dim3& d) {
  return d.product() == 0 ? "-" : fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

std::string duration_text(std::optional<double> ns) { return ns ? model::readable_duration(*ns) : "-"; }

std::string device_of(const model::Kernel& k) {
  auto name = k.text("device__attribute_display_name");
  return name ? *name : "";
}

}  // namespace keet::app
