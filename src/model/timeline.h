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
#include "util/pattern.h"

namespace keet::model {

// Where a timeline comes from: an Nsight Systems export or a PyTorch
// profiler (Kineto) trace. Both feed the same sink; only the words about the
// file itself differ.
enum class TimelineSource { NsysExport, Kineto };

// What the file says about itself, before any event.
struct TimelineMeta {
  std::string path;
  TimelineSource source = TimelineSource::NsysExport;
  std::string tool_version;    // "2022.4.2.1" (EXPORT_PRODUCT_VERSION)
  std::string schema;          // "EXPORT_META_DATA" (before 2023) or "META_DATA_EXPORT"
  std::string schema_version;  // "3.0.0"
  struct Gpu {
    uint64_t id = 0;
    std::string name;
  };
  std::vector<Gpu> gpus;
  std::vector<std::string> absent_tables;  // the exporter writes only tables with data
  // The export holds CUDA runtime API calls (without them it cannot say what
  // the host did: launches, synchronisation).
  bool has_api_trace() const;
  // What nsys was asked to trace (META_DATA_CAPTURE's CAPTURE_EVENT_TYPE:
  // "Cuda", "NvtxEvents", "OSRuntime", ...); empty when the export does not say.
  std::vector<std::string> traced;
  // CUDA API calls in the runtime trace whose GPU activity table is absent:
  // the work ran, and its GPU side was not recorded (0 where the table exists).
  struct Untraced {
    uint64_t launch_calls = 0, memcpy_calls = 0, memset_calls = 0;
  } untraced;
  // The profiled program as nsys launched it (META_DATA_CAPTURE): the
  // command and its arguments, empty when the export does not say.
  std::vector<std::string> command;
  // First start and last end of the GPU operations (kernels, copies,
  // memsets) of each process on each device: the range Nsight Systems' own
  // rules examine for gaps and utilisation.
  struct GpuRange {
    uint32_t pid = 0;
    uint64_t device = 0;
    int64_t start = 0, end = 0;
  };
  std::vector<GpuRange> gpu_ranges;
  // A distributed job's rank (a Kineto trace's distributedInfo); rank < 0: not said.
  struct Distributed {
    int64_t rank = -1, world_size = 0;
    std::string backend, nccl_version;
  };
  Distributed distributed;
  // The GPU side of each profiler step (a Kineto trace's gpu_user_annotation
  // "ProfilerStep#N"), in start order, with the time a kernel, copy or
  // memset ran inside it: the window Holistic Trace Analysis and TraceLens
  // measure a step's GPU busy and idle time over. Empty for an nsys export.
  struct Step {
    std::string name;
    int64_t start = 0, end = 0, busy_ns = 0;
  };
  std::vector<Step> steps;
  // What the reader set aside (events it could not use), for the summary's warnings.
  std::vector<std::string> warnings;
};

// One kernel execution. `name_key` is unique per distinct name within one
// timeline (the export's string id), so grouping never hashes long names.
struct KernelLaunch {
  int64_t start = 0, end = 0;  // ns
  uint64_t device = 0, stream = 0;
  uint32_t pid = 0;  // the process (globalPid >> 24), 0 when the export does not say
  uint64_t name_key = 0;
  std::string_view name;        // demangled, as nsys stats names it
  std::string_view short_name;  // base function name (ncu's -k matches it)
  Dim3 grid, block;
  std::optional<int64_t> api_start;  // the runtime call that launched it (correlation id)
};

enum class MemoryKind { Copy, Set };
// CUDA's memory kinds (ENUM_CUDA_MEM_KIND): where a copy reads or writes.
enum class HostMemory : int8_t { Unknown = -1, Pageable = 0, Pinned = 1, Device = 2, Array = 3, Managed = 4 };
struct MemoryOp {
  MemoryKind kind = MemoryKind::Copy;
  int64_t start = 0, end = 0;
  uint64_t device = 0, stream = 0;
  uint64_t bytes = 0;
  std::string_view direction;  // "Host-to-Device", ...; "" for a memset
  uint32_t pid = 0;
  int copy_kind = -1;                                               // ENUM_CUDA_MEMCPY_OPER id (1: host to device)
  HostMemory src = HostMemory::Unknown, dst = HostMemory::Unknown;  // a memset's memory is `dst`
  bool same_device = false;          // a copy within one device (source and destination device ids equal)
  std::string_view api;              // the runtime call that issued it ("cudaMemcpy_v3020"), "" when not joined
  std::optional<int64_t> api_start;  // when that call began
};

// A host-side CUDA runtime call that blocks the calling thread until the
// GPU finishes (cudaDeviceSynchronize, cudaStreamSynchronize, cudaThreadSynchronize).
struct SyncCall {
  int64_t start = 0, end = 0;
  uint32_t pid = 0, tid = 0;
  std::string_view name;
};

// Time the profiler itself held the GPU (flushing its buffers): Nsight
// Systems counts it as busy, since the user cannot remove it.
struct ProfilerOverhead {
  int64_t start = 0, end = 0;
  uint32_t pid = 0;
};

struct NvtxRange {
  int64_t start = 0, end = 0;
  std::string_view name;
};

// Every call of one CUDA API function (runtime or driver) over the run, as
// nsys stats cuda_api_sum sums them: host time from the call's start to its return.
struct ApiCallStats;

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // Called once, before any event; [span_start, span_end] covers every GPU
  // activity (kernel, copy, memset) of the file, or is {0, 0} when unknown.
  virtual void begin(const TimelineMeta& meta, int64_t span_start, int64_t span_end) = 0;
  // Kernels, copies, memsets and profiler overhead arrive merged in start
  // order (kernels by start, then end); NVTX ranges before any of them, in
  // start order (the one-time phases they mark are then known when the gaps
  // they explain go past); sync calls in any order.
  virtual void kernel(const KernelLaunch& k) = 0;
  virtual void memory(const MemoryOp& m) = 0;
  virtual void nvtx(const NvtxRange& r) = 0;
  virtual void sync_call(const SyncCall& c) = 0;
  virtual void overhead(const ProfilerOverhead& o) = 0;
  // Once per API function name, in any order, after begin().
  virtual void api_calls(const ApiCallStats& a) = 0;
};

