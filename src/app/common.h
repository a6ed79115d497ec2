// Pieces shared by commands: opening reports, -k, --format, partial reports.
#pragma once
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "app/app.h"
#include "model/report.h"
#include "model/select.h"
#include "readers/reader.h"

namespace keet::app {

// Flags every report-reading command has.
struct ReportArgs {
  std::string path;
  std::string kernel;                                   // -k
  std::string name_base = "function";                   // --kernel-name-base (ncu's default)
  std::string name_shown = "demangled";                 // --name-base: the name printed (ncu's default)
  uint64_t skip = 0;                                    // -s/--launch-skip
  std::optional<uint64_t> count;                        // -c/--launch-count
  std::vector<std::string> nvtx_include, nvtx_exclude;  // --nvtx-include/--nvtx-exclude (as ncu)
  bool allow_partial = false;
  // Commands that take several reports (list, metrics, analyze text and
  // markdown) receive them here; `path` is then set to each in turn.
  std::vector<std::string> paths;
};
// The report at `path`; "-" is standard input, read once and kept in memory
// (commands read a report in several passes).
Result<std::shared_ptr<const io::ByteSource>> open_report(const std::string& path);
// The whole report at `path`, read as every command reads it (warnings stay in
// Report::warnings; load_report prints them).
Result<model::Report> read_report(const std::string& path, const readers::ReadOptions& opt = {});

// -k, --kernel-name-base, NVTX filters, -s and -c as one filter (a fresh one per pass).
Result<model::KernelFilter> kernel_filter(const ReportArgs& a);
// "REPORT: no kernel matches -k K -s S -c C" (exit BadInput), naming the
// selection flags that were given: every command's one wording.
Error no_kernel_matches(const ReportArgs& a);
// After a pass: an NVTX filter on a report without NVTX data is an error, not
// an empty (or unfiltered) answer.
Result<void> check_nvtx(const ReportArgs& a, const model::KernelFilter& f);
Error no_nvtx_error(const ReportArgs& a);
void add_report_args(CLI::App& sub, ReportArgs& a, bool with_kernel = true);
// --name-base (alias --print-kernel-base, as ncu): which name every output
// prints for a kernel. Commands with their own report flags add it themselves.
void add_name_base(CLI::App& sub, std::string& value);
// The read options with the kernels named as --name-base asks.
readers::ReadOptions named_as(const ReportArgs& a, readers::ReadOptions opt);
// The same, taking one or more reports (ReportArgs::paths).
void add_reports_args(CLI::App& sub, ReportArgs& a);
// --report-name NAME: the name an output gives its report instead of the path
// it was read from (keet serve keeps uploads under fixed names; the user's
// file name is only ever text, never a path).
void add_report_name(CLI::App& sub, std::string& name);
// One ReportArgs per report given, in order, each with the shared flags.
std::vector<ReportArgs> each_report(const ReportArgs& a);

// Loads the report; prints warnings on err. A partial report is returned with
// `partial_exit` set to BadInput unless --allow-partial was given.
struct Loaded {
  model::Report report;
  std::vector<const model::Kernel*> selected;
  ExitCode partial_exit = ExitCode::Ok;
};
Result<Loaded> load_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt = {});

// Streams the kernels -k selects to `visit`, one at a time, and drops each
// after the call: a command's memory then does not grow with the report.
// `head` receives everything but the kernels (session, modules, warnings) as
// it is read. `begin` runs once, just before the first selected kernel (or at
// the end when nothing was selected and no -k was given), so a command writes
// its header only once it knows the answer is not an error. Warnings are
// printed on err when `quiet` is false (a second pass over the same file sets it).
struct StreamStats {
  size_t seen = 0, selected = 0;
  ExitCode partial_exit = ExitCode::Ok;
};
struct KernelStream {
  std::function<void(const model::Report& head)> begin;  // may be empty
  std::function<bool(model::Kernel&&, const model::Report& head)> visit;
  bool quiet = false;
  // When set, begin and visit see this report instead of the head being read:
  // a complete head from an earlier pass (see read_head).
  const model::Report* context = nullptr;
};
Result<StreamStats> stream_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt,
                                  model::Report& head, const KernelStream& stream);

