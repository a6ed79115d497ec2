#include "service/service.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ranges>

#include <fmt/format.h>

#include "io/file.h"
#include "io/sha256.h"
#include "readers/nsys_export.h"
#include "util/strings.h"

namespace keet::service {

namespace {

std::string log_value(std::string_view v) {
  std::string out;
  bool quote = v.empty();
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
    if (c == ' ' || c == '"' || c == '=' || c == '\\') quote = true;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return quote ? "\"" + out + "\"" : out;
}

}  // namespace

std::string log_line(int64_t now_ms, std::string_view event, std::initializer_list<LogField> fields) {
  time_t secs = static_cast<time_t>(now_ms / 1000);
  struct tm t {};
  gmtime_r(&secs, &t);
  std::string out = fmt::format("ts={:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z event={}", t.tm_year + 1900,
                                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, now_ms % 1000, event);
  for (const auto& f : fields) out += fmt::format(" {}={}", f.key, log_value(f.value));
  return out;
}

void log_event(const std::function<void(std::string_view)>& log, int64_t now_ms, std::string_view event,
               std::initializer_list<LogField> fields) {
  if (log) log(log_line(now_ms, event, fields));
}

Result<std::string> BlobStore::put(std::string_view bytes) {
  std::string address = io::sha256_hex(bytes);
  if (address.empty()) return fail(ExitCode::Dependency, "SHA-256 unavailable (libcrypto not found)");
  if (has(address)) return address;
  auto target = std::filesystem::path(path(address));
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  // Written under a unique name and renamed: a reader never sees half a file,
  // and two uploads of the same bytes cannot interleave.
  auto temp = target.string() + ".tmp-" + random_id();
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::filesystem::remove(temp, ec);
      return fail(ExitCode::Dependency, "cannot store the upload under " + dir_ + " (disk full?)");
    }
  }
  std::filesystem::rename(temp, target, ec);
  if (ec) return fail(ExitCode::Dependency, "cannot store the upload: " + ec.message());
  return address;
}

Result<std::string> BlobStore::adopt(const std::string& file) {
  std::string address = io::sha256_file_hex(file);
  if (address.empty()) return fail(ExitCode::Dependency, "cannot read the spooled upload back");
  if (has(address)) return address;
  auto target = std::filesystem::path(path(address));
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  std::filesystem::rename(file, target, ec);  // atomic: a reader never sees half a file
  if (ec == std::errc::cross_device_link) {   // a spool folder elsewhere: copy, then rename
    auto temp = target.string() + ".tmp-" + random_id();
    ec.clear();
    std::filesystem::copy_file(file, temp, ec);
    if (!ec) std::filesystem::rename(temp, target, ec);
    std::error_code rm;
    if (ec) std::filesystem::remove(temp, rm);
  }
  if (ec) return fail(ExitCode::Dependency, "cannot store the upload: " + ec.message());
  return address;
}

std::string BlobStore::path(const std::string& address) const {
  return dir_ + "/" + address.substr(0, 2) + "/" + address;
}

bool BlobStore::has(const std::string& address) const {
  std::error_code ec;
  return address.size() == 64 && std::filesystem::is_regular_file(path(address), ec);
}

void BlobStore::remove(const std::string& address) {
  std::error_code ec;
  if (address.size() == 64) std::filesystem::remove(path(address), ec);
}

namespace {

bool older_than(const std::filesystem::path& p, std::chrono::seconds age) {
  std::error_code ec;
  auto when = std::filesystem::last_write_time(p, ec);
  return !ec && std::filesystem::file_time_type::clock::now() - when > age;
}

}  // namespace

