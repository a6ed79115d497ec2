#include "app/timeline_input.h"
#include "analysis/run_verdicts.h"
#include "analysis/timeline_join.h"
#include "app/common.h"
#include "app/tool_path.h"
#include "util/error.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "io/file.h"
#include "io/sha256.h"
#include "llm/config.h"
#include "readers/kineto_trace.h"
#include "readers/nsys_export.h"
#include "render/timeline.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

std::optional<std::string> newest_installed() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const char* root : {"/usr/local", "/opt/nvidia/nsight-systems"})
    for (const auto& e : fs::directory_iterator(root, ec)) {
      auto name = e.path().filename().string();
      if (std::string_view(root) == "/usr/local" && !name.starts_with("cuda")) continue;
      if (executable(e.path() / "bin/nsys")) found.push_back(e.path() / "bin/nsys");
    }
  if (found.empty()) return std::nullopt;
  std::ranges::sort(found);
  return found.back().string();
}

std::string shell_word(const std::string& s) {
  bool plain = !s.empty() && std::ranges::all_of(s, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-.,/+=:@", c);
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string how_to_export(const std::string& report) {
  auto out = export_path_for(report);
  return fmt::format("run `nsys export --type sqlite -o {} {}`, then `keet timeline {}`", shell_word(out),
                     shell_word(report), shell_word(out));
}

std::string read_head(const std::string& path) { return io::read_prefix(path, readers::kTimelineHead); }

// An export beside the report and newer than it is the user's own (or
// nsys's): read, never written.
bool fresh_export(const std::string& report, const std::string& out) {
  std::error_code e1, e2;
  auto r = fs::last_write_time(report, e1), o = fs::last_write_time(out, e2);
  return !e1 && !e2 && o >= r && readers::sniff_timeline(read_head(out)) == readers::TimelineFile::NsysExport;
}

bool writable_dir(const fs::path& dir) { return access((dir.empty() ? fs::path(".") : dir).c_str(), W_OK) == 0; }

// What nsys said when it refused, turned into what to do about it.
Error export_failure(const std::string& nsys, const std::string& report, int status, const std::string& output) {
  std::string version = readers::nsys_report_version(read_head(report));
  if (output.find("newer than your current version") != std::string::npos)
    return {ExitCode::Dependency,
            fmt::format("{}: written by Nsight Systems {}, newer than {}, which refuses to export it: with nsys {} or "
                        "later, {}",
                        report, version.empty() ? "(a newer version)" : version, nsys,
                        version.empty() ? "of that version" : version, how_to_export(report))};
  auto last = output.find_last_not_of("\r\n ");
  std::string tail = last == std::string::npos ? "" : output.substr(0, last + 1);
  if (auto nl = tail.find_last_of("\r\n"); nl != std::string::npos) tail = tail.substr(nl + 1);
  return {ExitCode::Dependency, fmt::format("{}: {} export exited with status {} and wrote no SQLite export{}", report,
                                            nsys, status, tail.empty() ? "" : ": " + tail)};
}

bool usable_export(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && readers::sniff_timeline(read_head(path)) == readers::TimelineFile::NsysExport;
}

// The folder KEET's exports go to (--export-dir, else its cache), made if
// need be; "" when it cannot be written.
std::string export_folder(Context& ctx, const TimelineArgs& a) {
  fs::path dir = a.export_dir.empty() ? fs::path(llm::cache_dir(ctx.getenv)) / "nsys" : fs::path(a.export_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  return fs::is_directory(dir, ec) && writable_dir(dir) ? dir.string() : "";
}

// An export KEET made (the file, and whether it is a temporary); an export
// the user made is read but never `ours` to remove.
struct Export {
  std::string path;
  bool temporary = false, ours = false;
};

// Exports `report`, or finds the export made before. Nothing is written beside the report: its folder may be read-only,
// or someone else's (a fixtures folder, a colleague's share).
Result<Export> export_report(Context& ctx, const TimelineArgs& a, ProcessRunner& runner) {
  if (std::string beside = export_path_for(a.path); fresh_export(a.path, beside)) {
    ctx.err << "keet: reading " << beside << ", the export beside the report\n";
    return Export{beside};
  }
  std::string dir = export_folder(ctx, a);
  if (dir.empty() && !a.export_dir.empty())
    return fail(ExitCode::BadInput, fmt::format("--export-dir {}: not a folder keet can write", a.export_dir));
  std::string hash = io::sha256_file_hex(a.path);
  if (hash.empty()) return fail(ExitCode::BadInput, a.path + ": cannot read the report");
  std::string kept = dir.empty() ? "" : cached_export_path(dir, hash);
  if (!kept.empty() && usable_export(kept)) {
    ctx.err << "keet: reading " << kept << ", the export made before of this report\n";
    return Export{kept, false, true};
  }
  auto nsys = find_nsys(a.nsys, ctx.getenv);
  if (!nsys) {
    std::string version = readers::nsys_report_version(read_head(a.path));
    return fail(ExitCode::Dependency,
                fmt::format("{} is an Nsight Systems report{}; keet reads its SQLite export, and no nsys was found "
                            "(--nsys, $NSYS, PATH): {}",
                            a.path, version.empty() ? "" : " (nsys " + version + ")", how_to_export(a.path)));
  }
  // nsys writes a name of this process's own, renamed once whole: another
  // keet reading the same report never sees half an export.
  std::string partial = ((dir.empty() ? fs::temp_directory_path() : fs::path(dir)) /
                         fmt::format("keet-{}-{}.partial.sqlite", getpid(), hash.substr(0, 16)))
                            .string();
  std::error_code ec;
  fs::remove(partial, ec);
  auto args = nsys_export_arguments(*nsys, a.path, partial);
  ctx.err << "keet: running " << fmt::format("{}", fmt::join(args, " ")) << "\n";
  OutputTail output;
  KEET_TRY(status, runner.run(args, [&](std::string_view chunk) { output.add(chunk); }));
  if (!usable_export(partial)) {  // nothing, or half an export: kept nowhere
    fs::remove(partial, ec);
    return std::unexpected(export_failure(*nsys, a.path, *status, output.text()));
  }
  if (kept.empty()) return Export{partial, true, true};
  fs::rename(partial, kept, ec);
  if (ec) return Export{partial, true, true};
  return Export{kept, false, true};
}

// A timeline reader of a file: an nsys SQLite export or a Kineto trace.
using TimelineReader = readers::ReadResult<void> (*)(const std::string& path, model::TimelineSink& sink);
constexpr TimelineReader kReadExport = readers::read_nsys_export;
constexpr TimelineReader kReadKineto = [](const std::string& path, model::TimelineSink& sink) {
  return readers::read_kineto_trace(path, sink);
};

// The run the file at `path` holds, read by `read`, named `shown` in its
// errors and in the summary (the user's name for it, not a cache path).
Result<model::TimelineSummary> read_timeline_file(TimelineReader read, const std::string& path,
                                                  const std::string& shown) {
  model::TimelineBuilder builder(analysis::run_limits());
  if (auto ok = read(path, builder); !ok) {
    auto e = ok.error();
    e.file = shown;
    return fail(ExitCode::BadInput, readers::timeline_error_message(e));
  }
  auto t = std::move(builder).finish();
  t.meta.path = shown;
  return t;
}

}  // namespace

Result<std::string> find_nsys(const std::string& flag, const GetEnv& getenv) {
  for (const auto& explicit_path : {flag, getenv("NSYS")}) {
    if (explicit_path.empty()) continue;
    if (executable(explicit_path)) return explicit_path;
    return fail(ExitCode::Dependency, fmt::format("{}: not an executable nsys", explicit_path));
  }
  if (auto p = on_path("nsys", getenv("PATH"))) return *p;
  if (auto p = newest_installed()) return *p;
  return fail(ExitCode::Dependency, "nsys (Nsight Systems) was not found");
}

std::string export_path_for(const std::string& report) {
  fs::path p(report);
  auto ext = p.extension().string();
  if (ext == ".nsys-rep" || ext == ".qdrep")
    p.replace_extension(".sqlite");
  else
    p += ".sqlite";
  return p.string();
}

std::string cached_export_path(const std::string& dir, const std::string& sha256) {
  return (fs::path(dir) / (sha256 + ".sqlite")).string();
}

std::vector<std::string> nsys_export_arguments(const std::string& nsys, const std::string& report,
                                               const std::string& out) {
  return {nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", out, report};
}

Result<model::TimelineSummary> load_timeline(Context& ctx, const TimelineArgs& a, ProcessRunner& runner) {
  if (a.path == "-") {
    KEET_TRY(bytes, io::read_stdin());
    model::TimelineBuilder builder(analysis::run_limits());
    std::string_view head = std::string_view(*bytes).substr(0, readers::kTimelineHead);
    auto ok = readers::sniff_timeline(head) == readers::TimelineFile::Kineto
                  ? readers::read_kineto_trace_bytes(*bytes, "-", builder)
                  : readers::read_nsys_export_bytes(*bytes, "-", builder);
    if (!ok) return fail(ExitCode::BadInput, readers::timeline_error_message(ok.error()));
    return std::move(builder).finish();
  }
  std::error_code ec;
  if (!fs::is_regular_file(a.path, ec)) return fail(ExitCode::BadInput, a.path + ": no such file");
  switch (readers::sniff_timeline(read_head(a.path))) {
    case readers::TimelineFile::NsysExport:
      return read_timeline_file(kReadExport, a.path, a.name.empty() ? a.path : a.name);
    case readers::TimelineFile::Kineto:
      return read_timeline_file(kReadKineto, a.path, a.name.empty() ? a.path : a.name);
    case readers::TimelineFile::Other:
      return fail(ExitCode::BadInput, a.path +
                                          ": not a timeline (expected an Nsight Systems .nsys-rep/.qdrep report or "
                                          "its SQLite export, or a PyTorch profiler trace, .json or .json.gz)");
    case readers::TimelineFile::NsysReport:
      break;
  }
  KEET_TRY(exported, export_report(ctx, a, runner));
  auto t = read_timeline_file(kReadExport, exported->path, a.name.empty() ? a.path : a.name);
  // A temporary goes; so does a kept export that does not read (a disk that
  // filled up while nsys wrote it), so the next run exports again.
  if (exported->temporary || (!t && exported->ours)) fs::remove(exported->path, ec);
  return t;
}

Result<std::optional<model::TimelineSummary>> load_optional_timeline(Context& ctx, const TimelineArgs& a) {
  if (a.path.empty()) return std::optional<model::TimelineSummary>();
  KEET_TRY(t, load_timeline(ctx, a, system_runner()));
  return std::optional<model::TimelineSummary>(std::move(*t));
}

std::vector<std::pair<std::string, std::optional<double>>> changes_of(const compare::DiffResult& d) {
  std::vector<std::pair<std::string, std::optional<double>>> out;
  for (const auto& p : d.pairs) out.emplace_back(p.after.display, p.change);
  for (const auto& k : d.unmatched_after) out.emplace_back(k.display, std::nullopt);
  return out;
}

std::string change_view(Context& ctx, const model::TimelineSummary& timeline, const compare::DiffResult& d,
                        double coverage_threshold, std::string_view format, bool warn) {
  auto v = analysis::weigh_changes(timeline, changes_of(d), coverage_threshold);
  if (auto w = analysis::coverage_warning(v.join); !w.empty() && warn) ctx.err << "keet: warning: " << w << "\n";
  if (format != "text" && format != "markdown") return "";
  return render::change_view_text(v, format == "markdown");
}

void add_timeline_flags(CLI::App& sub, TimelineArgs& a, bool positional) {
  if (positional)
    sub.add_option(
           "timeline", a.path,
           "Nsight Systems report (.nsys-rep, .qdrep) or its SQLite export, or a PyTorch profiler (Kineto) trace "
           "(.json, .json.gz); - reads an export or a trace from standard input")
        ->required();
  if (positional) add_report_name(sub, a.name);
  sub.add_option("--nsys", a.nsys,
                 "nsys executable to export a report with (default: $NSYS, PATH, /usr/local/cuda*/bin)");
  sub.add_option("--export-dir", a.export_dir,
                 "folder for the SQLite export keet makes of an .nsys-rep (default: $XDG_CACHE_HOME/keet/nsys); "
                 "never beside the report");
}

void add_app_view_flags(CLI::App& sub, TimelineArgs& a, double& coverage_threshold) {
  sub.add_option("--timeline", a.path,
                 "timeline of the same run (Nsight Systems .nsys-rep, .qdrep or SQLite export, or a PyTorch profiler "
                 "trace): rank kernels by their "
                 "share of the application's GPU time and turn kernel speedups into application gains");
  add_timeline_flags(sub, a, false);
  sub.add_option("--coverage-threshold", coverage_threshold,
                 "warn when the profiled kernels carry less than this share of the timeline's GPU time")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

}  // namespace keet::app
