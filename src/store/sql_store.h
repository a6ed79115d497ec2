// What the SQL history stores (SQLite, PostgreSQL) share: a run and its kernels
// are written in one transaction, runs are read in one consistent snapshot, and
// the baseline is picked from them. A backend supplies exec(sql), insert_run,
// insert_kernels, read_runs, insert_calibration and read_calibration, and the BEGIN statements that give those
// guarantees on its database (kWriteBegin, kReadBegin).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "store/history.h"
#include "util/error.h"

namespace keet::store {

template <typename Backend>
class SqlStore : public HistoryStore {
 public:
  Result<int64_t> record(const Run& run) override {
    int64_t id = 0;
    auto r = in_transaction([&]() -> Result<void> {
      KEET_TRY(inserted, self().insert_run(run));
      id = *inserted;
      return self().insert_kernels(id, run.kernels);
    });
    if (!r) return std::unexpected(r.error());
    return id;
  }

  Result<std::vector<Run>> runs(size_t limit) override {
    std::vector<Run> out;
    auto r = in_transaction([&]() -> Result<void> { return self().read_runs(limit, out); }, Backend::kReadBegin);
    if (!r) return std::unexpected(r.error());
    return out;
  }

  Result<void> add_calibration(const std::vector<compare::CalibrationPoint>& points) override {
    if (points.empty()) return {};
    return in_transaction([&]() -> Result<void> { return self().insert_calibration(points); });
  }

  Result<std::vector<compare::CalibrationPoint>> calibration_points() override {
    std::vector<compare::CalibrationPoint> out;
    auto r = in_transaction([&]() -> Result<void> { return self().read_calibration(out); }, Backend::kReadBegin);
    if (!r) return std::unexpected(r.error());
    return out;
  }

  Result<std::optional<Run>> baseline(const std::string& tag, const std::string& device) override {
    KEET_TRY(all, runs(0));
    return pick_baseline(std::move(*all), tag, device);
  }

 protected:
  // Runs `body` between `begin` and COMMIT; a failure rolls back.
  template <typename F>
  Result<void> in_transaction(F&& body, const char* begin = Backend::kWriteBegin) {
    if (auto r = self().exec(begin); !r) return r;
    auto r = body();
    if (!r) {
      (void)self().exec("ROLLBACK");
      return r;
    }
    return self().exec("COMMIT");
  }

 private:
  Backend& self() { return static_cast<Backend&>(*this); }
};

}  // namespace keet::store
