#include "app/tune.h"
#include "util/error.h"

#include <algorithm>
#include <csignal>
#include <fstream>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "app/compare.h"
#include "app/tune_llm.h"
#include "app/tune_workspace.h"
#include "util/json.h"
#include "util/strings.h"
#include "util/unified_diff.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

// A state of the project the loop measured: the allowed files' contents, the
// report of its profile and the changes from the baseline that led to it.
struct Reference {
  std::map<std::string, std::string> files;
  std::string report;
  std::vector<compare::KernelSnapshot> kernels;
  std::optional<double> total_ns;
  std::string chain;  // unified diffs from the baseline
};

struct Loop {
  Context& ctx;
  const TuneRequest& req;
  ProcessRunner& runner;
  fs::path root, out, scratch;
  std::string ncu;
  double threshold = 0.02;
  fs::path baseline_output;  // the baseline's run output, what a candidate's must match
  std::vector<compare::CalibrationPoint> calibration;
};

std::optional<double> total_duration(const std::vector<compare::KernelSnapshot>& ks) {
  std::optional<double> total;
  for (const auto& k : ks)
    if (k.duration_ns) total = total.value_or(0) + *k.duration_ns;
  return total;
}

std::string with_defines(const std::string& build, const std::string& defines) {
  std::string out = build;
  for (size_t at; (at = out.find("{defines}")) != std::string::npos;) out.replace(at, 9, defines);
  return out;
}

void progress(Loop& L, const std::string& id, const std::string& what) {
  L.ctx.err << "keet: [" << id << "] " << what << "\n";
}

// Builds, runs, checks and profiles the tree in `dir`; artefacts go to `art`.
// Returns the report path, or the outcome that stopped it.
struct Measured {
  std::optional<Outcome> failed;
  std::string reason, report;
};

Measured fail_with(Outcome o, std::string reason) { return {o, std::move(reason), ""}; }

Measured step_failure(const StepResult& s, Outcome on_status, const std::string& what, const fs::path& log, int limit) {
  if (s.interrupted) return fail_with(on_status, what + " interrupted");
  if (s.timed_out) return fail_with(Outcome::Timeout, fmt::format("{} ran past its {} s limit", what, limit));
  if (!s.error.empty()) return fail_with(on_status, what + ": " + s.error);
  return fail_with(on_status,
                   fmt::format("{} exited with status {} (see {})", what, s.status, log.filename().string()));
}

Measured profile_tree(Loop& L, const fs::path& dir, const fs::path& art, const std::string& id) {
  ProfileRequest pr;  // by field: keet profile's request grows with its flags
  pr.ncu = L.ncu;
  pr.kernel = L.req.kernel;
  pr.output = (art / "report").string();
  pr.tail = shell_in(dir, L.req.run);  // a shell word first: all of it is the application
  pr.timeout_s = L.req.profile_timeout_s;
  std::string report = ncu_report_file(pr.output);
  std::error_code ec;
  fs::remove(report, ec);
  progress(L, id, "profiling");
  std::ofstream log(art / "profile.log", std::ios::binary);
  auto args = ncu_arguments(L.ncu, pr, pr.output);
  if (!args) return fail_with(Outcome::ProfileFailed, args.error().message);
  OutputTail tail;
  auto status = L.runner.run(
      *args,
      [&](std::string_view chunk) {
        tail.add(chunk);
        log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      },
      std::chrono::seconds(L.req.profile_timeout_s));
  if (!status) {
    bool timeout = status.error().message.find("longer than") != std::string::npos;
    return fail_with(timeout ? Outcome::Timeout : Outcome::ProfileFailed, status.error().message);
  }
  if (*status == 128 + SIGINT) return fail_with(Outcome::ProfileFailed, "profiling interrupted");
  if (auto ok = check_ncu_outcome(*status, tail.text(), report); !ok)
    return fail_with(Outcome::ProfileFailed, ok.error().message);
  return {std::nullopt, "", report};
}