int BlobStore::remove_partial(std::chrono::seconds age) const {
  int removed = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().filename().string().find(".tmp-") == std::string::npos) continue;
    if (older_than(it->path(), age) && std::filesystem::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

int remove_stale_work(const std::string& data_dir, std::chrono::seconds age) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/work", ec)) {
    if (e.path().filename() == "runs" || !e.is_directory(ec) || !older_than(e.path(), age)) continue;
    std::error_code rm;
    if (std::filesystem::remove_all(e.path(), rm) > 0 && !rm) ++removed;
  }
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/work/runs", ec)) {
    std::error_code rm;
    if (older_than(e.path(), age) && std::filesystem::remove_all(e.path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

std::string nsys_export_dir(const std::string& data_dir) { return data_dir + "/nsys-exports"; }

std::string nsys_export_path(const std::string& data_dir, const std::string& address) {
  return nsys_export_dir(data_dir) + "/" + address + ".sqlite";
}

std::string random_id() {
  unsigned char bytes[16] = {};
  std::ifstream("/dev/urandom", std::ios::binary).read(reinterpret_cast<char*>(bytes), sizeof bytes);
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

namespace {

// A line of keet's standard error as a job's error: without "keet: ",
// bounded; nothing for a blank line, nor for a warning unless `warnings`.
std::optional<std::string> error_line(std::string_view line, bool warnings) {
  auto t = trim(line);
  if (t.empty()) return std::nullopt;
  std::string s(t);
  if (s.rfind("keet: ", 0) == 0) s = s.substr(6);
  if (s.rfind("warning: ", 0) == 0) {
    if (!warnings) return std::nullopt;
    s = s.substr(9);
  } else if (s.rfind("warning", 0) == 0) {
    return std::nullopt;
  }
  return valid_utf8(s.substr(0, 500));
}

constexpr std::string_view kNoMessage = "keet exited without a message";

// The first of `lines` that is an error, else the first that is a warning
// (a truncated report fails with the warning that says where it ends).
template <typename Lines>
std::string error_among(const Lines& lines) {
  for (bool warnings : {false, true})
    for (auto line : lines)
      if (auto e = error_line(line, warnings)) return *e;
  return std::string(kNoMessage);
}

}  // namespace

std::string first_error_line(const std::string& err) { return error_among(split(err, '\n')); }

std::string last_error_line(const std::string& err) {
  auto lines = split(err, '\n');
  return error_among(std::ranges::reverse_view(lines));
}

Workers::Workers(JobStore& jobs, BlobStore& blobs, KeetRunner& runner, ServiceOptions options, Clock clock)
    : jobs_(jobs), blobs_(blobs), runner_(runner), opt_(std::move(options)), clock_(std::move(clock)) {}

Workers::~Workers() { stop(); }

void Workers::start() {
  for (int i = 0; i < opt_.workers; ++i) threads_.emplace_back([this, i] { loop(i); });
}

void Workers::stop() {
  stopping_ = true;
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void Workers::wake() {
  {
    std::lock_guard lock(mu_);
    ++pending_wakes_;
  }
  cv_.notify_one();
}

void Workers::log(std::string_view event, std::initializer_list<LogField> fields) const {
  log_event(opt_.log, clock_(), event, fields);
}

// Whether the store answered a claim, a heartbeat or a finish (`failure`:
// why not): an outage is said once when it starts and once when it ends, not
// at every poll.
void Workers::note_store(const Error* failure) {
  std::lock_guard lock(store_mu_);
  if (failure && !store_down_) log("store.unavailable", {{"store", jobs_.describe()}, {"error", failure->message}});
  if (!failure && store_down_) log("store.available", {{"store", jobs_.describe()}});
  store_down_ = failure != nullptr;
}

template <typename T>
void Workers::note_store(const Result<T>& answer) {
  note_store(answer ? nullptr : &answer.error());
}

void Workers::loop(int index) {
  std::string name = fmt::format("{}#{}", opt_.worker_name, index);
  while (!stopping_) {
    int64_t now = clock_();
    auto job = jobs_.claim(name, random_id(), now, now - opt_.lease.count());
    note_store(job);
    if (job && *job) {
      log("job.claimed", {{"job", (*job)->id},
                          {"kind", std::string(kind_name((*job)->kind))},
                          {"worker", name},
                          {"attempt", std::to_string((*job)->attempts)},
                          {"queued_ms", std::to_string(std::max<int64_t>(0, now - (*job)->created_at))}});
      run_job(std::move(**job));
      continue;
    }
    // Nothing to do: wait for an upload in this process, or poll the store
    // (other processes queue jobs too, and stale claims age).
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_ || pending_wakes_ > 0; });
    if (pending_wakes_ > 0) --pending_wakes_;
  }
}

namespace {

// One keet child of a job: it reads and analyses the job's reports once and
// writes each of its results to a file of the job's folder (-o FORMAT=FILE,...).
struct Step {
  std::string stage;  // what the job's status calls it while it runs
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> results;  // result name, the file keet writes it to
  bool gate = false;                                         // exit 1 is a finding (a regression), not a failure
  bool exports = false;  // nsys exports the report first: exit 3 is nsys missing or refusing it
};

// A step whose `formats` (result name, keet's --format name) go to files of
// the job's folder named after the results: one child writes them all.
Step step_writing(std::string stage, std::vector<std::string> args,
                  const std::vector<std::pair<std::string, std::string>>& formats) {
  Step step{std::move(stage), std::move(args), {}};
  std::string list;
  for (const auto& [result, format] : formats) {
    step.results.emplace_back(result, "result." + result);
    list += (list.empty() ? "" : ",") + format + "=result." + result;
  }
  step.args.insert(step.args.end(), {"-o", list});
  return step;
}

// What an upload is, told by its first bytes: an Nsight Systems report or
// its SQLite export is a whole run, not kernel profiles.
struct Upload {
  readers::TimelineFile kind = readers::TimelineFile::Other;
  std::string nsys_version;  // of a report whose header names it ("" for the older "1." header)
};

Upload inspect(const std::string& path) {
  auto file = io::open_file(path);
  if (!file) return {};
  auto head = (*file)->bytes().substr(0, readers::kTimelineHead);
  return {readers::sniff_timeline(head), readers::nsys_report_version(head)};
}

}  // namespace

JobKind upload_kind(const std::string& path) {
  return inspect(path).kind == readers::TimelineFile::Other ? JobKind::Analyze : JobKind::Timeline;
}

namespace {

// The command that makes the export, for a browser user to run where nsys
// is: with the upload's own name when it is a plain .nsys-rep/.qdrep file
// name (nothing a shell would need quoted), else run.nsys-rep.
std::string export_command(const std::string& name) {
  bool plain = std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
  });
  auto dot = name.rfind('.');
  bool report = dot != std::string::npos && dot > 0 && (name.ends_with(".nsys-rep") || name.ends_with(".qdrep"));
  std::string file = plain && report ? name : "run.nsys-rep";
  return fmt::format("`nsys export --type sqlite --output {}.sqlite {}`", file.substr(0, file.rfind('.')), file);
}

std::string written_by(const Upload& upload) {
  return upload.nsys_version.empty() ? "" : " written by Nsight Systems " + upload.nsys_version;
}

// The job's error when the server has no nsys: the user is in a browser, so
// it names what to upload instead, never the job's file name or a keet command.
std::string no_nsys_error(const Job& job, const Upload& upload) {
  return fmt::format(
      "this upload is an Nsight Systems report{}, and this server has no nsys to read it with: upload its SQLite "
      "export instead, made where Nsight Systems is installed with {}, or restart keet serve with --nsys PATH",
      written_by(upload), export_command(job.name));
}

// The job's error when the server's nsys refused the report (keet's own line,
// which names the job's file, goes to the server's log).
std::string export_failed_error(const Job& job, const Upload& upload, const std::string& keet_line) {
  bool newer = keet_line.find("newer than") != std::string::npos;
  std::string made_with = upload.nsys_version.empty() ? "" : " " + upload.nsys_version + " or later";
  return fmt::format(
      "this server's nsys could not export this Nsight Systems report{}{}: upload its SQLite export instead, made "
      "where Nsight Systems{} is installed with {}",
      written_by(upload), newer ? ", a version newer than the server's nsys" : " (the server's log says why)",
      made_with, export_command(job.name));
}

std::string without(std::string text, const std::string& what, std::string_view instead) {
  if (what.empty()) return text;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + instead.size()))
    text.replace(at, what.size(), instead);
  return text;
}

