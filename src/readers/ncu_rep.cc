// Reader for Nsight Compute binary reports (.ncu-rep, and the 2019-era
// .nsight-cuprof-report, which uses the same framing).
//
// Layout (shared/docs/ncu-rep-format.md): "NVR\0", u32 + FileHeader, then
// blocks of u32 + BlockHeader followed by length-prefixed SourceData,
// ProfileResult and RangeResult items. Every length is checked against the
// bytes that remain before anything is allocated or parsed.
#include "readers/ncu_rep.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <climits>
#include <algorithm>
#include <cstring>
#include <deque>
#include <expected>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "io/zstd_stream.h"
#include "ncu_report.pb.h"

namespace keet::readers::ncurep {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

constexpr std::string_view kMagic{"NVR\0", 4};
constexpr size_t kMaxProcessText = 16384;  // process name + host name, copied into each kernel

// Thrown only inside this file; read() converts it into a ReadError.
struct Corrupt {
  uint64_t offset;
  std::string what;
  bool truncated;
};

// Pulls up to `cap` more bytes into `dst`; 0 at the end of the input. Throws
// Corrupt when the input itself is damaged (a compressed stream).
using Pull = std::function<size_t(char* dst, size_t cap)>;

// The report's bytes, front to back: a mapped file (all at hand, so lengths
// are checked against what remains before anything is parsed) or a stream
// (decompressed on the fly), of which only a window is held: the item being
// read plus one chunk, so memory stays bounded by the largest item.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  explicit Cursor(Pull pull) : pull_(std::move(pull)) {}
  uint64_t pos() const { return base_ + head_; }
  bool at_end() { return !ensure(1); }
  // Bytes left, when known (not for a stream).
  std::optional<uint64_t> remaining() const {
    if (pull_) return std::nullopt;
    return data_.size() - head_;
  }
  std::string_view peek(size_t n) {
    ensure(n);
    return data_.substr(head_, n);
  }