Measured measure(Loop& L, const fs::path& dir, const fs::path& art, const std::string& id, const std::string& defines,
                 bool baseline) {
  progress(L, id, "building");
  auto b = run_step(L.runner, dir, with_defines(L.req.build, defines), L.req.build_timeout_s, art / "build.log");
  if (!b.ok()) return step_failure(b, Outcome::BuildFailed, "build", art / "build.log", L.req.build_timeout_s);
  progress(L, id, "running");
  auto r = run_step(L.runner, dir, L.req.run, L.req.run_timeout_s, art / "run.log");
  if (!r.ok()) return step_failure(r, Outcome::RunFailed, "run", art / "run.log", L.req.run_timeout_s);
  if (!L.req.check.empty()) {
    auto c = run_step(L.runner, dir, L.req.check, L.req.run_timeout_s, art / "check.log");
    if (c.timed_out) return step_failure(c, Outcome::WrongResult, "check", art / "check.log", L.req.run_timeout_s);
    if (!c.ok())
      return fail_with(Outcome::WrongResult, fmt::format("the check failed (status {}, see check.log)", c.status));
  } else if (!baseline) {
    if (auto line = first_difference(L.baseline_output, art / "run.log"))
      return fail_with(Outcome::WrongResult,
                       fmt::format("the run's output differs from the baseline's at line {}", *line));
  }
  return profile_tree(L, dir, art, id);
}

// A fresh scratch copy of the project with `files` written over it.
Result<fs::path> materialise(Loop& L, const std::string& id, const std::map<std::string, std::string>& files) {
  fs::path dir = L.scratch / id;
  std::error_code ec;
  fs::remove_all(dir, ec);
  KEET_TRY_VOID(copy_tree(L.root, dir, {L.out}));
  for (const auto& [rel, text] : files) KEET_TRY_VOID(write_in_tree(dir, rel, text));
  return dir;
}

Result<std::vector<compare::KernelSnapshot>> analysed(Loop& L, const std::string& report) {
  KEET_TRY(a, load_and_analyse(L.ctx, ReportArgs{.path = report, .allow_partial = true}));
  return std::move(a->kernels);
}

// Candidate vs the reference: the verdict on the total time of the profiled
// kernels, the pair diff for calibration, artefact diff.json. One kernel each
// side pairs whatever its name (a fix may rename the kernel; diff.json says
// only_kernel); with more, by name only, so a calibration point never rests
// on a pair guessed from launch configurations.
void judge(Loop& L, Candidate& c, const Reference& ref, std::vector<compare::KernelSnapshot> kernels) {
  c.duration_ns = total_duration(kernels);
  compare::DiffOptions opt{.threshold = L.threshold};
  if (ref.kernels.size() == 1 && kernels.size() == 1) opt.matching = compare::Matching::NameThenRenamed;
  auto d = compare::diff(ref.kernels, kernels, opt);
  io::write_text_file((fs::path(c.dir) / "diff.json").string(), json_text(compare::diff_json(d), 2) + "\n");
  for (auto& p : compare::calibration_points(d, "tune", L.ctx.clock() / 1000)) L.calibration.push_back(std::move(p));
  for (const auto& f : ref.kernels.empty() ? std::vector<compare::FindingSummary>{} : ref.kernels[0].findings)
    if (f.id == c.target) c.predicted_speedup = f.estimated_speedup;
  if (!ref.total_ns || !c.duration_ns || *c.duration_ns <= 0) {
    c.outcome = Outcome::ProfileFailed;
    c.reason = "the reports hold no kernel duration to compare";
    return;
  }
  c.measured_speedup = *ref.total_ns / *c.duration_ns;
  double change = *c.duration_ns / *ref.total_ns - 1;
  c.outcome = change < -L.threshold ? Outcome::Faster : change > L.threshold ? Outcome::Slower : Outcome::Unchanged;
}