// Why a step failed: for the job (the user), and for the server's log when
// the job's error leaves out keet's own line.
struct StepFailure {
  std::string error, logged;
};

StepFailure step_failure(const Job& job, const Step& step, const RunOutcome& o, const Upload& upload,
                         const ServiceOptions& opt) {
  if (!step.exports) return {first_error_line(o.err), ""};
  // keet says what it runs and reads first ("running nsys export ...", with
  // server paths): its error is the last line.
  std::string line = last_error_line(o.err);
  if (o.exit_code != 3) return {line, ""};
  return {export_failed_error(job, upload, line), without(without(line, opt.nsys, "nsys"), opt.data_dir, "DATA")};
}

// The report keeps the user's name in its results although keet reads it as
// "report": one argument with '=', so a name that starts with '-' is a value,
// never a flag (and never a path: it is only text in the output).
std::string report_name_arg(const Job& job) { return "--report-name=" + job.name; }

Step timeline_step(const Job& job, const ServiceOptions& opt, readers::TimelineFile kind) {
  auto step =
      step_writing("timeline", {"timeline", "report", report_name_arg(job)}, {{"json", "json"}, {"html", "html"}});
  // The nsys found at start, and the export kept by the upload's address.
  if (kind == readers::TimelineFile::NsysReport) {
    step.args.insert(step.args.end(), {"--nsys", opt.nsys, "--export-dir", nsys_export_dir(opt.data_dir)});
    step.exports = true;
  }
  return step;
}

