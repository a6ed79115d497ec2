// The one wall clock. Everything keet stamps with the time of day goes
// through it: history runs and calibration points (record, diff, tune), CI
// reports' timestamps (gate), keet serve's job records and log lines, the LLM
// response cache. A caller that takes a WallClock lets its tests pass a
// fixed one; deadlines and timeouts use std::chrono::steady_clock, which no
// output shows.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace keet::io {

// Milliseconds since the Unix epoch.
using WallClock = std::function<int64_t()>;
int64_t system_unix_ms();

// "2026-12-04T15:04:05" (UTC, whole seconds), as CI reports and the store write it.
std::string utc_timestamp(int64_t unix_ms);

}  // namespace keet::io