// Which of the allowed files a patch may touch; a reason when it may not.
std::optional<std::string> forbidden(const std::vector<FilePatch>& patches, const std::vector<std::string>& allowed) {
  for (const auto& p : patches) {
    if (p.old_path == "/dev/null" || p.new_path == "/dev/null")
      return fmt::format("creates or deletes {}: only changes to existing files are tried", p.path());
    auto safe = safe_relative_path(p.path());
    auto old_safe = safe_relative_path(p.old_path);
    if (!safe || !old_safe || *safe != *old_safe)
      return fmt::format("touches {}, which is not a path inside the project", p.path());
    if (std::ranges::find(allowed, *safe) == allowed.end())
      return fmt::format("touches {}, outside the allowed files", *safe);
  }
  return std::nullopt;
}

// Applies the candidate's diff to the reference's files, in memory.
std::optional<std::string> apply_all(const std::vector<FilePatch>& patches, std::map<std::string, std::string>& files) {
  for (const auto& p : patches) {
    auto rel = *safe_relative_path(p.path());
    auto applied = apply_patch(files.at(rel), p);
    if (!applied) return applied.error().message;
    files[rel] = std::move(*applied);
  }
  return std::nullopt;
}

void try_candidate(Loop& L, Candidate& c, const Reference& ref) {
  fs::create_directories(c.dir);
  auto dir = materialise(L, fs::path(c.dir).filename().string(), c.files);
  if (!dir) {
    c.outcome = Outcome::PatchFailed;
    c.reason = dir.error().message;
    return;
  }
  auto m = measure(L, *dir, c.dir, c.id, c.defines, false);
  std::error_code ec;
  fs::remove_all(*dir, ec);
  if (m.failed) {
    c.outcome = *m.failed;
    c.reason = m.reason;
    return;
  }
  auto kernels = analysed(L, m.report);
  if (!kernels) {
    c.outcome = Outcome::ProfileFailed;
    c.reason = kernels.error().message;
    return;
  }
  judge(L, c, ref, std::move(*kernels));
}

std::string candidate_line(const Candidate& c) {
  std::string line = std::string(outcome_name(c.outcome));
  if (c.measured_speedup) line += fmt::format(", {:.2f}x", *c.measured_speedup);
  if (!c.reason.empty()) line += ": " + c.reason;
  return line;
}