// One child per job: the analysis (or the diff, or the timeline) writes every
// format from one reading; a gate against a baseline is a second child, whose
// comparison is keet gate's own.
std::vector<Step> steps_for(const Job& job, const ServiceOptions& opt, readers::TimelineFile kind) {
  if (job.kind == JobKind::Diff) {
    std::vector<std::string> diff{"diff", "before", "after"};
    for (auto [i, j] : job.pairs) diff.insert(diff.end(), {"--pair", fmt::format("{}:{}", i, j)});
    return {step_writing("diff", diff, {{"json", "json"}, {"markdown", "markdown"}, {"html", "html"}})};
  }
  if (kind != readers::TimelineFile::Other) return {timeline_step(job, opt, kind)};
  std::vector<Step> steps{step_writing("analysis", {"analyze", "report", report_name_arg(job)},
                                       {{"json", "json"}, {"html", "html"}, {"markdown", "markdown"}})};
  if (!job.baseline.empty()) {
    std::vector<std::string> gate{"gate", "report", "--baseline", job.baseline};
    if (!opt.history_db.empty()) gate.insert(gate.end(), {"--db", opt.history_db});
    steps.push_back(step_writing("gate", gate, {{"gate", "json"}, {"sarif", "sarif"}}));
    steps.back().gate = true;
  }
  return steps;
}

}  // namespace

// A finished job's results are written even if the store is away for a
// while (a database restart): tried again every 250 ms for up to a lease,
// after which the claim has aged and the job is another worker's to run.
Result<bool> Workers::finish_durably(const Job& job, JobState state, const std::string& error,
                                     const std::map<std::string, std::string>& results) {
  auto give_up = std::chrono::steady_clock::now() + opt_.lease;
  while (true) {
    auto r = jobs_.finish(job, state, error, clock_(), results);
    note_store(r);
    if (r || stopping_ || std::chrono::steady_clock::now() >= give_up) return r;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_.load(); });
  }
}

