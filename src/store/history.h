// Performance history: runs recorded by `keet record`, read back by `keet
// history` and `keet gate`. One narrow interface, two backends (SQLite for a
// developer or a single CI machine, PostgreSQL shared by many CI runners),
// chosen by URL in open_store().
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compare/calibration.h"
#include "compare/diff.h"
#include "util/error.h"

namespace keet::store {

// One `keet record` invocation: the report's kernels, reduced to snapshots.
struct Run {
  int64_t id = 0;           // assigned by the store
  std::string tag;          // --tag (e.g. "main", "v1.2"); may be empty
  std::string commit;       // --commit SHA; may be empty
  int64_t recorded_at = 0;  // unix seconds
  std::string report_path;
  std::vector<compare::KernelSnapshot> kernels;
  // The device of the first kernel that names one ("" if none does).
  std::string device() const;
};

class HistoryStore {
 public:
  virtual ~HistoryStore() = default;
  // Stores the run and its kernels atomically; returns the new run id.
  virtual Result<int64_t> record(const Run& run) = 0;
  // Runs (kernels included), newest first. `limit` 0 means all.
  virtual Result<std::vector<Run>> runs(size_t limit = 0) = 0;
  // The newest run with `tag` ("latest": any tag) that has a kernel on `device`.
  virtual Result<std::optional<Run>> baseline(const std::string& tag, const std::string& device) = 0;
  // Stores the points atomically; all of them or none.
  virtual Result<void> add_calibration(const std::vector<compare::CalibrationPoint>& points) = 0;
  // Every stored point, oldest first (none for a history written before they were kept).
  virtual Result<std::vector<compare::CalibrationPoint>> calibration_points() = 0;
  virtual std::string describe() const = 0;  // for messages: "sqlite:/path" or "postgresql://host/db"
};

// "postgresql://..." / "postgres://..." -> PostgreSQL; "sqlite:PATH" or a plain
// path -> SQLite (parent folders are created). Errors exit 3 when a server
// cannot be reached, 2 for a bad URL or unusable path.
Result<std::unique_ptr<HistoryStore>> open_store(const std::string& url);
// $XDG_DATA_HOME/keet/history.sqlite, else $HOME/.local/share/keet/history.sqlite.
std::string default_store_path(const std::string& xdg_data_home, const std::string& home);

Result<std::unique_ptr<HistoryStore>> open_sqlite(const std::string& path);
Result<std::unique_ptr<HistoryStore>> open_postgres(const std::string& conninfo);

// Backend-independent (de)serialisation of a run's kernels, stored as JSON text
// so both schemas stay identical and can grow without migrations.
std::string kernel_payload(const compare::KernelSnapshot& s);
std::optional<compare::KernelSnapshot> kernel_from_payload(const std::string& text);
// Picks the baseline from runs sorted newest first (shared by both backends).
std::optional<Run> pick_baseline(std::vector<Run> newest_first, const std::string& tag, const std::string& device);

}  // namespace keet::store