// The candidates an LLM proposes against `ref`, checked and applied in memory.
Result<std::vector<Candidate>> llm_candidates(Loop& L, LlmRuntime& rt, const Reference& ref, int round) {
  KEET_TRY(proposals, ask_for_changes(L.ctx, rt, L.req, ref.report, ref.files, L.req.candidates));
  std::vector<Candidate> out;
  for (size_t i = 0; i < proposals->size(); ++i) {
    const auto& p = (*proposals)[i];
    Candidate c{.id = fmt::format("r{}-c{}", round, i + 1), .round = round, .origin = "llm", .target = p.target};
    c.dir = (L.out / c.id).string();
    fs::create_directories(c.dir);
    io::write_text_file((fs::path(c.dir) / "proposed.diff").string(), p.diff);
    c.files = ref.files;
    auto patches = parse_unified_diff(p.diff);
    if (!patches) {
      c.outcome = Outcome::PatchFailed;
      c.reason = "not a usable unified diff: " + patches.error().message;
    } else if (auto why = forbidden(*patches, L.req.files)) {
      c.outcome = Outcome::Rejected;
      c.reason = *why;
    } else if (auto bad = apply_all(*patches, c.files)) {
      c.outcome = Outcome::PatchFailed;
      c.reason = *bad;
    } else {
      for (const auto& fp : *patches) c.diff += format_unified_diff(fp);
      io::write_text_file((fs::path(c.dir) / "candidate.diff").string(), c.diff);
      c.pending = true;
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<Reference> measure_baseline(Loop& L, TuneResult& result) {
  Reference ref;
  for (const auto& rel : L.req.files) {
    KEET_TRY(text, read_in_tree(L.root, rel));
    ref.files[rel] = std::move(*text);
  }
  fs::path art = L.out / "baseline";
  fs::create_directories(art);
  KEET_TRY(dir, materialise(L, "baseline", {}));
  auto m = measure(L, *dir, art, "baseline", "", true);
  std::error_code ec;
  fs::remove_all(*dir, ec);
  if (m.failed) {
    if (tune_interrupted()) return fail(ExitCode::Failed, "interrupted; the project was not changed");
    return fail(m.failed == Outcome::ProfileFailed ? ExitCode::Dependency : ExitCode::BadInput,
                fmt::format("the baseline failed: {} ({})", m.reason, art.string()));
  }
  L.baseline_output = art / "run.log";
  KEET_TRY(kernels, analysed(L, m.report));
  ref.report = m.report;
  ref.kernels = std::move(*kernels);
  ref.total_ns = total_duration(ref.kernels);
  if (!ref.total_ns)
    return fail(ExitCode::BadInput, m.report + ": the baseline's report holds no kernel duration to compare against");
  result.baseline_report = ref.report;
  result.baseline_ns = ref.total_ns;
  if (!ref.kernels.empty()) result.baseline_findings = ref.kernels[0].findings;
  return ref;
}

// The fastest candidate of `from` that was kept.
std::optional<size_t> best_of(const std::vector<Candidate>& cs, size_t from) {
  std::optional<size_t> best;
  for (size_t i = from; i < cs.size(); ++i)
    if (cs[i].outcome == Outcome::Faster && (!best || *cs[i].duration_ns < *cs[*best].duration_ns)) best = i;
  return best;
}

Result<void> llm_rounds(Loop& L, Reference ref, TuneResult& result) {
  KEET_TRY(rt, LlmRuntime::create(L.ctx, L.req.llm));
  for (int round = 1; round <= L.req.rounds && !tune_interrupted(); ++round) {
    KEET_TRY(cs, llm_candidates(L, **rt, ref, round));
    if (L.req.llm.dry_run) return {};
    size_t first = result.candidates.size();
    for (auto& c : *cs) {
      if (c.pending && !tune_interrupted()) {
        try_candidate(L, c, ref);
      } else if (c.pending) {
        c.outcome = Outcome::RunFailed;
        c.reason = "not tried: interrupted";
      }
      c.pending = false;
      progress(L, c.id, candidate_line(c));
      result.candidates.push_back(std::move(c));
    }
    auto best = best_of(result.candidates, first);
    if (!best) break;  // nothing kept: the next round would start from the same place
    const auto& w = result.candidates[*best];
    ref = Reference{w.files, (fs::path(w.dir) / "report.ncu-rep").string(), {}, w.duration_ns, ref.chain + w.diff};
    KEET_TRY(kernels, analysed(L, ref.report));
    ref.kernels = std::move(*kernels);
    result.winner = best;
    result.winner_diff = ref.chain;
  }
  return {};
}

std::vector<std::vector<std::pair<std::string, std::string>>> variants(const std::vector<Sweep>& sweeps) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out = {{}};
  for (const auto& s : sweeps) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& prefix : out)
      for (const auto& v : s.values) {
        auto row = prefix;
        row.emplace_back(s.name, v);
        next.push_back(std::move(row));
      }
    out = std::move(next);
  }
  return out;
}

// NAME=auto: block sizes from the occupancy calculator on the baseline's launch.
Result<std::vector<std::string>> auto_values(Loop& L, const Reference& ref, const std::string& name) {
  KEET_TRY(loaded, load_report(L.ctx, ReportArgs{.path = ref.report, .allow_partial = true}));
  for (const auto* k : loaded->selected)
    if (auto occ = analysis::kernel_occupancy(loaded->report, *k); occ && occ->device.known()) {
      std::vector<std::string> out;
      for (int size : proposed_block_sizes(occ->device.arch, occ->input)) out.push_back(std::to_string(size));
      L.ctx.err << fmt::format("keet: {}=auto: trying {} (occupancy calculator, sm_{}{}, {} registers/thread)\n", name,
                               fmt::join(out, ","), occ->device.arch.cc.major, occ->device.arch.cc.minor,
                               occ->input.registers_per_thread);
      return out;
    }
  return fail(ExitCode::BadInput, fmt::format("{}=auto: the baseline's report has no launch statistics (block size, "
                                              "registers, device) to propose block sizes from; give the values",
                                              name));
}