  uint32_t u32(std::string_view what) {
    if (!ensure(4)) throw Corrupt{pos(), fmt::format("truncated {} length", what), true};
    uint32_t v;
    std::memcpy(&v, data_.data() + head_, 4);  // little-endian on every target we build for
    head_ += 4;
    return v;
  }
  // A u32 length prefix followed by that many bytes; valid until the next call.
  std::string_view item(std::string_view what) {
    uint64_t at = pos();
    uint32_t n = u32(what);
    if (n > INT_MAX) throw Corrupt{at, fmt::format("{} length {} is too large", what, n), false};
    if (!ensure(n))
      throw Corrupt{at, fmt::format("{} of {} bytes runs past the end of the file ({} left)", what, n, available()), true};
    std::string_view out = data_.substr(head_, n);
    head_ += n;
    return out;
  }
  // Moves forward to `p`.
  void skip_to(uint64_t p) {
    while (pos() < p) {
      if (!ensure(1)) throw Corrupt{pos(), "the file ends inside a block", true};
      head_ += std::min<uint64_t>(available(), p - pos());
    }
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 17;
  uint64_t available() const { return data_.size() - head_; }

  // Whether `n` bytes from the current position are at hand; a stream drops
  // what was consumed, then reads until they are or the input ends. The
  // buffer grows only as bytes arrive, so a bogus length allocates nothing.
  bool ensure(uint64_t n) {
    if (available() >= n) return true;
    if (!pull_) return false;
    buf_.erase(0, head_);
    base_ += head_;
    head_ = 0;
    while (buf_.size() < n) {
      size_t had = buf_.size();
      buf_.resize(had + kChunk);
      size_t got = pull_(buf_.data() + had, kChunk);
      buf_.resize(had + got);
      if (got == 0) break;
    }
    data_ = buf_;
    return buf_.size() >= n;
  }

  std::string_view data_;
  Pull pull_;
  std::string buf_;   // a stream's window
  uint64_t base_ = 0;  // position of data_[0]
  uint64_t head_ = 0;  // read position in data_
};

template <typename Msg>
void parse(Msg& msg, std::string_view bytes, uint64_t offset, std::string_view what) {
  msg.Clear();
  if (!msg.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Corrupt{offset, fmt::format("{} is not a valid protobuf message", what), false};
}

model::Value to_value(const pb::MetricValue& v) {
  // Decide by which field is present, never by the metric's name.
  if (v.has_double_value()) return model::Value::of_double(v.double_value());
  if (v.has_uint64_value()) return model::Value::of_uint(v.uint64_value());
  if (v.has_float_value()) return model::Value::of_float(v.float_value());
  if (v.has_uint32_value()) return model::Value::of_uint(v.uint32_value(), true);
  if (v.has_string_value()) return model::Value::of_string(v.string_value());
  return {};
}

model::Dim3 to_dim(const pb::Uint64x3& d) { return {d.x(), d.y(), d.z()}; }

// State that lives across blocks.
// Copies a message's fields into `out`, except those `drop` selects by tag, so
// protobuf never decodes (or copies) what nobody asked for. Returns whether a
// field was left out; on a malformed field, the error is its position in `bytes`.
template <typename Drop>
std::expected<bool, int> copy_fields_except(std::string_view bytes, std::string& out, Drop drop) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  bool dropped = false;
  out.clear();
  for (;;) {
    int start = in.CurrentPosition();
    uint32_t tag = in.ReadTag();
    if (tag == 0) return dropped;
    if (!WireFormatLite::SkipField(&in, tag)) return std::unexpected(start);
    if (drop(tag)) dropped = true;
    else out.append(bytes.substr(start, in.CurrentPosition() - start));
  }
}

// A kernel result that names metrics by ids the string table does not hold
// yet: ncu may define a name in a later block's table. Its bytes are copied
// (the mapped pages are given back as the read moves on) and it is decoded
// once the table covers `max_id`, so the metric filter and the sink still see
// each kernel whole and in report order.
struct Deferred {
  std::string bytes;
  uint64_t offset = 0;
  pb::ProcessInfo process;  // of the block the kernel came in
  uint32_t max_id = 0;
};

// Metrics whose name id never resolved (the table never grew that far, or the
// kernel could wait no longer): counted for one warning at the end.
struct Unresolved {
  uint64_t metrics = 0;
  uint64_t kernels = 0;
  uint32_t max_id = 0;
};

struct FileState {
  std::vector<std::string> strings;  // cumulative, global string table
  pb::SessionDetails session;        // merged from fragments
  pb::ProcessInfo process;           // of the current block
  pb::MetricResult metric;           // reused scratch messages
  pb::RuleResult rule;
  pb::ProfileResultHeader header;
  std::string header_bytes;
  std::string scratch;               // a metric without its instance list
  std::vector<std::pair<std::string_view, uint64_t>> metric_bodies, rule_bodies;  // of the kernel being decoded
  std::deque<Deferred> deferred;     // kernels waiting for names, in report order
  uint64_t deferred_bytes = 0;
  Unresolved unresolved;
  std::vector<uint32_t> grid_size_ids;  // string ids of "launch__grid_size" (see launch_grid)
  int kernels = 0;
};

// The NVTX state of a launch: the launching thread's push/pop stacks (the
// only thread, when none has the result's thread id) and the open start/end
// ranges, with domain ids turned into names ("" for the default domain).
model::NvtxState to_nvtx(const pb::NvtxState& s, uint64_t thread_id) {
  auto domain = [&](uint64_t id) {
    if (s.has_default_domain() && id == s.default_domain()) return std::string();
    for (const auto& d : s.domains())
      if (d.id() == id) return d.name();
    return std::string();
  };
  model::NvtxState out;
  for (const auto& t : s.threads()) {
    if (t.tid() != thread_id && s.threads_size() > 1) continue;
    for (const auto& d : t.push_pop_domains()) {
      model::NvtxState::Stack st{domain(d.id()), {}};
      for (const auto& r : d.stack()) st.ranges.push_back(r.name());
      out.push_pop.push_back(std::move(st));
    }
  }
  for (const auto& d : s.start_end_domains())
    for (const auto& r : d.ranges()) out.start_end.push_back({domain(d.id()), r.name()});
  return out;
}

class KernelDecoder {
 public:
  KernelDecoder(FileState& st, const ReadOptions& opt) : st_(st), opt_(opt) {}

