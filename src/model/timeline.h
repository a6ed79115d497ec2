// The whole-run view from an Nsight Systems timeline: what every kernel,
// copy and NVTX range cost over the run, reduced as the events stream past.
//
// A timeline can hold millions of launches, so no event is kept: readers call
// a TimelineSink per event (kernels in start order), and TimelineBuilder folds
// each into fixed-size summaries (per kernel name, per launch configuration,
// per stream and device, per copy direction, per NVTX range name). Memory
// grows with the number of distinct names, never with the number of events.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/report.h"

namespace keet::model {

// What the file says about itself, before any event.
struct TimelineMeta {
  std::string path;
  std::string tool_version;    // "2022.4.2.1" (EXPORT_PRODUCT_VERSION)
  std::string schema;          // "EXPORT_META_DATA" (before 2023) or "META_DATA_EXPORT"
  std::string schema_version;  // "3.0.0"
  struct Gpu {
    uint64_t id = 0;
    std::string name;
  };
  std::vector<Gpu> gpus;
  std::vector<std::string> absent_tables;  // the exporter writes only tables with data
  // CUDA API calls in the runtime trace whose GPU activity table is absent:
  // the work ran, and its GPU side was not recorded (0 where the table exists).
  struct Untraced {
    uint64_t launch_calls = 0, memcpy_calls = 0, memset_calls = 0;
  } untraced;
};

// One kernel execution. `name_key` is unique per distinct name within one
// timeline (the export's string id), so grouping never hashes long names.
struct KernelLaunch {
  int64_t start = 0, end = 0;  // ns
  uint64_t device = 0, stream = 0;
  uint64_t name_key = 0;
  std::string_view name;        // demangled, as nsys stats names it
  std::string_view short_name;  // base function name (ncu's -k matches it)
  Dim3 grid, block;
  std::optional<int64_t> api_start;  // the runtime call that launched it (correlation id)
};

enum class MemoryKind { Copy, Set };
struct MemoryOp {
  MemoryKind kind = MemoryKind::Copy;
  int64_t start = 0, end = 0;
  uint64_t device = 0, stream = 0;
  uint64_t bytes = 0;
  std::string_view direction;  // "Host-to-Device", ...; "" for a memset
};

struct NvtxRange {
  int64_t start = 0, end = 0;
  std::string_view name;
};

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // Called once, before any event; [span_start, span_end] covers every GPU
  // activity (kernel, copy, memset) of the file, or is {0, 0} when unknown.
  virtual void begin(const TimelineMeta& meta, int64_t span_start, int64_t span_end) = 0;
  virtual void kernel(const KernelLaunch& k) = 0;  // in start order
  virtual void memory(const MemoryOp& m) = 0;
  virtual void nvtx(const NvtxRange& r) = 0;
};

struct DurationStats {
  uint64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  void add(int64_t d);
  double mean_ns() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
};

// Launch durations in launch order, in at most kBuckets buckets of equal
// launch counts: when the buckets are full, neighbours merge and each bucket
// holds twice as many launches. The mean of the first and last quarter of
// launches then says whether the kernel got slower over the run.
class DriftSeries {
 public:
  static constexpr size_t kBuckets = 32;
  struct Bucket {
    uint64_t first_launch = 0, launches = 0;
    int64_t total_ns = 0;
    double mean_ns() const { return launches ? static_cast<double>(total_ns) / static_cast<double>(launches) : 0; }
  };
  void add(int64_t duration_ns);
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Mean duration of the first and of the last quarter of the buckets.
  std::pair<double, double> early_late_means() const;

 private:
  std::vector<Bucket> buckets_;
  uint64_t width_ = 1, seen_ = 0;
};

struct LaunchConfig {
  Dim3 grid, block;
  DurationStats time;
};

struct KernelSummary {
  std::string name, short_name;
  DurationStats time;
  std::vector<LaunchConfig> configs;  // first-seen order
  DurationStats latency;              // api call start -> kernel start, launches with a joined call
  DriftSeries drift;
  int64_t first_start = 0, last_end = 0;
};

// Idle time between kernels: on one stream (gaps between its consecutive
// kernels) or on one device (time no kernel of any stream runs), from the
// first kernel's start to the last one's end.
struct Lane {
  uint64_t device = 0, stream = 0;  // stream unused for a device lane
  uint64_t kernels = 0;
  int64_t first_start = 0, last_end = 0, busy_ns = 0, idle_ns = 0;
  uint64_t gaps = 0;
  int64_t max_gap_ns = 0, max_gap_start = 0;
  std::vector<int64_t> bins;  // kernel busy ns per slice of the span (the chart)
  int64_t cursor = 0;         // end of the last kernel (private to the builder)
};

struct MemorySummary {
  std::string direction;  // "memset" for memsets
  DurationStats time;
  uint64_t bytes = 0;
};

struct NvtxSummary {
  std::string name;
  DurationStats time;
};

struct TimelineSummary {
  TimelineMeta meta;
  int64_t span_start = 0, span_end = 0;  // first to last GPU activity seen
  int64_t kernel_ns = 0;                 // sum of kernel durations (nsys stats' 100%)
  uint64_t launches = 0;
  std::vector<KernelSummary> kernels;  // by total time, largest first
  std::vector<Lane> streams, devices;
  std::vector<MemorySummary> memory;  // by time, largest first
  std::vector<NvtxSummary> nvtx;      // by time, largest first
  DurationStats latency;              // every joined launch
  size_t bins = 0;                    // slices of the span in each lane's chart
  std::vector<std::string> warnings;
  int64_t span_ns() const { return span_end - span_start; }
  double gpu_share(const KernelSummary& k) const;   // of kernel_ns
  double span_share(const KernelSummary& k) const;  // of the span
};

// Folds events into a TimelineSummary. Distinct names past kMaxNames are
// counted together under one "(other names)" entry, with a warning, so a
// hostile or odd file cannot grow memory without bound.
class TimelineBuilder final : public TimelineSink {
 public:
  static constexpr size_t kMaxNames = 100'000;
  static constexpr size_t kBins = 120;
  void begin(const TimelineMeta& meta, int64_t span_start, int64_t span_end) override;
  void kernel(const KernelLaunch& k) override;
  void memory(const MemoryOp& m) override;
  void nvtx(const NvtxRange& r) override;
  TimelineSummary finish() &&;

 private:
  KernelSummary& group_of(const KernelLaunch& k);
  Lane& lane(std::vector<Lane>& lanes, std::unordered_map<uint64_t, size_t>& index, uint64_t key, uint64_t device,
             uint64_t stream);
  void occupy(Lane& l, int64_t start, int64_t end);
  void add_to_bins(Lane& l, int64_t from, int64_t end) const;
  void widen_span(int64_t start, int64_t end);

  TimelineSummary s_;
  bool span_given_ = false, span_seen_ = false;
  std::unordered_map<uint64_t, size_t> kernel_index_, stream_index_, device_index_;
  std::unordered_map<std::string, size_t> memory_index_, nvtx_index_;
  uint64_t skipped_negative_ = 0;
};

}  // namespace keet::model
