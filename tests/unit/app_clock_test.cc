// The one wall clock (io/clock.h): what record keeps and what gate's JUnit
// report says come from the Context's clock, so a fixed clock gives the same
// history rows and the same report on every run.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/app.h"
#include "io/clock.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

constexpr int64_t kNewYear2026 = 1767225600000;  // 2026-01-01T00:00:00Z in ms

std::string one_kernel_report() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("vecAdd", 64, 256, {{"gpu__time_duration.sum", 5120}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("clock.ncu-rep");
  w.write(path);
  return path;
}

struct Run {
  int rc;
  std::string out, err;
};

Run keet_at(int64_t now_ms, std::vector<std::string> args) {
  std::map<std::string, std::string> env = {{"XDG_DATA_HOME", temp_path("clock-data")}};
  std::vector<const char*> argv{"keet"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  app::Context ctx{out, err, false, false, [&](const std::string& k) { return env.contains(k) ? env[k] : ""; }};
  ctx.clock = [now_ms] { return now_ms; };
  int rc = app::run(static_cast<int>(argv.size()), argv.data(), ctx);
  return {rc, out.str(), err.str()};
}

TEST(WallClock, UtcTimestampIsWholeSecondsInUtc) {
  EXPECT_EQ(io::utc_timestamp(kNewYear2026), "2026-01-01T00:00:00");
  EXPECT_EQ(io::utc_timestamp(kNewYear2026 + 86399999), "2026-01-01T23:59:59");
  EXPECT_EQ(io::utc_timestamp(0), "1970-01-01T00:00:00");
  int64_t now = io::system_unix_ms();
  EXPECT_GT(now, kNewYear2026);  // this clock is the system's
}

TEST(WallClock, RecordAndGateStampTheContextsTime) {
  std::string report = one_kernel_report();
  std::string db = temp_path("clock-history.sqlite");
  std::remove(db.c_str());
  auto rec = keet_at(kNewYear2026, {"record", report, "--tag", "base", "--db", db});
  ASSERT_EQ(rec.rc, 0) << rec.err;
  auto hist = keet_at(kNewYear2026 + 5000, {"history", "--db", db, "--format", "json"});
  ASSERT_EQ(hist.rc, 0) << hist.err;
  EXPECT_NE(hist.out.find("\"recorded_at\": 1767225600"), std::string::npos) << hist.out;
  auto gate = keet_at(kNewYear2026 + 61000, {"gate", report, "--baseline", "base", "--db", db, "--format", "junit"});
  ASSERT_EQ(gate.rc, 0) << gate.err;
  EXPECT_NE(gate.out.find("timestamp=\"2026-01-01T00:01:01\""), std::string::npos) << gate.out;
}

}  // namespace
}  // namespace keet