  // The kernel, or nothing when a metric's name id lies beyond the string
  // table and `final` is false (the caller defers it). With `final`, such
  // metrics are left out and counted.
  std::optional<model::Kernel> decode(std::string_view bytes, uint64_t offset, const pb::ProcessInfo& process,
                                      bool final) {
    split(bytes, offset);
    if (!final && opt_.metrics && max_name_id() >= st_.strings.size()) return std::nullopt;
    model::Kernel k;
    uint64_t dropped = st_.unresolved.metrics;
    if (opt_.metrics)
      for (auto [body, at] : st_.metric_bodies) metric(body, k, at);
    if (opt_.rules)
      for (auto [body, at] : st_.rule_bodies) rule(body, k, at);
    if (st_.unresolved.metrics > dropped) ++st_.unresolved.kernels;
    parse(st_.header, st_.header_bytes, offset, "kernel result header");
    fill_header(k, process);
    k.grid = grid_in_blocks(k.grid, k.block, launch_grid());
    return k;
  }

  // The largest metric name id of the kernel last split (0 when none).
  uint32_t max_name_id() const {
    uint32_t max = 0;
    for (auto [body, at] : st_.metric_bodies)
      if (auto id = peek_name_id(body)) max = std::max(max, *id);
    return max;
  }

  // Walks the kernel's fields once: metric and rule bodies are noted for
  // decoding, every other (small) field is kept as raw header bytes.
  void split(std::string_view bytes, uint64_t offset) {
    st_.header_bytes.clear();
    st_.metric_bodies.clear();
    st_.rule_bodies.clear();
    CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(INT_MAX);
    for (;;) {
      int tag_start = in.CurrentPosition();
      uint32_t tag = in.ReadTag();
      if (tag == 0) break;
      field(in, tag, tag_start, bytes, offset);
    }
    if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(bytes.size()))
      throw Corrupt{offset, "kernel result is not a valid protobuf message", false};
  }

 private:
  void field(CodedInputStream& in, uint32_t tag, int tag_start, std::string_view bytes, uint64_t offset) {
    int start = in.CurrentPosition();
    int number = WireFormatLite::GetTagFieldNumber(tag);
    bool delimited = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (delimited && (number == 13 || number == 17 || number == 19)) {
      uint32_t len = 0;
      if (!in.ReadVarint32(&len) || len > bytes.size() - in.CurrentPosition())
        throw Corrupt{offset + start, "kernel result field runs past its message", false};
      std::string_view body = bytes.substr(in.CurrentPosition(), len);
      in.Skip(static_cast<int>(len));
      if (number == 13) st_.metric_bodies.emplace_back(body, offset + start);
      if (number == 19) st_.rule_bodies.emplace_back(body, offset + start);
      return;
    }
    if (!WireFormatLite::SkipField(&in, tag))
      throw Corrupt{offset + start, "kernel result has a malformed field", false};
    // Keep the raw bytes of every small field; they are parsed as a header.
    st_.header_bytes.append(bytes.substr(tag_start, in.CurrentPosition() - tag_start));
  }

  // Cheap look at MetricResult.NameId (almost always the first field) so that
  // filtered-out metrics are never parsed.
  static std::optional<uint32_t> peek_name_id(std::string_view body) {
    CodedInputStream in(reinterpret_cast<const uint8_t*>(body.data()), static_cast<int>(body.size()));
    uint32_t id = 0;
    if (in.ReadTag() == 0x08 && in.ReadVarint32(&id)) return id;
    return std::nullopt;
  }