Result<void> sweep_variants(Loop& L, const Reference& ref, TuneResult& result) {
  std::vector<Sweep> sweeps;
  for (const auto& flag : L.req.sweeps) {
    KEET_TRY(s, parse_sweep(flag));
    if (s->values.empty()) {
      KEET_TRY(v, auto_values(L, ref, s->name));
      s->values = std::move(*v);
    }
    sweeps.push_back(std::move(*s));
  }
  for (const auto& row : variants(sweeps)) {
    if (tune_interrupted()) break;
    Candidate c{.round = 1, .origin = "sweep"};
    for (const auto& [name, value] : row) {
      c.id += (c.id.empty() ? "" : ",") + name + "=" + value;
      c.defines += (c.defines.empty() ? "-D" : " -D") + name + "=" + value;
    }
    c.dir = (L.out / ("sweep-" + std::to_string(result.candidates.size() + 1))).string();
    c.files = ref.files;
    try_candidate(L, c, ref);
    progress(L, c.id, candidate_line(c));
    result.candidates.push_back(std::move(c));
  }
  // Ranked by measured time, fastest first; variants with no time after them.
  std::ranges::stable_sort(result.candidates, [](const Candidate& a, const Candidate& b) {
    if (a.duration_ns && b.duration_ns) return *a.duration_ns < *b.duration_ns;
    return a.duration_ns.has_value() && !b.duration_ns.has_value();
  });
  result.winner = best_of(result.candidates, 0);
  return {};
}

Result<void> check_request(const TuneRequest& r) {
  if (r.build.empty() || r.run.empty()) return fail(ExitCode::BadInput, "keet tune needs --build and --run");
  if (r.files.empty() && r.sweeps.empty())
    return fail(ExitCode::BadInput, "keet tune needs --file: the files a change may touch (or --sweep)");
  for (const auto& f : r.files)
    if (!safe_relative_path(f))
      return fail(ExitCode::BadInput, fmt::format("--file {}: give a path relative to --root, inside it", f));
  if (!r.sweeps.empty() && r.build.find("{defines}") == std::string::npos)
    return fail(ExitCode::BadInput, "--sweep: put {defines} in --build where the -DNAME=value flags go");
  return {};
}

// --apply: the winner's files into the user's tree, each replaced atomically.
Result<void> apply_winner(Loop& L, const Candidate& w) {
  for (const auto& [rel, text] : w.files)
    if (auto r = write_in_tree(L.root, rel, text); !r) return r;
  return {};
}

void record_calibration(Loop& L) {
  if (L.req.no_record || L.calibration.empty()) return;
  auto db = open_history(L.ctx, L.req.db);
  if (db) {
    if (auto r = (*db)->add_calibration(L.calibration); r)
      return;
    else
      L.ctx.err << "keet: warning: calibration not stored: " << r.error().message << "\n";
  } else {
    L.ctx.err << "keet: warning: calibration not stored: " << db.error().message << "\n";
  }
}

std::vector<std::string> normalised(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(*safe_relative_path(f));
  return out;
}

Result<void> write_artefacts(Loop& L, const TuneResult& result) {
  if (!result.winner_diff.empty())
    if (auto w = io::write_text_file((L.out / "winner.diff").string(), result.winner_diff); !w) return w;
  if (auto w = io::write_text_file((L.out / "tune.json").string(), tune_document(result)); !w) return w;
  return io::write_text_file((L.out / "tune.txt").string(), tune_text(result));
}

}  // namespace

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Faster:
      return "faster";
    case Outcome::Unchanged:
      return "unchanged";
    case Outcome::Slower:
      return "slower";
    case Outcome::BuildFailed:
      return "build failed";
    case Outcome::WrongResult:
      return "wrong result";
    case Outcome::RunFailed:
      return "run failed";
    case Outcome::Timeout:
      return "timeout";
    case Outcome::ProfileFailed:
      return "profile failed";
    case Outcome::Rejected:
      return "rejected";
    case Outcome::PatchFailed:
      return "patch failed";
  }
  return "unknown";
}