struct DurationStats {
  uint64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  void add(int64_t d);
  void merge(const DurationStats& o);
  double mean_ns() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
};

struct ApiCallStats {
  std::string name;  // the version suffix dropped: "cudaMalloc", as nsys stats names it
  DurationStats time;
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
  // The name printed for --name-base `base`: Function gives the short name
  // when the export has one; an export holds no mangled name, so anything
  // else gives the demangled one.
  const std::string& name_in(NameBase base) const {
    return base == NameBase::Function && !short_name.empty() ? short_name : name;
  }
  DurationStats time;
  std::vector<LaunchConfig> configs;  // first-seen order
  // The launch latency of each launch with a joined runtime call: from the
  // call (or, when earlier work still ran on its stream then, from the end of
  // that work) to the kernel's start.
  DurationStats latency;
  DurationStats queue;  // launches that waited behind earlier work on their stream: call to that work's end
  DriftSeries drift;
  int64_t first_start = 0, last_end = 0;
  std::string collective;  // an NCCL kernel's collective ("AllReduce"), "" for any other kernel
};

// Idle time between kernels: on one stream (gaps between its consecutive
// kernels) or on one device (time no kernel of any stream runs), from the
// first kernel's start to the last one's end.
struct Lane {
  uint64_t device = 0, stream = 0;  // stream unused for a device lane
  uint64_t kernels = 0;
  int64_t first_start = 0, last_end = 0, busy_ns = 0, idle_ns = 0;
  int64_t phase_idle_ns = 0;  // of idle_ns, the time inside one-time phases (RunLimits::phases)
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

// Limits of the run-level checks; the defaults are those of Nsight Systems'
// own rules (nsys analyze, 2023.4), and data/rules/timeline.json sets them.
struct RunLimits {
  int64_t gap_ns = 500'000'000;      // gpu_gaps: an idle GPU longer than this
  int64_t chunks = 30;               // gpu_time_util: equal slices of each process's GPU range
  double low_use_pct = 50;           // gpu_time_util: a slice in use less than this
  uint64_t small_h2d_bytes = 64000;  // cuda_memcpy_sync: host-to-device copies up to this are not flagged
  size_t keep = 200;                 // operations kept per list (the longest)
  // One-time phases by the name of the NVTX range that marks them (RE2,
  // searched): compilation, warm-up, data loading. Idle time inside them is
  // set apart from the steady state's.
  struct Phase {
    std::string match, what;
  };
  std::vector<Phase> phases;
  std::string nccl_kernel;  // RE2 on a kernel's name; group 1 names the collective
};

// An NVTX range that marks a one-time phase (or explains a gap): its name
// and what kind of phase it is ("compilation"; "" for a range that is no phase).
struct PhaseRange {
  int64_t start = 0, end = 0;
  std::string name, what;
};

// One operation (or idle stretch) a run check names.
struct TimedOp {
  int64_t start = 0, end = 0;
  uint32_t pid = 0;
  uint64_t device = 0, stream = 0, bytes = 0;
  std::string name;       // the API call ("cudaMemcpy"), "" for gaps and slices
  std::string direction;  // a copy's "Host-to-Device", ...
  HostMemory src = HostMemory::Unknown, dst = HostMemory::Unknown;
  std::optional<double> in_use_pct;  // a low-utilisation stretch: the GPU's time in use, %
  // A gap: how long after it began the host called the runtime for the
  // operation that ends it (unknown when that call is not in the trace), and
  // how much of it the host spent in synchronisation calls.
  std::optional<int64_t> issued_after_ns;
  int64_t host_sync_ns = 0;
  // A gap: the most specific NVTX range over at least half of it (its name,
  // the kind of one-time phase it marks, "" for none) and the gap's time
  // inside one-time phases.
  std::string nvtx, phase;
  int64_t phase_ns = 0;
  int64_t duration() const { return end - start; }
};

// Every operation a check matched, counted, and the longest kept.
struct OpList {
  uint64_t count = 0;
  int64_t total_ns = 0;
  uint64_t bytes = 0;
  std::vector<TimedOp> longest;  // longest first after finish()
  void add(TimedOp op, size_t keep);
  void merge(OpList&& other, size_t keep);  // `other`'s operations, as if each were added
  void finish();
};

struct RunChecks {
  OpList gaps;                   // GPU idle longer than RunLimits::gap_ns, per process and device
  OpList low_use;                // stretches of slices in use under RunLimits::low_use_pct
  OpList sync_copies;            // cudaMemcpy* without Async (NVIDIA's cuda_memcpy_sync)
  OpList pageable_async_copies;  // cudaMemcpy*Async from or to pageable memory (cuda_memcpy_async)
  OpList sync_memsets;           // cudaMemset* without Async on pinned or managed memory (cuda_memset_sync)
  OpList sync_calls;             // cudaDevice/Stream/ThreadSynchronize (cuda_api_sync and more)
  // Copies against kernels, per process and device: stretches between its
  // first and last kernel where a copy runs and no kernel does (KEET's own
  // check; no nsys rule looks at it). Copies before the first kernel and
  // after the last are left out: only splitting the whole computation into
  // chunks could hide them.
  OpList exposed_copies;
  int64_t copy_ns = 0;      // time some copy runs (overlaps counted once)
  int64_t hideable_ns = 0;  // per process and device, the exposed copy time up to its kernel time, summed
};

// One device over the run: its processes' GPU ranges summed, the time some
// operation ran, and its NCCL kernels against its other kernels.
struct DeviceUse {
  uint64_t device = 0;
  int64_t range_ns = 0, busy_ns = 0, kernel_ns = 0;  // kernel_ns: union of every kernel
  int64_t nccl_ns = 0;                               // union of NCCL kernels
  int64_t nccl_overlap_ns = 0;                       // of it, time another kernel ran beside
  uint64_t nccl_launches = 0;
};

struct TimelineSummary {
  TimelineMeta meta;
  int64_t span_start = 0, span_end = 0;  // first to last GPU activity seen
  int64_t kernel_ns = 0;                 // sum of kernel durations (nsys stats' 100%)
  uint64_t launches = 0;
  std::vector<KernelSummary> kernels;  // by total time, largest first
  std::vector<Lane> streams, devices;
  std::vector<Lane> copy_lanes;       // per device: copies and memsets (`kernels` counts them), for the chart
  std::vector<MemorySummary> memory;  // by time, largest first
  std::vector<NvtxSummary> nvtx;      // by time, largest first
  DurationStats latency;              // every joined launch (KernelSummary::latency)
  DurationStats queue;                // every launch that queued (KernelSummary::queue)
  std::vector<ApiCallStats> api;      // by total time, largest first
  std::vector<DeviceUse> device_use;  // by device
  std::vector<PhaseRange> phases;     // one-time phases, merged where they nest or touch, in time order
  size_t bins = 0;                    // slices of the span in each lane's chart
  std::vector<std::string> warnings;
  RunLimits limits;
  RunChecks checks;
  // Time some GPU operation (kernel, copy, memset) runs, summed over each
  // process's devices, overlaps counted once: the GPU-busy time (the
  // profiler's own overhead left out).
  int64_t gpu_busy_ns = 0;
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
  explicit TimelineBuilder(RunLimits limits = {});
  void begin(const TimelineMeta& meta, int64_t span_start, int64_t span_end) override;
  void kernel(const KernelLaunch& k) override;
  void memory(const MemoryOp& m) override;
  void nvtx(const NvtxRange& r) override;
  void sync_call(const SyncCall& c) override;
  void overhead(const ProfilerOverhead& o) override;
  void api_calls(const ApiCallStats& a) override;
  TimelineSummary finish() &&;