  const std::string* name_of(uint32_t id) {
    if (id < st_.strings.size()) return &st_.strings[id];
    ++st_.unresolved.metrics;
    st_.unresolved.max_id = std::max(st_.unresolved.max_id, id);
    return nullptr;
  }

  void metric(std::string_view body, model::Kernel& k, uint64_t offset) {
    bool filtered = false;  // the filter is asked once per metric
    if (opt_.metric_filter) {
      auto id = peek_name_id(body);
      if (id && *id < st_.strings.size()) {
        if (!opt_.metric_filter(st_.strings[*id])) return;
        filtered = true;
      }
    }
    // Without instances, the list (often most of a metric's bytes) is stepped
    // over on the wire and only its presence kept.
    bool listed = false;
    if (!opt_.instances) {
      auto dropped = copy_fields_except(body, st_.scratch,
                                        [](uint32_t tag) { return WireFormatLite::GetTagFieldNumber(tag) == 3; });
      if (!dropped) throw Corrupt{offset, "metric result is not a valid protobuf message", false};
      listed = *dropped;
      body = st_.scratch;
    }
    parse(st_.metric, body, offset, "metric result");
    const std::string* name = name_of(st_.metric.name_id());
    if (name == nullptr) return;
    if (!filtered && opt_.metric_filter && !opt_.metric_filter(*name)) return;
    model::Metric m;
    m.name = *name;
    m.value = to_value(st_.metric.value());
    m.listed = listed || st_.metric.instances_size() > 0;
    if (opt_.instances) {
      m.instances.reserve(st_.metric.instances_size());
      for (const auto& e : st_.metric.instances())
        m.instances.push_back({to_value(e.correlation_id()), to_value(e.element_value())});
    }
    k.metrics.push_back(std::move(m));
  }

  void rule(std::string_view body, model::Kernel& k, uint64_t offset) {
    parse(st_.rule, body, offset, "rule result");
    model::RuleResult r;
    r.id = st_.rule.identifier();
    r.display_name = st_.rule.display_name();
    r.section = st_.rule.section_identifier();
    for (const auto& item : st_.rule.body().items()) rule_item(item, r);
    k.rules.push_back(std::move(r));
  }

  static void rule_item(const pb::RuleBodyItem& item, model::RuleResult& r) {
    if (item.has_message()) {
      const auto& m = item.message();
      r.messages.push_back({static_cast<int>(m.type()), m.id(), m.name(), m.message(), std::nullopt, 0});
    }
    for (const auto& f : item.focus_metrics())
      r.focus.push_back({f.message_id(), f.metric_name(), f.metric_value(), static_cast<int>(f.severity()), f.info()});
    if (item.has_speedup()) attach_speedup(item.speedup(), r);
  }

  static void attach_speedup(const pb::RuleSpeedup& s, model::RuleResult& r) {
    for (auto& m : r.messages)
      if (m.id == s.message_id()) {
        m.estimated_speedup = s.speedup();
        m.speedup_type = static_cast<int>(s.type());
        return;
      }
    if (!r.messages.empty()) r.messages.back().estimated_speedup = s.speedup();
  }

  // The kernel's launch__grid_size metric (blocks), whatever the metric filter
  // keeps: it decides how to read GridSize (grid_in_blocks).
  std::optional<double> launch_grid() {
    for (auto [body, at] : st_.metric_bodies) {
      auto id = peek_name_id(body);
      if (!id || std::find(st_.grid_size_ids.begin(), st_.grid_size_ids.end(), *id) == st_.grid_size_ids.end())
        continue;
      pb::MetricResult m;
      if (!copy_fields_except(body, st_.scratch, [](uint32_t tag) { return WireFormatLite::GetTagFieldNumber(tag) == 3; }) ||
          !m.ParsePartialFromString(st_.scratch))
        return std::nullopt;
      return to_value(m.value()).as_number();
    }
    return std::nullopt;
  }