Result<Sweep> parse_sweep(const std::string& flag) {
  auto eq = flag.find('=');
  std::string name = flag.substr(0, eq);
  bool valid =
      !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
      std::ranges::all_of(name, [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
  if (!valid)
    return fail(ExitCode::BadInput,
                fmt::format("--sweep {}: NAME must be a C identifier (NAME=v1,v2 or NAME=auto)", flag));
  Sweep s{name, {}};
  std::string values = eq == std::string::npos ? "auto" : flag.substr(eq + 1);
  if (values == "auto") return s;
  for (auto v : split(values, ',')) {
    auto t = std::string(trim(v));
    bool ok = !t.empty() && std::ranges::all_of(t, [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
    });
    if (!ok)
      return fail(ExitCode::BadInput,
                  fmt::format("--sweep {}: '{}' is not a plain value (letters, digits, _ . -)", flag, t));
    s.values.push_back(t);
  }
  if (s.values.empty()) return fail(ExitCode::BadInput, fmt::format("--sweep {}: no values", flag));
  return s;
}

std::vector<int> proposed_block_sizes(const analysis::ArchSpec& arch, const analysis::OccupancyInput& input) {
  int warp = arch.warp_size > 0 ? arch.warp_size : 32;
  int largest = arch.max_threads_per_block > 0 ? arch.max_threads_per_block : 1024;
  std::vector<int> sizes;
  for (int s = warp * 2; s <= largest; s *= 2) sizes.push_back(s);
  auto points = analysis::occupancy_by_block_size(arch, input, sizes);
  int best = 0;
  for (const auto& p : points) best = std::max(best, p.warps);
  std::vector<int> out;
  for (const auto& p : points)
    if (p.warps == best && best > 0 && out.size() < 3) out.push_back(p.x);
  if (input.block_size > 0) {
    out.push_back(input.block_size);
    if (input.block_size / 2 >= warp) out.push_back(input.block_size / 2);
  }
  std::ranges::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > 5) out.resize(5);
  return out;
}

ExitCode run_tune(Context& ctx, const TuneRequest& r, ProcessRunner& runner) {
  if (auto ok = check_request(r); !ok) return report_error(ctx, ok.error());
  auto threshold = fraction_flag("--threshold", r.threshold);
  if (!threshold) return report_error(ctx, threshold.error());
  auto ncu = find_ncu(r.ncu, ctx.getenv);
  if (!ncu) return report_error(ctx, ncu.error());
  TuneRequest req = r;
  req.files = normalised(r.files);
  std::error_code ec;
  fs::create_directories(r.out_dir, ec);
  if (ec) return report_error(ctx, {ExitCode::BadInput, fmt::format("{}: cannot create: {}", r.out_dir, ec.message())});
  Loop L{ctx,  req,       runner, fs::absolute(r.root), fs::absolute(r.out_dir), fs::absolute(r.out_dir) / "scratch",
         *ncu, *threshold};
  InterruptGuard guard;
  TuneResult result{.out_dir = r.out_dir, .threshold = *threshold, .mode = r.sweeps.empty() ? "llm" : "sweep"};
  auto ref = measure_baseline(L, result);
  Result<void> looped = ref ? (r.sweeps.empty() ? llm_rounds(L, *ref, result) : sweep_variants(L, *ref, result))
                            : Result<void>(std::unexpected(ref.error()));
  fs::remove_all(L.scratch, ec);
  if (!looped) return report_error(ctx, looped.error());
  if (r.llm.dry_run) return ExitCode::Ok;
  result.interrupted = tune_interrupted();
  if (result.winner) {
    const auto& w = result.candidates[*result.winner];
    result.total_speedup = *result.baseline_ns / *w.duration_ns;
    if (result.mode == "sweep") result.winner_diff.clear();
    if (r.apply && !result.interrupted) {
      if (auto a = apply_winner(L, w); !a) return report_error(ctx, a.error());
      result.applied = true;
    }
  }
  record_calibration(L);
  if (auto w = write_artefacts(L, result); !w) return report_error(ctx, w.error());
  ctx.out << write_format(kTuneFormats, r.format, result);
  if (result.interrupted) return report_error(ctx, {ExitCode::Failed, "interrupted; the project was not changed"});
  return ExitCode::Ok;
}

}  // namespace keet::app