void Workers::run_job(Job job) {
  // The job's reports under fixed names in a folder of its own: outputs and
  // errors name "report" (or "before"/"after"), never a server path.
  std::string work = opt_.data_dir + "/work/" + job.id + "-" + job.claim.substr(0, 8);
  std::error_code ec;
  std::filesystem::create_directories(work, ec);
  auto link = [&](const std::string& address, const char* name) {
    std::filesystem::create_symlink(blobs_.path(address), work + "/" + name, ec);
    return blobs_.has(address);
  };
  bool present =
      job.kind == JobKind::Diff ? link(job.report, "before") && link(job.report2, "after") : link(job.report, "report");
  auto ran_ms = [&] { return std::to_string(std::max<int64_t>(0, clock_() - job.started_at)); };
  auto end = [&](JobState state, const std::string& error, const std::map<std::string, std::string>& results) {
    auto written = finish_durably(job, state, error, results);
    std::filesystem::remove_all(work, ec);
    if (!written) {
      // The store stayed away for a whole lease: the claim ages and another
      // worker runs the job again; nothing is lost.
      log("job.unrecorded", {{"job", job.id}, {"worker", job.worker}, {"error", written.error().message}});
      return;
    }
    if (!*written) {
      log("job.lost_claim", {{"job", job.id}, {"worker", job.worker}});
      return;
    }
    ++completed_;
    if (state == JobState::Done)
      log("job.done", {{"job", job.id}, {"worker", job.worker}, {"run_ms", ran_ms()}});
    else
      log(state == JobState::Failed ? "job.failed" : "job.cancelled",
          {{"job", job.id}, {"worker", job.worker}, {"run_ms", ran_ms()}, {"error", error}});
  };
  auto abandon = [&](std::string_view why) {
    std::filesystem::remove_all(work, ec);
    log("job.abandoned", {{"job", job.id}, {"worker", job.worker}, {"why", std::string(why)}});
  };
  if (!present) return end(JobState::Failed, "the uploaded report is no longer in the data folder", {});
  auto upload = job.kind == JobKind::Diff ? Upload{} : inspect(blobs_.path(job.report));
  if (upload.kind == readers::TimelineFile::NsysReport && opt_.nsys.empty())
    return end(JobState::Failed, no_nsys_error(job, upload), {});
  auto steps = steps_for(job, opt_, upload.kind);
  auto deadline = std::chrono::steady_clock::now() + opt_.job_timeout;
  std::map<std::string, std::string> results;
  bool cancelled = false, lost = false;
  auto last_beat = std::chrono::steady_clock::now();
  for (size_t i = 0; i < steps.size(); ++i) {
    job.progress = static_cast<double>(i) / static_cast<double>(steps.size());
    auto beat = jobs_.beat(job, clock_(), job.progress, steps[i].stage);
    note_store(beat);
    // No answer from the store is not a lost claim: the job goes on, and the
    // claim ages only if the store stays away for a whole lease.
    if (beat && !*beat) return abandon("claim lost: another worker owns the job");
    if (beat && **beat) return end(JobState::Cancelled, "cancelled", {});
    auto keep_going = [&] {
      if (stopping_) return false;
      if (std::chrono::steady_clock::now() - last_beat < opt_.lease / 4) return true;
      last_beat = std::chrono::steady_clock::now();
      auto b = jobs_.beat(job, clock_(), job.progress, steps[i].stage);
      note_store(b);
      if (!b) return true;  // the store is away; the claim holds for the lease
      lost = !*b;
      cancelled = !lost && **b;
      return !lost && !cancelled;
    };
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) left = std::chrono::milliseconds(1);
    auto o = runner_.run(steps[i].args, work, left, keep_going);
    if (lost) return abandon("claim lost: another worker owns the job");
    if (stopping_) {  // shutting down: the next worker starts it afresh
      (void)jobs_.release(job);
      return abandon("worker stopping: the job is queued again");
    }
    if (cancelled) return end(JobState::Cancelled, "cancelled", {});
    if (!o) return end(JobState::Failed, o.error().message, {});
    if (o->timed_out)
      return end(JobState::Failed, fmt::format("time limit of {} s exceeded", opt_.job_timeout.count() / 1000), {});
    bool ok = o->exit_code == 0 || (steps[i].gate && o->exit_code == 1);
    // No baseline to gate against is an answer about the gate, not a failed analysis.
    if (!ok && steps[i].gate) {
      for (const auto& [result, file] : steps[i].results) results[result + ".error"] = first_error_line(o->err);
      continue;
    }
    if (!ok) {
      auto why = step_failure(job, steps[i], *o, upload, opt_);
      if (!why.logged.empty()) log("job.export_failed", {{"job", job.id}, {"error", why.logged}});
      return end(JobState::Failed, why.error, {});
    }
    for (const auto& [result, file] : steps[i].results) results[result] = valid_utf8(read_output(work + "/" + file));
  }
  end(JobState::Done, "", results);
}

}  // namespace keet::service