  void fill_header(model::Kernel& k, const pb::ProcessInfo& process) {
    const auto& h = st_.header;
    k.index = st_.kernels;
    k.mangled = h.kernel_mangled_name();
    k.function = h.kernel_function_name();
    k.demangled = h.kernel_demangled_name();
    k.grid = to_dim(h.grid_size());
    k.block = to_dim(h.block_size());
    k.context_id = h.context_id();
    k.stream_id = h.stream_id();
    k.creation_time = h.creation_time();
    k.process_id = process.process_id();
    k.process_name = process.process_name();
    k.host_name = process.hostname();
    if (h.has_source() && h.source().has_reference()) k.source_ref = h.source().reference();
    if (h.has_nvtx()) k.nvtx = to_nvtx(h.nvtx(), h.thread_id());
  }

  FileState& st_;
  const ReadOptions& opt_;
};

model::Module to_module(const pb::SourceData& s, const ReadOptions& opt) {
  model::Module m;
  m.reference = s.reference();
  m.sm_revision = s.sm_revision();
  if (!opt.modules) return m;
  m.binary = s.binary();
  for (const auto& f : s.source_files().files()) m.files.push_back({f.file_name(), f.content()});
  return m;
}

// The payload of a message's leading length-delimited field 1, if it has one.
std::optional<std::string_view> leading_message(std::string_view bytes) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  uint32_t len = 0;
  if (in.ReadTag() != 0x0A || !in.ReadVarint32(&len) || len > bytes.size() - in.CurrentPosition()) return std::nullopt;
  return bytes.substr(in.CurrentPosition(), len);
}

// A SourceData without its code, cubin and files: when modules are not wanted
// those (often megabytes) are stepped over on the wire instead of copied.
std::string source_ids_only(std::string_view bytes, uint64_t offset) {
  std::string kept;
  auto r = copy_fields_except(bytes, kept, [](uint32_t tag) {
    return WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  });
  if (!r) throw Corrupt{offset + r.error(), "source entry has a malformed field", false};
  return kept;
}

void read_source(Cursor& cur, FileState&, const ReadOptions& opt, model::Report& report) {
  uint64_t at = cur.pos();
  std::string_view bytes = cur.item("source entry");
  // 2020-era writers wrapped the entry as {1: SourceData}; v7 writes it bare.
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == 0x0A) {
    auto inner = leading_message(bytes);
    if (!inner) throw Corrupt{at + 4, "source entry is not a valid protobuf message", false};
    bytes = *inner;
  }
  std::string ids;
  if (!opt.modules) bytes = ids = source_ids_only(bytes, at + 4);
  pb::SourceData data;
  parse(data, bytes, at + 4, "source entry");
  report.modules[data.reference()] = to_module(data, opt);
}

void merge_session(FileState& st, const pb::BlockHeader& h) {
  if (h.has_session_details()) st.session.MergeFrom(h.session_details());
  if (h.has_process()) st.process = h.process();
  for (const auto& s : h.string_table().strings()) {
    if (s == "launch__grid_size") st.grid_size_ids.push_back(static_cast<uint32_t>(st.strings.size()));
    st.strings.push_back(s);
  }
}

// Hands kernels to the sink in report order, holding back those whose metric
// names arrive in a later block (and every kernel after them).
class Delivery {
 public:
  Delivery(FileState& st, const ReadOptions& opt, const KernelSink& sink) : st_(st), opt_(opt), sink_(sink), dec_(st, opt) {}

