// keet serve's parts that are not HTTP: where uploads are kept (content
// addressed on disk), the options every part reads, and the workers that take
// jobs from the queue and run them through KeetRunner.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "io/clock.h"
#include "service/job_store.h"
#include "service/runner.h"

namespace keet::service {

// Where keet serve's structured lines go (stderr in keet serve; a no-op by default).
using Log = std::function<void(std::string_view line)>;

struct ServiceOptions {
  std::string data_dir;                      // reports/, work/
  std::string history_db;                    // keet --db for record/history/gate ("": keet's default)
  std::string llm;                           // --llm SPEC for questions ("": none configured)
  std::string nsys;                          // exports uploaded .nsys-rep/.qdrep ("": none found)
  std::string token;                         // bearer token ("": none; loopback only)
  std::vector<std::string> allowed_origins;  // CORS
  bool loopback = true;                      // listening on a loopback address only
  size_t max_upload = 256u << 20;
  int64_t max_queue = 64;  // queued jobs; over it uploads get 429
  std::chrono::milliseconds job_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds lease{std::chrono::seconds(30)};  // a silent worker's job is claimed again after this
  int workers = 2;
  std::string worker_name;  // host:pid
  int retry_after_s = 5;
  Log log;  // each job's life, the store's outages (log_line)
};

// Milliseconds since the epoch (io/clock.h); tests of timing pass their own.
using Clock = io::WallClock;

// One logfmt line: `ts=2026-12-03T15:04:05.123Z event=job.done job=ID ...`.
// Values with spaces, quotes or '=' are quoted; control characters become spaces.
struct LogField {
  std::string_view key;
  std::string value;
};
std::string log_line(int64_t now_ms, std::string_view event, std::initializer_list<LogField> fields);
// Writes that line to `log`, when there is one.
void log_event(const std::function<void(std::string_view)>& log, int64_t now_ms, std::string_view event,
               std::initializer_list<LogField> fields);

// Uploaded reports by SHA-256 of their bytes, under DIR/reports/ab/abcd...:
// the client's name for a file is never part of a path.
class BlobStore {
 public:
  explicit BlobStore(std::string data_dir) : dir_(std::move(data_dir) + "/reports") {}
  Result<std::string> put(std::string_view bytes);  // the address
  // A file already on disk (a spooled upload) kept under its address: hashed
  // in pieces and renamed in, so memory does not grow with its size. The
  // file is moved (or left, when those bytes are already stored).
  Result<std::string> adopt(const std::string& file);
  std::string path(const std::string& address) const;
  bool has(const std::string& address) const;
  void remove(const std::string& address);
  // Half-written uploads a killed server left (older than `age`: a live one
  // may be writing); how many were removed.
  int remove_partial(std::chrono::seconds age) const;

 private:
  std::string dir_;
};

// Job folders under DATA/work that no job can still be using: older than
// `age` (the job time limit and a margin; another process's workers may share
// the folder). How many were removed.
int remove_stale_work(const std::string& data_dir, std::chrono::seconds age);

// Where the workers' `keet timeline --export-dir` keeps the SQLite export of
// an uploaded Nsight Systems report, so its second result (and a job on the
// same bytes) does not export again: DATA/nsys-exports. keet names an export
// by the SHA-256 of the report, which is the upload's address, so the export
// of `address` is known here and removed with the upload.
std::string nsys_export_dir(const std::string& data_dir);
std::string nsys_export_path(const std::string& data_dir, const std::string& address);

// What a stored upload is, by its first bytes: an Nsight Systems run (its
// report or SQLite export) is a timeline job, anything else an analysis.
JobKind upload_kind(const std::string& path);

// A random identifier (128 bits from the kernel), hex.
std::string random_id();

// Takes jobs from the store and runs them; several per process (--workers).
class Workers {
 public:
  Workers(JobStore& jobs, BlobStore& blobs, KeetRunner& runner, ServiceOptions options,
          Clock clock = io::system_unix_ms);
  ~Workers();
  void start();
  void stop();  // current jobs are left to be claimed again
  void wake();  // a job was queued
  int64_t completed() const { return completed_; }

 private:
  void loop(int index);
  void run_job(Job job);
  void note_store(const Error* failure);
  template <typename T>
  void note_store(const Result<T>& answer);
  Result<bool> finish_durably(const Job& job, JobState state, const std::string& error,
                              const std::map<std::string, std::string>& results);
  void log(std::string_view event, std::initializer_list<LogField> fields) const;
  JobStore& jobs_;
  BlobStore& blobs_;
  KeetRunner& runner_;
  ServiceOptions opt_;
  Clock clock_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> completed_{0};
  int pending_wakes_ = 0;
  std::mutex store_mu_;
  bool store_down_ = false;  // the last claim failed: logged once, and again when it recovers
};

// The first line of keet's standard error, without its "keet: " prefix.
std::string first_error_line(const std::string& err);
// The last such line: the error of a command that says what it runs first
// (`keet timeline` exporting an .nsys-rep).
std::string last_error_line(const std::string& err);

}  // namespace keet::service