 private:
  // One process's GPU operations on one device, in start order: its gaps
  // and the in-use time of each slice of its range.
  struct GpuActivity {
    uint32_t pid = 0;
    uint64_t device = 0;
    int64_t start = 0, end = 0, chunk_ns = 0;  // the range and its slice length
    int64_t cursor = 0;                        // end of the operations so far
    bool seen = false;
    // End of the GPU's own operations so far (kernels, copies, memsets): the
    // busy time is their union. Profiler overhead moves `cursor` (a gap it
    // causes is no gap of the program's) but never this one.
    int64_t busy_cursor = 0;
    bool busy_seen = false;
    std::vector<int64_t> in_use;  // ns of operations per slice
    // Copies against kernels, swept in start order: the current stretch
    // each of them covers, the time before `frontier` already settled.
    struct Cover {
      int64_t start = 0, end = 0;
      bool open = false;
      int64_t total = 0;  // covered ns, overlaps once
      void add(int64_t s, int64_t e);
    } kernels, copies;
    int64_t frontier = 0, exposed_ns = 0;
    // Kernels in start order: every one, the NCCL ones, the others, and every
    // operation; NCCL time beside other kernels = nccl + compute - kernels.
    Cover all_kernels, nccl, compute, ops;
    uint64_t nccl_launches = 0;
    TimedOp stretch;  // the exposed stretch being grown (end == start: none)
    OpList pending;   // exposed stretches since the last kernel: counted once another kernel follows
  };
  GpuActivity* activity(uint32_t pid, uint64_t device);
  // Of [from, to), the time inside one-time phases (merged, in time order).
  int64_t phase_overlap(int64_t from, int64_t to) const;
  void merge_phases();
  void name_gaps();
  void sum_devices();
  void gpu_op(GpuActivity& a, int64_t start, int64_t end, bool busy = true, std::optional<int64_t> issued = {});
  void attribute_gaps();
  void classify(const MemoryOp& m);
  void finish_activity(GpuActivity& a);
  void settle_copies(GpuActivity& a, int64_t until);
  void close_stretch(GpuActivity& a);

  KernelSummary& group_of(const KernelLaunch& k);
  Lane& lane(std::vector<Lane>& lanes, std::unordered_map<uint64_t, size_t>& index, uint64_t key, uint64_t device,
             uint64_t stream);
  void occupy(Lane& l, int64_t start, int64_t end);
  void add_to_bins(Lane& l, int64_t from, int64_t end) const;
  void widen_span(int64_t start, int64_t end);

  TimelineSummary s_;
  bool span_given_ = false, span_seen_ = false;
  std::unordered_map<uint64_t, size_t> kernel_index_, stream_index_, device_index_, copy_index_;
  std::unordered_map<std::string, size_t> memory_index_, nvtx_index_;
  uint64_t skipped_negative_ = 0;
  std::vector<GpuActivity> activity_;  // one per process and device (few)
  // NVTX ranges long enough to explain a gap (half the gap limit), at most
  // kMaxRanges of them, each marked with the phase it is, if any.
  static constexpr size_t kMaxRanges = 100'000;
  std::vector<PhaseRange> long_ranges_;
  bool phases_merged_ = false;
  std::vector<Pattern> phase_patterns_;
  std::optional<Pattern> nccl_;
  size_t last_activity_ = 0;
};

}  // namespace keet::model