  // Returns false once the sink asked to stop.
  bool take(std::string_view bytes, uint64_t offset) {
    if (st_.deferred.empty()) {
      auto k = dec_.decode(bytes, offset, st_.process, false);
      if (k) return deliver(std::move(*k));
    } else {
      dec_.split(bytes, offset);  // a kernel queues behind the waiting ones, whatever it names
    }
    st_.deferred.push_back({std::string(bytes), offset, st_.process, dec_.max_name_id()});
    st_.deferred_bytes += bytes.size();
    // Bounded memory: past the limit the oldest kernel goes out without the names it still lacks.
    while (st_.deferred_bytes > opt_.max_deferred_bytes && !st_.deferred.empty())
      if (!pop()) return false;
    return true;
  }

  // Delivers waiting kernels whose names the table now holds; with `final`
  // (end of file), all of them.
  bool drain(bool final) {
    while (!st_.deferred.empty() && (final || st_.deferred.front().max_id < st_.strings.size()))
      if (!pop()) return false;
    return true;
  }

 private:
  bool pop() {
    Deferred d = std::move(st_.deferred.front());
    st_.deferred.pop_front();
    st_.deferred_bytes -= d.bytes.size();
    return deliver(std::move(*dec_.decode(d.bytes, d.offset, d.process, true)));
  }

  bool deliver(model::Kernel&& k) {
    ++st_.kernels;
    return sink_(std::move(k));
  }

  FileState& st_;
  const ReadOptions& opt_;
  const KernelSink& sink_;
  KernelDecoder dec_;
};

bool read_block(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report, Delivery& out) {
  uint64_t header_at = cur.pos();
  std::string_view hb = cur.item("block header");
  pb::BlockHeader h;
  parse(h, hb, header_at + 4, "block header");
  merge_session(st, h);
  // Every kernel of the block copies these: a long one would be multiplied.
  if (st.process.process_name().size() + st.process.hostname().size() > kMaxProcessText)
    throw Corrupt{header_at, "block header's process name is longer than any path", false};
  if (!out.drain(false)) return false;  // the new strings may name what waiting kernels lacked
  uint64_t payload_at = cur.pos();
  auto left = cur.remaining();
  if (h.has_payload_size() && left && h.payload_size() > *left)
    throw Corrupt{header_at, fmt::format("block payload of {} bytes runs past the end of the file ({} left)",
                                         h.payload_size(), *left), true};
  for (uint32_t i = 0; i < h.num_sources(); ++i) read_source(cur, st, opt, report);
  for (uint32_t i = 0; i < h.num_results(); ++i) {
    uint64_t at = cur.pos();
    std::string_view body = cur.item("kernel result");
    // An empty result is no kernel; refusing it keeps a header that claims
    // millions of them from costing a model kernel per 4 bytes of file.
    if (body.empty()) throw Corrupt{at, "kernel result is empty", false};
    if (!opt.kernels) {  // skipped whole: it still counts as read (a later truncation is partial, not fatal)
      ++st.kernels;
      continue;
    }
    if (!out.take(body, at + 4)) return false;
  }
  for (uint32_t i = 0; i < h.num_range_results(); ++i) cur.item("range result");
  uint64_t used = cur.pos() - payload_at;
  if (h.has_payload_size() && used != h.payload_size()) {
    if (used > h.payload_size())
      throw Corrupt{header_at, fmt::format("block items use {} bytes but the header says {}", used, h.payload_size()), false};
    // Items this reader does not know about: skip them, as the size allows.
    cur.skip_to(payload_at + h.payload_size());
  }
  return true;
}

model::Device to_device(const pb::DeviceAttributes& d) {
  model::Device dev;
  dev.id = d.id();
  dev.name = d.name();
  for (const auto& a : d.attributes()) dev.attributes[a.name()] = to_value(a.value());
  return dev;
}

void finish_session(const FileState& st, model::Report& report) {
  const auto& s = st.session;
  report.session.creation_time = s.creation_time();
  report.session.host_name = s.host_system_info().computer_name();
  report.session.os = s.target_system_info().os_name();
  report.session.cmdline = s.profiler_cmdline();
  for (const auto& v : s.version_info()) report.session.versions.emplace_back(v.provider(), v.version());
  for (const auto& d : s.device_attributes()) report.session.devices.push_back(to_device(d));
}

