#include "model/timeline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/strings.h"

namespace keet::model {

void DurationStats::add(int64_t d) {
  min_ns = count == 0 ? d : std::min(min_ns, d);
  max_ns = count == 0 ? d : std::max(max_ns, d);
  total_ns += d;
  ++count;
}

void DurationStats::merge(const DurationStats& o) {
  if (o.count == 0) return;
  min_ns = count == 0 ? o.min_ns : std::min(min_ns, o.min_ns);
  max_ns = count == 0 ? o.max_ns : std::max(max_ns, o.max_ns);
  total_ns += o.total_ns;
  count += o.count;
}

void DriftSeries::add(int64_t duration_ns) {
  if (buckets_.empty() || buckets_.back().launches == width_) {
    if (buckets_.size() == kBuckets) {  // full: pairs merge, each bucket now holds twice the launches
      std::vector<Bucket> merged;
      for (size_t i = 0; i + 1 < buckets_.size(); i += 2)
        merged.push_back({buckets_[i].first_launch, buckets_[i].launches + buckets_[i + 1].launches,
                          buckets_[i].total_ns + buckets_[i + 1].total_ns});
      buckets_ = std::move(merged);
      width_ *= 2;
    }
    if (buckets_.empty() || buckets_.back().launches == width_) buckets_.push_back({seen_, 0, 0});
  }
  auto& b = buckets_.back();
  ++b.launches;
  b.total_ns += duration_ns;
  ++seen_;
}

std::pair<double, double> DriftSeries::early_late_means() const {
  if (buckets_.empty()) return {0, 0};
  size_t quarter = std::max<size_t>(1, buckets_.size() / 4);
  auto mean = [&](size_t from, size_t to) {
    uint64_t n = 0;
    int64_t t = 0;
    for (size_t i = from; i < to; ++i) n += buckets_[i].launches, t += buckets_[i].total_ns;
    return n ? static_cast<double>(t) / static_cast<double>(n) : 0.0;
  };
  return {mean(0, quarter), mean(buckets_.size() - quarter, buckets_.size())};
}

double TimelineSummary::gpu_share(const KernelSummary& k) const {
  return kernel_ns > 0 ? static_cast<double>(k.time.total_ns) / static_cast<double>(kernel_ns) : 0;
}

double TimelineSummary::span_share(const KernelSummary& k) const {
  return span_ns() > 0 ? static_cast<double>(k.time.total_ns) / static_cast<double>(span_ns()) : 0;
}

namespace {

// "cudaMemcpy_v3020" -> "cudaMemcpy": the runtime's version suffix says
// nothing to the reader.
std::string api_base_name(std::string_view api) {
  auto v = api.rfind("_v");
  if (v != std::string_view::npos && v + 2 < api.size() &&
      api.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
    api = api.substr(0, v);
  return std::string(api);
}

// Longest first; of two as long, the earlier.
bool longer(const TimedOp& a, const TimedOp& b) {
  return a.duration() != b.duration() ? a.duration() > b.duration() : a.start < b.start;
}

}  // namespace

bool TimelineMeta::has_api_trace() const {
  return std::ranges::find(absent_tables, "CUPTI_ACTIVITY_KIND_RUNTIME") == absent_tables.end();
}

void OpList::add(TimedOp op, size_t keep) {
  ++count;
  total_ns += op.duration();
  bytes += op.bytes;
  if (keep == 0) return;
  if (longest.size() == keep) {  // a heap whose top is the shortest kept
    if (!longer(op, longest.front())) return;
    std::ranges::pop_heap(longest, longer);
    longest.back() = std::move(op);
  } else {
    longest.push_back(std::move(op));
  }
  std::ranges::push_heap(longest, longer);
}

void OpList::merge(OpList&& other, size_t keep) {
  // What `other` kept is added one by one (it may be kept here too); the
  // rest of its operations only count.
  for (auto& op : other.longest) {
    --other.count;
    other.total_ns -= op.duration();
    other.bytes -= op.bytes;
    add(std::move(op), keep);
  }
  count += other.count;
  total_ns += other.total_ns;
  bytes += other.bytes;
  other = {};
}

void OpList::finish() { std::ranges::sort(longest, longer); }

// Patterns come from the rule data, which the unit tests check; one that does
// not compile is left out rather than failing the timeline.
TimelineBuilder::TimelineBuilder(RunLimits limits) {
  s_.limits = std::move(limits);
  for (const auto& p : s_.limits.phases)
    if (auto c = Pattern::compile(p.match, {.case_insensitive = true}))
      phase_patterns_.push_back(std::move(*c));
    else
      phase_patterns_.push_back(*Pattern::compile("$^"));
  if (!s_.limits.nccl_kernel.empty())
    if (auto c = Pattern::compile(s_.limits.nccl_kernel)) nccl_ = std::move(*c);
}

void TimelineBuilder::begin(const TimelineMeta& meta, int64_t span_start, int64_t span_end) {
  s_.meta = meta;
  s_.warnings.insert(s_.warnings.end(), meta.warnings.begin(), meta.warnings.end());
  auto chunks = std::max<int64_t>(1, s_.limits.chunks);
  for (const auto& r : meta.gpu_ranges) {
    if (activity_.size() >= 4096) break;  // a hostile file's thousands of processes
    GpuActivity a{.pid = r.pid, .device = r.device, .start = r.start, .end = r.end};
    a.chunk_ns = r.end > r.start ? (r.end - r.start + chunks - 1) / chunks : 0;
    a.in_use.assign(a.chunk_ns > 0 ? static_cast<size_t>(chunks) : 0, 0);
    activity_.push_back(std::move(a));
  }
  span_given_ = span_end > span_start;
  if (span_given_) {
    s_.span_start = span_start, s_.span_end = span_end;
    s_.bins = kBins;
  }
}

void TimelineBuilder::widen_span(int64_t start, int64_t end) {
  if (span_given_) return;
  s_.span_start = span_seen_ ? std::min(s_.span_start, start) : start;
  s_.span_end = span_seen_ ? std::max(s_.span_end, end) : end;
  span_seen_ = true;
}

KernelSummary& TimelineBuilder::group_of(const KernelLaunch& k) {
  auto it = kernel_index_.find(k.name_key);
  if (it != kernel_index_.end()) return s_.kernels[it->second];
  if (s_.kernels.size() >= kMaxNames) {  // one bucket for the rest, keyed past every real id
    auto [other, fresh] = kernel_index_.try_emplace(~uint64_t{0}, s_.kernels.size());
    if (fresh) {
      s_.kernels.push_back({.name = "(other names)", .short_name = "(other names)"});
      s_.warnings.push_back(fmt::format("more than {} distinct kernel names: the rest are counted as one", kMaxNames));
    }
    return s_.kernels[other->second];
  }
  kernel_index_.emplace(k.name_key, s_.kernels.size());
  s_.kernels.push_back({.name = std::string(k.name), .short_name = std::string(k.short_name)});
  if (nccl_)
    if (auto m = nccl_->find(k.name))
      s_.kernels.back().collective = std::string(m->groups[1].empty() ? "NCCL" : m->groups[1]);
  return s_.kernels.back();
}

Lane& TimelineBuilder::lane(std::vector<Lane>& lanes, std::unordered_map<uint64_t, size_t>& index, uint64_t key,
                            uint64_t device, uint64_t stream) {
  auto [it, fresh] = index.try_emplace(key, lanes.size());
  if (fresh) lanes.push_back({.device = device, .stream = stream, .bins = std::vector<int64_t>(s_.bins, 0)});
  return lanes[it->second];
}

// Adds [start, end) to the lane's busy time; only the part past the lane's
// cursor is new, so overlapping kernels (concurrent streams on a device) count once.
void TimelineBuilder::occupy(Lane& l, int64_t start, int64_t end) {
  if (l.kernels++ == 0) {
    l.first_start = start;
    l.cursor = start;
  } else if (start > l.cursor) {
    int64_t gap = start - l.cursor;
    ++l.gaps;
    l.idle_ns += gap;
    l.phase_idle_ns += phase_overlap(l.cursor, start);
    if (gap > l.max_gap_ns) l.max_gap_ns = gap, l.max_gap_start = l.cursor;
  }
  int64_t from = std::max(start, l.cursor);
  if (end > from) {
    l.busy_ns += end - from;
    add_to_bins(l, from, end);
  }
  l.cursor = l.last_end = std::max(l.cursor, end);
}

void TimelineBuilder::add_to_bins(Lane& l, int64_t from, int64_t end) const {
  if (s_.bins == 0) return;
  double width = static_cast<double>(s_.span_ns()) / static_cast<double>(s_.bins);
  auto bin_of = [&](int64_t t) {
    auto b = static_cast<int64_t>(static_cast<double>(t - s_.span_start) / width);
    return static_cast<size_t>(std::clamp<int64_t>(b, 0, static_cast<int64_t>(s_.bins) - 1));
  };
  for (size_t b = bin_of(from), last = bin_of(end - 1); b <= last; ++b) {
    auto lo = s_.span_start + static_cast<int64_t>(static_cast<double>(b) * width);
    auto hi = b + 1 == s_.bins ? s_.span_end : s_.span_start + static_cast<int64_t>(static_cast<double>(b + 1) * width);
    if (b == 0) lo = std::min(lo, from);  // events outside a given span fall into the edge slices
    if (b + 1 == s_.bins) hi = std::max(hi, end);
    l.bins[b] += std::max<int64_t>(0, std::min(end, hi) - std::max(from, lo));
  }
}

void TimelineBuilder::kernel(const KernelLaunch& k) {
  if (k.end < k.start) {
    ++skipped_negative_;
    return;
  }
  int64_t d = k.end - k.start;
  widen_span(k.start, k.end);
  ++s_.launches;
  s_.kernel_ns += d;
  auto& g = group_of(k);
  if (g.time.count == 0) g.first_start = k.start;
  g.last_end = std::max(g.last_end, k.end);
  g.time.add(d);
  g.drift.add(d);
  auto cfg =
      std::ranges::find_if(g.configs, [&](const LaunchConfig& c) { return c.grid == k.grid && c.block == k.block; });
  if (cfg == g.configs.end() && g.configs.size() < 64) cfg = g.configs.insert(g.configs.end(), {k.grid, k.block, {}});
  if (cfg != g.configs.end()) cfg->time.add(d);
  merge_phases();
  auto& stream = lane(s_.streams, stream_index_, (k.device << 32) ^ k.stream, k.device, k.stream);
  if (k.api_start && *k.api_start <= k.start) {
    // Work still running on the stream when the host called holds the kernel
    // back: that wait is queueing, the rest is the launch's own latency.
    int64_t ready = stream.kernels > 0 ? std::clamp(stream.cursor, *k.api_start, k.start) : *k.api_start;
    g.latency.add(k.start - ready);
    s_.latency.add(k.start - ready);
    if (ready > *k.api_start) {
      g.queue.add(ready - *k.api_start);
      s_.queue.add(ready - *k.api_start);
    }
  }
  occupy(stream, k.start, k.end);
  occupy(lane(s_.devices, device_index_, k.device, k.device, 0), k.start, k.end);
  if (auto* a = activity(k.pid, k.device)) {
    gpu_op(*a, k.start, k.end, true, k.api_start);
    settle_copies(*a, k.start);
    // The copies since the last kernel ran between two kernels.
    close_stretch(*a);
    a->exposed_ns += a->pending.total_ns;
    s_.checks.exposed_copies.merge(std::move(a->pending), s_.limits.keep);
    a->kernels.add(k.start, k.end);
    a->ops.add(k.start, k.end);
    a->all_kernels.add(k.start, k.end);
    if (g.collective.empty()) {
      a->compute.add(k.start, k.end);
    } else {
      a->nccl.add(k.start, k.end);
      ++a->nccl_launches;
    }
  }
}

void TimelineBuilder::merge_phases() {
  if (phases_merged_) return;
  phases_merged_ = true;
  std::vector<PhaseRange> marked;
  for (const auto& r : long_ranges_)
    if (!r.what.empty()) marked.push_back(r);
  std::ranges::sort(marked, {}, &PhaseRange::start);
  // Nested and touching phases merge, named by the longest of them.
  int64_t longest = 0;
  for (auto& r : marked) {
    if (!s_.phases.empty() && r.start <= s_.phases.back().end) {
      auto& m = s_.phases.back();
      if (r.end - r.start > longest) longest = r.end - r.start, m.name = r.name, m.what = r.what;
      m.end = std::max(m.end, r.end);
      continue;
    }
    longest = r.end - r.start;
    s_.phases.push_back(std::move(r));
  }
}

int64_t TimelineBuilder::phase_overlap(int64_t from, int64_t to) const {
  const auto& p = s_.phases;
  auto it = std::ranges::upper_bound(p, from, {}, &PhaseRange::end);
  int64_t total = 0;
  for (; it != p.end() && it->start < to; ++it)
    total += std::max<int64_t>(0, std::min(to, it->end) - std::max(from, it->start));
  return total;
}

void TimelineBuilder::GpuActivity::Cover::add(int64_t s, int64_t e) {
  int64_t from = open ? std::max(s, end) : s;
  if (e > from) total += e - from;
  if (!open || s > end) start = s, end = e, open = true;
  end = std::max(end, e);
}

// Every operation still to come starts at or after `until`, so what copies
// and kernels cover before it is final: the copy time no kernel covers
// there joins the exposed stretch (or starts a new one). Before the first
// kernel nothing counts.
void TimelineBuilder::settle_copies(GpuActivity& a, int64_t until) {
  if (until <= a.frontier) return;
  if (!a.kernels.open) {
    a.frontier = until;
    return;
  }
  auto piece = [&](const GpuActivity::Cover& c) {
    return c.open ? std::pair{std::max(a.frontier, c.start), std::min(until, c.end)} : std::pair{until, until};
  };
  auto [c0, c1] = piece(a.copies);
  auto [k0, k1] = piece(a.kernels);
  a.frontier = until;
  if (c1 <= c0) return;
  std::pair<int64_t, int64_t> exposed[2] = {{c0, c1}, {c1, c1}};
  if (k1 > k0) exposed[0] = {c0, std::min(c1, k0)}, exposed[1] = {std::max(c0, k1), c1};
  for (auto [x, y] : exposed) {
    if (y <= x) continue;
    if (a.stretch.end != x || a.stretch.end == a.stretch.start) {
      close_stretch(a);
      a.stretch = TimedOp{.start = x, .end = x, .pid = a.pid, .device = a.device};
    }
    a.stretch.end = y;
  }
}

void TimelineBuilder::close_stretch(GpuActivity& a) {
  if (a.stretch.end > a.stretch.start) a.pending.add(a.stretch, s_.limits.keep);
  a.stretch.end = a.stretch.start;
}

TimelineBuilder::GpuActivity* TimelineBuilder::activity(uint32_t pid, uint64_t device) {
  if (last_activity_ < activity_.size() && activity_[last_activity_].pid == pid &&
      activity_[last_activity_].device == device)
    return &activity_[last_activity_];
  for (size_t i = 0; i < activity_.size(); ++i)
    if (activity_[i].pid == pid && activity_[i].device == device) return &activity_[last_activity_ = i];
  return nullptr;
}

// As Nsight Systems' rules read them: operations with a start past 0, a gap
// where the next one starts after every earlier one ended, and each slice's
// in-use time the operations' overlap with it (concurrent ones add up).
void TimelineBuilder::gpu_op(GpuActivity& a, int64_t start, int64_t end, bool busy, std::optional<int64_t> issued) {
  if (start <= 0) return;
  if (a.seen && start > a.cursor && start - a.cursor > s_.limits.gap_ns) {
    TimedOp gap{.start = a.cursor, .end = start, .pid = a.pid, .device = a.device};
    if (issued && *issued <= start) gap.issued_after_ns = std::max<int64_t>(0, *issued - a.cursor);
    s_.checks.gaps.add(std::move(gap), s_.limits.keep);
  }
  if (busy) {
    int64_t busy_from = a.busy_seen ? std::max(start, a.busy_cursor) : start;
    if (end > busy_from) s_.gpu_busy_ns += end - busy_from;
    a.busy_cursor = a.busy_seen ? std::max(a.busy_cursor, end) : end;
    a.busy_seen = true;
  }
  a.cursor = a.seen ? std::max(a.cursor, end) : end;
  a.seen = true;
  if (a.chunk_ns <= 0 || end <= start) return;
  auto n = static_cast<int64_t>(a.in_use.size());
  int64_t first = std::clamp<int64_t>((start - a.start) / a.chunk_ns, 0, n - 1);
  for (int64_t c = first; c < n; ++c) {
    int64_t lo = a.start + c * a.chunk_ns, hi = std::min(lo + a.chunk_ns, a.end);
    if (lo >= end) break;
    a.in_use[static_cast<size_t>(c)] += std::max<int64_t>(0, std::min(end, hi) - std::max(start, lo));
  }
}

void TimelineBuilder::overhead(const ProfilerOverhead& o) {
  for (auto& a : activity_)
    if (a.pid == o.pid && o.start > a.start && o.end < a.end) gpu_op(a, o.start, o.end, false);
}

void TimelineBuilder::sync_call(const SyncCall& c) {
  if (c.end < c.start) return;
  s_.checks.sync_calls.add({.start = c.start, .end = c.end, .pid = c.pid, .name = api_base_name(c.name)},
                           s_.limits.keep);
}

// The copies and memsets that block the host, as NVIDIA's cuda_memcpy_sync,
// cuda_memcpy_async and cuda_memset_sync rules pick them (the API name
// matched without regard to case, as SQLite's LIKE does). HIP's calls
// (hipMemcpy, hipMemsetAsync, ..., from a ROCm Kineto trace) have the same
// semantics and are read as the CUDA call of the same name.
void TimelineBuilder::classify(const MemoryOp& m) {
  std::string api = to_lower(m.api);
  if (api.empty()) return;
  if (api.starts_with("hip")) api = "cuda" + api.substr(3);
  bool async = api.find("async") != std::string::npos;
  TimedOp op{.start = m.start,
             .end = m.end,
             .pid = m.pid,
             .device = m.device,
             .stream = m.stream,
             .bytes = m.bytes,
             .name = api_base_name(m.api),
             .direction = std::string(m.direction),
             .src = m.src,
             .dst = m.dst};
  if (m.kind == MemoryKind::Set) {
    if (api.starts_with("cudamemset") && !async && (m.dst == HostMemory::Pinned || m.dst == HostMemory::Managed))
      s_.checks.sync_memsets.add(std::move(op), s_.limits.keep);
    return;
  }
  if (!api.starts_with("cudamemcpy")) return;
  if (async) {
    if (m.src == HostMemory::Pageable || m.dst == HostMemory::Pageable)
      s_.checks.pageable_async_copies.add(std::move(op), s_.limits.keep);
  } else if (!(m.bytes <= s_.limits.small_h2d_bytes && m.copy_kind == 1) && !m.same_device) {
    s_.checks.sync_copies.add(std::move(op), s_.limits.keep);
  }
}

void TimelineBuilder::finish_activity(GpuActivity& a) {
  // Copies after the last kernel (still pending) are left out.
  s_.checks.copy_ns += a.copies.total;
  s_.checks.hideable_ns += std::min(a.exposed_ns, a.kernels.total);
  // Consecutive slices under the limit form one stretch, its use the
  // slices' length-weighted mean (rounded to 0.1% as nsys prints it).
  TimedOp run;
  int64_t weighted = 0;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    auto len = static_cast<double>(run.end - run.start);
    run.in_use_pct = len > 0 ? std::round(static_cast<double>(weighted) / len * 100 * 10) / 10 : 0;
    s_.checks.low_use.add(run, s_.limits.keep);
    open = false;
  };
  for (size_t c = 0; c < a.in_use.size(); ++c) {
    int64_t lo = a.start + static_cast<int64_t>(c) * a.chunk_ns, hi = std::min(lo + a.chunk_ns, a.end);
    if (lo >= hi) break;
    double pct = static_cast<double>(a.in_use[c]) / static_cast<double>(hi - lo) * 100;
    if (pct >= s_.limits.low_use_pct) {
      close();
      continue;
    }
    if (!open) run = TimedOp{.start = lo, .end = lo, .pid = a.pid, .device = a.device}, weighted = 0, open = true;
    run.end = hi;
    weighted += a.in_use[c];
  }
  close();
}

// The host's synchronisation calls inside each kept gap (of the kept, longest
// calls: one that fills much of a gap longer than the gap limit is among them).
void TimelineBuilder::attribute_gaps() {
  for (auto& gap : s_.checks.gaps.longest)
    for (const auto& call : s_.checks.sync_calls.longest)
      if (call.pid == gap.pid)
        gap.host_sync_ns += std::max<int64_t>(0, std::min(call.end, gap.end) - std::max(call.start, gap.start));
}

void TimelineBuilder::memory(const MemoryOp& m) {
  if (m.end < m.start) {
    ++skipped_negative_;
    return;
  }
  merge_phases();
  widen_span(m.start, m.end);
  if (auto* a = activity(m.pid, m.device)) {
    gpu_op(*a, m.start, m.end, true, m.api_start);
    a->ops.add(m.start, m.end);
    if (m.kind == MemoryKind::Copy) {
      settle_copies(*a, m.start);
      a->copies.add(m.start, m.end);
    }
  }
  classify(m);
  occupy(lane(s_.copy_lanes, copy_index_, m.device, m.device, 0), m.start, m.end);
  std::string key = m.kind == MemoryKind::Set ? "memset" : std::string(m.direction.empty() ? "Unknown" : m.direction);
  auto [it, fresh] = memory_index_.try_emplace(key, s_.memory.size());
  if (fresh) s_.memory.push_back({.direction = key});
  auto& sum = s_.memory[it->second];
  sum.time.add(m.end - m.start);
  sum.bytes += m.bytes;
}

void TimelineBuilder::nvtx(const NvtxRange& r) {
  if (r.end < r.start) return;  // an unclosed range: no duration to count
  std::string key(r.name);
  auto it = nvtx_index_.find(key);
  if (it == nvtx_index_.end()) {
    if (s_.nvtx.size() >= kMaxNames) return;
    it = nvtx_index_.emplace(key, s_.nvtx.size()).first;
    s_.nvtx.push_back({.name = key});
  }
  s_.nvtx[it->second].time.add(r.end - r.start);
  // Ranges that may explain a gap or mark a one-time phase are kept.
  std::string what;
  for (size_t i = 0; i < phase_patterns_.size() && what.empty(); ++i)
    if (phase_patterns_[i].search(r.name)) what = s_.limits.phases[i].what;
  if ((!what.empty() || r.end - r.start >= s_.limits.gap_ns / 2) && long_ranges_.size() < kMaxRanges)
    long_ranges_.push_back({r.start, r.end, key, std::move(what)});
}

void TimelineBuilder::api_calls(const ApiCallStats& a) {
  auto it = std::ranges::find(s_.api, a.name, &ApiCallStats::name);
  if (it != s_.api.end())
    it->time.merge(a.time);
  else if (s_.api.size() < kMaxNames)
    s_.api.push_back(a);
}

// Each kept gap: its time inside one-time phases, and the most specific
// NVTX range (the shortest) over at least half of it.
void TimelineBuilder::name_gaps() {
  for (auto& gap : s_.checks.gaps.longest) {
    gap.phase_ns = phase_overlap(gap.start, gap.end);
    const PhaseRange* best = nullptr;
    for (const auto& r : long_ranges_) {
      int64_t over = std::min(r.end, gap.end) - std::max(r.start, gap.start);
      if (2 * over < gap.duration()) continue;
      if (!best || r.end - r.start < best->end - best->start) best = &r;
    }
    if (best) gap.nvtx = best->name;
    if (2 * gap.phase_ns >= gap.duration())
      for (const auto& p : s_.phases)
        if (p.start < gap.end && p.end > gap.start) gap.phase = p.what;
  }
}

void TimelineBuilder::sum_devices() {
  for (const auto& a : activity_) {
    auto it = std::ranges::find(s_.device_use, a.device, &DeviceUse::device);
    if (it == s_.device_use.end()) it = s_.device_use.insert(s_.device_use.end(), DeviceUse{.device = a.device});
    it->range_ns += a.end - a.start;
    it->busy_ns += a.ops.total;
    it->kernel_ns += a.all_kernels.total;
    it->nccl_ns += a.nccl.total;
    it->nccl_overlap_ns += a.nccl.total + a.compute.total - a.all_kernels.total;
    it->nccl_launches += a.nccl_launches;
  }
  std::ranges::sort(s_.device_use, {}, &DeviceUse::device);
}

TimelineSummary TimelineBuilder::finish() && {
  auto by_total = [](const auto& a, const auto& b) {
    return a.time.total_ns != b.time.total_ns ? a.time.total_ns > b.time.total_ns : a.time.count < b.time.count;
  };
  std::ranges::stable_sort(s_.kernels, by_total);
  std::ranges::stable_sort(s_.memory, by_total);
  std::ranges::stable_sort(s_.nvtx, by_total);
  std::ranges::stable_sort(s_.api, by_total);
  merge_phases();
  auto by_id = [](const Lane& a, const Lane& b) { return std::tie(a.device, a.stream) < std::tie(b.device, b.stream); };
  std::ranges::sort(s_.streams, by_id);
  std::ranges::sort(s_.devices, by_id);
  std::ranges::sort(s_.copy_lanes, by_id);
  for (auto& a : activity_) finish_activity(a);
  for (auto* list : {&s_.checks.gaps, &s_.checks.low_use, &s_.checks.sync_copies, &s_.checks.pageable_async_copies,
                     &s_.checks.sync_memsets, &s_.checks.sync_calls, &s_.checks.exposed_copies})
    list->finish();
  attribute_gaps();
  name_gaps();
  sum_devices();
  if (skipped_negative_)
    s_.warnings.push_back(fmt::format("{} event(s) end before they start and were left out", skipped_negative_));
  return std::move(s_);
}

}  // namespace keet::model
