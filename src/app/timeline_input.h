// Opening a timeline for `keet timeline`, `analyze --timeline` and
// `profile --nsys`: an nsys SQLite export is read as it is; an .nsys-rep or
// .qdrep report is first exported by nsys (through ProcessRunner, as
// `keet profile` runs ncu), or, with no nsys at hand, the error names the
// exact command to run. KEET never writes beside the report: an export it
// makes goes to --export-dir or to its cache, named by the report's SHA-256,
// so the next run (and a read-only input folder) needs no nsys.
#pragma once
#include <string>
#include <string_view>

#include "app/app.h"
#include "app/profile.h"
#include "model/timeline.h"
#include "render/diff.h"

namespace keet::app {

struct TimelineArgs {
  std::string path;
  std::string nsys;        // --nsys: the nsys executable
  std::string export_dir;  // --export-dir: where exports go (default: the cache)
  std::string name;        // --report-name: what the output calls the run ("": its path)
};

// --nsys, then $NSYS, then PATH, then /usr/local/cuda*/bin and
// /opt/nvidia/nsight-systems/*/bin (newest first).
Result<std::string> find_nsys(const std::string& flag, const GetEnv& getenv);
// The export nsys writes for a report: "run.nsys-rep" -> "run.sqlite".
std::string export_path_for(const std::string& report);
// Where KEET keeps the export it makes of a report whose bytes hash to
// `sha256`: DIR/<sha256>.sqlite, DIR being --export-dir or $XDG_CACHE_HOME/keet/nsys.
std::string cached_export_path(const std::string& dir, const std::string& sha256);
// The nsys command line that exports `report` to `out`.
std::vector<std::string> nsys_export_arguments(const std::string& nsys, const std::string& report,
                                               const std::string& out);

// Reads the timeline (exporting a report first); errors: 2 bad input, 3 no
// nsys or nsys failed (a report newer than the nsys at hand included).
Result<model::TimelineSummary> load_timeline(Context& ctx, const TimelineArgs& a, ProcessRunner& runner);

// The timeline when --timeline was given, else nullopt.
Result<std::optional<model::TimelineSummary>> load_optional_timeline(Context& ctx, const TimelineArgs& a);

// diff/gate: (after kernel's name, its duration change) per pair, and the
// kernels only the after side has (no change).
std::vector<std::pair<std::string, std::optional<double>>> changes_of(const compare::DiffResult& d);

// diff/gate with --timeline: the changes weighed by the kernels' share of the
// run (a coverage warning on ctx.err), as prose to follow the text or markdown
// report; "" for the other formats, whose documents do not carry it.
std::string change_view(Context& ctx, const model::TimelineSummary& timeline, const compare::DiffResult& d,
                        double coverage_threshold, std::string_view format, bool warn = true);

// Flags shared by the commands that read a timeline.
void add_timeline_flags(CLI::App& sub, TimelineArgs& a, bool positional);
// --timeline T, --nsys and --coverage-threshold for analyze, diff and gate.
void add_app_view_flags(CLI::App& sub, TimelineArgs& a, double& coverage_threshold);

}  // namespace keet::app