// Returns false when the sink stopped the read.
bool read_all(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report, Delivery& out,
              const std::function<void(uint64_t)>& release) {
  if (cur.peek(kMagic.size()) != kMagic) throw Corrupt{0, "not an Nsight Compute report (no NVR magic)", false};
  cur.skip_to(kMagic.size());
  uint64_t at = cur.pos();
  pb::FileHeader fh;
  parse(fh, cur.item("file header"), at + 4, "file header");
  report.file_version = fh.version();
  while (!cur.at_end()) {
    if (!read_block(cur, st, opt, report, out)) return false;
    release(cur.pos());  // everything before this block was copied into the model (or a waiting kernel)
  }
  return true;
}

// One warning for every metric whose name never resolved, with how many.
void warn_unresolved(const FileState& st, model::Report& report) {
  const auto& u = st.unresolved;
  if (u.metrics == 0) return;
  report.warnings.push_back(fmt::format(
      "{} metric value(s) in {} kernel(s) were left out: their name ids (largest {}) are beyond the report's "
      "string table ({} entries)",
      u.metrics, u.kernels, u.max_id, st.strings.size()));
}

// Reads a report from `cur` (a mapped file or a decompressed stream).
ReadResult<void> read_cursor(Cursor& cur, const std::string& name, const ReadOptions& opt, model::Report& report,
                             const KernelSink& sink, const std::function<void(uint64_t)>& release) {
  FileState st;
  Delivery out(st, opt, sink);
  report.format = model::Format::NcuRep;
  std::optional<Corrupt> error;
  try {
    if (read_all(cur, st, opt, report, out, release)) out.drain(true);
  } catch (const Corrupt& c) {
    error = c;
  }
  if (error) {
    try {
      out.drain(true);  // kernels read whole before the damage still count
    } catch (const Corrupt&) {
    }
  }
  finish_session(st, report);
  warn_unresolved(st, report);
  if (!error) return {};
  if (st.kernels == 0) return std::unexpected(ReadError{name, error->offset, error->what, false});
  report.partial = true;
  report.warnings.push_back(
      fmt::format("{}: at byte {}: {}; read {} kernel(s) before it", name, error->offset, error->what, st.kernels));
  return {};
}

}  // namespace

bool detect(std::string_view bytes) { return bytes.substr(0, 4) == kMagic; }

ReadResult<void> read(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                      const KernelSink& sink) {
  Cursor cur(src.bytes());
  return read_cursor(cur, src.name(), opt, report, sink, [&src](uint64_t upto) { src.release(upto); });
}

bool detect_compressed(std::string_view bytes) { return io::is_zstd(bytes); }

// A zstd container: decompressed chunk by chunk into the same reader, so only
// the item being read is ever held. Offsets in messages count decompressed bytes.
ReadResult<void> read_compressed(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                                 const KernelSink& sink) {
  io::ZstdStream z(src);
  Cursor cur([&z](char* dst, size_t cap) {
    auto n = z.read(dst, cap);
    if (!n) throw Corrupt{z.produced(), n.error().message, z.truncated()};
    return *n;
  });
  report.format = model::Format::NcuRep;
  std::string what;
  try {
    auto head = cur.peek(kMagic.size());
    if (head.empty()) what = "unsupported compressed report: the zstd container holds no data (skippable frames only)";
    else if (head != kMagic) what = "unsupported compressed report: the zstd container does not hold an Nsight Compute report";
  } catch (const Corrupt& c) {
    what = c.what;
  }
  if (!what.empty()) return std::unexpected(ReadError{src.name(), 0, what, false});
  return read_cursor(cur, src.name(), opt, report, sink, [](uint64_t) {});
}

}  // namespace keet::readers::ncurep
