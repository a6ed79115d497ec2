// keet serve's parts that are not HTTP: where uploads are kept (content
// addressed on disk), the options every part reads, and the workers that take
// jobs from the queue and run them through KeetRunner.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "service/job_store.h"
#include "service/runner.h"

namespace keet::service {

struct ServiceOptions {
  std::string data_dir;              // reports/, work/
  std::string history_db;            // keet --db for record/history/gate ("": keet's default)
  std::string llm;                   // --llm SPEC for questions ("": none configured)
  std::string token;                 // bearer token ("": none; loopback only)
  std::vector<std::string> allowed_origins;  // CORS
  bool loopback = true;              // listening on a loopback address only
  size_t max_upload = 256u << 20;
  int64_t max_queue = 64;            // queued jobs; over it uploads get 429
  std::chrono::milliseconds job_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds lease{std::chrono::seconds(30)};  // a silent worker's job is claimed again after this
  int workers = 2;
  std::string worker_name;           // host:pid
  int retry_after_s = 5;
};

// Milliseconds since the epoch; tests of timing pass their own.
using Clock = std::function<int64_t()>;
int64_t system_now_ms();

// Uploaded reports by SHA-256 of their bytes, under DIR/reports/ab/abcd...:
// the client's name for a file is never part of a path.
class BlobStore {
 public:
  explicit BlobStore(std::string data_dir) : dir_(std::move(data_dir) + "/reports") {}
  Result<std::string> put(std::string_view bytes);  // the address
  std::string path(const std::string& address) const;
  bool has(const std::string& address) const;

 private:
  std::string dir_;
};

// A random identifier (128 bits from the kernel), hex.
std::string random_id();

// Takes jobs from the store and runs them; several per process (--workers).
class Workers {
 public:
  Workers(JobStore& jobs, BlobStore& blobs, KeetRunner& runner, ServiceOptions options, Clock clock = system_now_ms);
  ~Workers();
  void start();
  void stop();    // current jobs are left to be claimed again
  void wake();    // a job was queued
  int64_t completed() const { return completed_; }

 private:
  void loop(int index);
  void run_job(Job job);
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
};

// The first line of keet's standard error, without its "keet: " prefix.
std::string first_error_line(const std::string& err);

}  // namespace keet::service
