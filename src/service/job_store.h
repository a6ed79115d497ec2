// The durable job queue of keet serve / keet worker. Jobs, their progress and
// their results live in a database, so they survive a restart and several
// processes can share them: SQLite (one machine; the default) or PostgreSQL
// (many machines: a job is claimed with FOR UPDATE SKIP LOCKED). A claimed job
// carries a claim token and a heartbeat; only the current claimant can report
// progress or finish it, and a job whose worker stopped beating is claimed
// again (at most kMaxAttempts times), so a job is never lost nor finished twice.
// A PostgreSQL connection that the server dropped (a restart, a failover) is
// made again, and the statement that met the dead connection runs once more
// on the new one: a database restart costs no keet restart.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace keet::service {

// Timeline: an Nsight Systems run (keet timeline), told from the upload's first bytes.
enum class JobKind { Analyze, Diff, Timeline };
enum class JobState { Queued, Running, Done, Failed, Cancelled };
std::string_view kind_name(JobKind k);
std::string_view state_name(JobState s);
bool terminal(JobState s);

struct Job {
  std::string id;
  JobKind kind = JobKind::Analyze;
  JobState state = JobState::Queued;
  std::string name;                        // display name (the uploaded file's name, or "A vs B")
  std::string report;                      // content address (sha256) of the report; BEFORE of a diff
  std::string report2;                     // AFTER of a diff
  std::string baseline;                    // history tag to gate against (SARIF result); may be empty
  std::vector<std::pair<int, int>> pairs;  // a diff's --pair I:J (kernel indices before, after)
  int64_t created_at = 0, started_at = 0, finished_at = 0, heartbeat_at = 0;  // unix ms
  std::string worker;
  std::string claim;    // token of the current claim
  int attempts = 0;     // claims so far
  double progress = 0;  // 0..1
  std::string stage;
  bool cancel_requested = false;
  std::string error;  // failed: one line
  int64_t size = 0;   // bytes of the report(s)
};

constexpr int kMaxAttempts = 2;

class JobStore {
 public:
  virtual ~JobStore() = default;
  virtual Result<void> add(const Job& job) = 0;
  virtual Result<std::optional<Job>> get(const std::string& id) = 0;
  virtual Result<std::vector<Job>> list(size_t limit) = 0;  // newest first
  virtual Result<int64_t> waiting() = 0;                    // queued jobs
  // The oldest queued job, or a running one whose heartbeat is older than
  // `stale_before`; jobs that already used kMaxAttempts claims fail instead.
  virtual Result<std::optional<Job>> claim(const std::string& worker, const std::string& token, int64_t now,
                                           int64_t stale_before) = 0;
  // Progress of a claimed job; nullopt when the claim is lost (job deleted or
  // claimed by another), else whether cancelling was asked for.
  virtual Result<std::optional<bool>> beat(const Job& job, int64_t now, double progress, const std::string& stage) = 0;
  // Ends a claimed job with its results (format -> body) in one transaction;
  // false when the claim was lost (nothing written).
  virtual Result<bool> finish(const Job& job, JobState state, const std::string& error, int64_t now,
                              const std::map<std::string, std::string>& results) = 0;
  // Gives a claimed job back to the queue (its worker is shutting down), as
  // if it had not been claimed.
  virtual Result<void> release(const Job& job) = 0;
  // Queued: cancelled now; running: asks its worker to stop. False if no such job or already over.
  virtual Result<bool> cancel(const std::string& id, int64_t now) = 0;
  virtual Result<bool> remove(const std::string& id) = 0;
  // Jobs whose report (either side of a diff) is the upload `address`.
  virtual Result<int64_t> uses(const std::string& address) = 0;
  virtual Result<std::optional<std::string>> result(const std::string& id, const std::string& format) = 0;
  virtual Result<std::vector<std::string>> formats(const std::string& id) = 0;
  // Can the store be reached now? (one trivial statement; reconnects if need be)
  virtual Result<void> ping() = 0;
  virtual std::string describe() const = 0;
  virtual bool shared() const = 0;  // PostgreSQL: other machines may use it
};

// "postgresql://..." / "postgres://..." or "sqlite:PATH" / a path.
Result<std::unique_ptr<JobStore>> open_job_store(const std::string& url);

}  // namespace keet::service
