// keet tune: the optimisation loop. A baseline is built, run and profiled in
// a scratch copy of the project; candidate changes (unified diffs from an
// LLM, or -DNAME=value variants for --sweep) are each applied to a fresh
// scratch copy, built, checked against the baseline's result, profiled and
// compared with it; only correct changes that are faster beyond noise are
// kept. Every process goes through ProcessRunner, so tests run the loop with
// stand-in build, run and ncu commands.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/occupancy.h"
#include "app/app.h"
#include "app/common.h"
#include "app/llm_flags.h"
#include "app/profile.h"
#include "render/diff.h"

namespace keet::app {

struct TuneRequest {
  std::string root = ".";          // --root: the project tree (copied, never changed without --apply)
  std::vector<std::string> files;  // --file: what a change may touch, relative to root
  std::string build, run, check;   // shell command lines, run in the scratch copy
  std::string kernel;              // -k, passed to ncu
  std::string ncu;
  std::string out_dir = "keet-tune";
  int candidates = 3, rounds = 1;
  int build_timeout_s = 600, run_timeout_s = 300, profile_timeout_s = 900;
  std::string threshold = "2%";
  bool apply = false;
  std::vector<std::string> sweeps;  // NAME=v1,v2,... or NAME=auto
  std::string format = "text";
  std::string db;          // calibration points go here (default: the history)
  bool no_record = false;  // --no-calibration
  LlmArgs llm;
};

// One attempt, as the report table shows it.
enum class Outcome {
  Faster,
  Unchanged,
  Slower,
  BuildFailed,
  WrongResult,
  RunFailed,
  Timeout,
  ProfileFailed,
  Rejected,
  PatchFailed
};
std::string_view outcome_name(Outcome o);

struct Candidate {
  std::string id;  // "r1-c2", "BLOCK_SIZE=128"
  int round = 0;
  std::string origin;   // "llm" | "sweep"
  std::string target;   // finding the change aims at ("" when unknown)
  std::string defines;  // sweep: "-DBLOCK_SIZE=128"
  std::string diff;     // canonical unified diff (llm)
  Outcome outcome = Outcome::Rejected;
  std::string reason;                        // one line for failures
  std::optional<double> duration_ns;         // total of the profiled kernels
  std::optional<double> measured_speedup;    // round's reference / this
  std::optional<double> predicted_speedup;   // the target finding's estimate in the reference
  std::string dir;                           // artefacts
  std::map<std::string, std::string> files;  // allowed files after the change (kept for the next round)
  bool pending = false;                      // checked and applied in memory, not yet built
};

struct TuneResult {
  std::string baseline_report;
  std::optional<double> baseline_ns;
  std::vector<compare::FindingSummary> baseline_findings;
  std::vector<Candidate> candidates;
  std::optional<size_t> winner;         // index into candidates: the best kept
  std::optional<double> total_speedup;  // baseline / winner
  std::string winner_diff;              // every kept change from the baseline to the winner
  bool applied = false, interrupted = false;
  std::string out_dir;
  double threshold = 0.02;
  std::string mode;  // "llm" | "sweep"
};

// A line of the sweep: NAME and its values ("auto" -> proposed from the occupancy calculator).
struct Sweep {
  std::string name;
  std::vector<std::string> values;  // empty: auto
};
Result<Sweep> parse_sweep(const std::string& flag);
// Block sizes worth trying for a kernel launched with `input` on `arch`: the
// smallest sizes (multiples of the warp) that reach the highest occupancy, the
// launched one, and one below it, at most five, ascending.
std::vector<int> proposed_block_sizes(const analysis::ArchSpec& arch, const analysis::OccupancyInput& input);

ExitCode run_tune(Context& ctx, const TuneRequest& r, ProcessRunner& runner);

// The report: a table of candidates and the winner (text), or keet.tune/1
// (json); on stdout in --format's, and in both in the output folder.
std::string tune_text(const TuneResult& r);
nlohmann::json tune_json(const TuneResult& r);
std::string tune_document(const TuneResult& r);  // tune_json's text
inline constexpr FormatWriter<TuneResult> kTuneFormats[] = {{"text", tune_text}, {"json", tune_document}};

}  // namespace keet::app