// Everything a report says about itself (session, devices, modules,
// warnings) with every kernel skipped. A .ncu-rep may store its session, and
// a kernel's module, after the kernel, so commands whose analysis needs them
// read this first and stream kernels against it (KernelStream::context).
Result<model::Report> read_head(Context& ctx, const ReportArgs& a);
// Read options for a kernel pass that uses such a head: modules are not read again.
readers::ReadOptions kernel_pass_options();

// Options that decode only what a kernel list or a ranking needs (identity,
// duration, device): a pass with them over 20,000 kernels is cheap.
readers::ReadOptions light_options();

// Where a command writes its answer: stdout, or the -o file. The file is
// written under a temporary name beside it and renamed into place by
// commit(), so a command that fails half-way leaves no half-written file.
class OutputTarget {
 public:
  static Result<OutputTarget> open(Context& ctx, const std::string& path);
  OutputTarget(OutputTarget&&) noexcept;
  OutputTarget& operator=(OutputTarget&&) = delete;
  ~OutputTarget();
  std::ostream& stream() { return *out_; }
  Result<void> commit();

 private:
  OutputTarget(std::ostream* out, std::unique_ptr<std::ofstream> file, std::string path, std::string temp);
  std::ostream* out_;
  std::unique_ptr<std::ofstream> file_;
  std::string path_, temp_;
};

// -o as a list of outputs, FORMAT=FILE[,FORMAT=FILE...] (e.g.
// "json=a.json,html=a.html"): the command reads and analyses once and writes
// each format to its file (keet serve's one child per job). A value that is
// not such a list (no part names one of `formats`) is one file in `format`,
// or stdout when empty.
struct OutputSpec {
  std::string format, path;
};
Result<std::vector<OutputSpec>> output_list(const std::string& value, const std::string& format,
                                            const std::vector<std::string>& formats);
// Every output opened (stdout for an empty path), and committed together.
Result<std::vector<OutputTarget>> open_outputs(Context& ctx, const std::vector<OutputSpec>& outputs);
Result<void> commit_outputs(std::vector<OutputTarget>& targets);
// Writes each output with `write(format, stream)` and commits them all.
ExitCode write_outputs(Context& ctx, const std::vector<OutputSpec>& outputs,
                       const std::function<void(const std::string& format, std::ostream& out)>& write,
                       ExitCode ok = ExitCode::Ok);

// -o,--output: a file instead of stdout, or a list of outputs (output_list).
CLI::Option* add_output_option(CLI::App& sub, std::string& value);
// Validates --format against the allowed names (first is the default).
CLI::Option* add_format(CLI::App& sub, std::string& value, std::vector<std::string> allowed);

// A command's output formats as one table: --format's choices (the first is
// the default) and the writer each name selects.
template <class... In>
struct FormatWriter {
  std::string_view name;
  std::string (*write)(const In&...);
};
// Any table of entries with a `name` (FormatWriter, or a command's own when
// its writers take more): --format's choices, and the entry a name selects
// (the first, the default, for a name the table lacks).
template <class F, size_t N>
std::vector<std::string> format_names(const F (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& f : table) out.emplace_back(f.name);
  return out;
}
template <class F, size_t N>
const F& find_format(const F (&table)[N], std::string_view name) {
  for (const auto& f : table)
    if (f.name == name) return f;
  return table[0];
}
// `in` written in the format `name`.
template <size_t N, class... In>
std::string write_format(const FormatWriter<In...> (&table)[N], std::string_view name,
                         const std::type_identity_t<In>&... in) {
  return find_format(table, name).write(in...);
}

// How wide a table on stdout may be: $COLUMNS, else the terminal's width when
// stdout is one, else 100.
size_t output_width(const Context& ctx);
// How wide a table cell may be: `cell` on a terminal, or when $COLUMNS asks
// for a width; 0 (no value cut, no column wrapped) when stdout goes to a pipe
// or a file, where grep and awk read whole names, paths and metrics.
size_t cell_width(const Context& ctx, size_t cell);
// The width a table fits on a terminal (output_width), 0 when piped.
size_t table_width(const Context& ctx);

std::string dim_text(const model::Dim3& d);
std::string duration_text(std::optional<double> ns);
std::string device_of(const model::Kernel& k);

}  // namespace keet::app
