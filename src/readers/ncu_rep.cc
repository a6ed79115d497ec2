// Reader for Nsight Compute binary reports (.ncu-rep, and the 2019-era
// .nsight-cuprof-report, which uses the same framing).
//
// Layout (shared/docs/ncu-rep-format.md): "NVR\0", u32 + FileHeader, then
// blocks of u32 + BlockHeader followed by length-prefixed SourceData,
// ProfileResult and RangeResult items. Every length is checked against the
// bytes that remain before anything is allocated or parsed.
#include "readers/ncu_rep.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <expected>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "io/zstd_stream.h"
#include "ncu_report.pb.h"
#include "readers/wire.h"

namespace keet::readers::ncurep {
namespace {

using google::protobuf::io::CodedInputStream;

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
      throw Corrupt{at, fmt::format("{} of {} bytes runs past the end of the file ({} left)", what, n, available()),
                    true};
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
  std::string buf_;    // a stream's window
  uint64_t base_ = 0;  // position of data_[0]
  uint64_t head_ = 0;  // read position in data_
};

template <typename Msg>
void parse(Msg& msg, std::string_view bytes, uint64_t offset, std::string_view what) {
  msg.Clear();
  if (!msg.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Corrupt{offset, fmt::format("{} is not a valid protobuf message", what), false};
}

model::Dim3 to_dim(const pb::Uint64x3& d) { return {d.x(), d.y(), d.z()}; }

// ------------------------------------------------------------ metrics off the wire
//
// MetricResult {1: name_id, 2: MetricValue, 3: repeated MetricListElement}
// and MetricValue {1: string, 2: float, 3: double, 4: uint32, 5: uint64} are
// read straight from the kernel's bytes: no message object, no copy of the
// metric without its list, no second parse. As protobuf does, a scalar's last
// occurrence wins, a repeated MetricValue merges, and a field of an unexpected
// wire type is an unknown field (stepped over).
struct WireValue {
  enum : uint8_t { kString = 1, kFloat = 2, kDouble = 4, kUint32 = 8, kUint64 = 16 };
  uint8_t present = 0;
  std::string_view text;
  float f = 0;
  double d = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
};

bool read_value(std::string_view bytes, WireValue& v) {
  wire::Walker w(bytes);
  while (!w.done()) {
    uint32_t field, type;
    if (!w.tag(field, type)) return false;
    bool ok = true;
    if (field == 1 && type == wire::kDelimited)
      ok = w.delimited(v.text), v.present |= WireValue::kString;
    else if (field == 2 && type == wire::kFixed32) {
      uint32_t bits = 0;
      ok = w.fixed32(bits);
      std::memcpy(&v.f, &bits, 4);
      v.present |= WireValue::kFloat;
    } else if (field == 3 && type == wire::kFixed64) {
      uint64_t bits = 0;
      ok = w.fixed64(bits);
      std::memcpy(&v.d, &bits, 8);
      v.present |= WireValue::kDouble;
    } else if (field == 4 && type == wire::kVarint) {
      uint64_t x = 0;
      ok = w.varint(x);
      v.u32 = static_cast<uint32_t>(x);
      v.present |= WireValue::kUint32;
    } else if (field == 5 && type == wire::kVarint)
      ok = w.varint(v.u64), v.present |= WireValue::kUint64;
    else
      ok = w.skip(type);
    if (!ok) return false;
  }
  return true;
}

// Into a model value that may be recycled (its text keeps its buffer).
// Decided by which field is present, never by the metric's name.
void assign_value(const WireValue& v, model::Value& out) {
  using K = model::Value::Kind;
  out.text.clear();
  out.integer = 0;
  out.number = 0;
  if (v.present & WireValue::kDouble)
    out.kind = K::Double, out.number = v.d;
  else if (v.present & WireValue::kUint64)
    out.kind = K::Uint64, out.integer = v.u64, out.number = static_cast<double>(v.u64);
  else if (v.present & WireValue::kFloat)
    out.kind = K::Float, out.number = static_cast<double>(v.f);
  else if (v.present & WireValue::kUint32)
    out.kind = K::Uint32, out.integer = v.u32, out.number = static_cast<double>(v.u32);
  else if (v.present & WireValue::kString)
    out.kind = K::String, out.text.assign(v.text);
  else
    out.kind = K::None;
}

// A metric result's fields, as spans of the kernel's bytes.
struct WireMetric {
  bool has_name = false;
  uint32_t name_id = 0;
  WireValue value;
  uint32_t instances = 0;  // MetricListElement entries
};

bool read_metric(std::string_view body, WireMetric& m) {
  wire::Walker w(body);
  while (!w.done()) {
    uint32_t field, type;
    if (!w.tag(field, type)) return false;
    std::string_view sub;
    if (field == 1 && type == wire::kVarint) {
      uint64_t id = 0;
      if (!w.varint(id)) return false;
      m.name_id = static_cast<uint32_t>(id);
      m.has_name = true;
    } else if (field == 2 && type == wire::kDelimited) {
      if (!w.delimited(sub) || !read_value(sub, m.value)) return false;
    } else if (field == 3 && type == wire::kDelimited) {
      if (!w.delimited(sub)) return false;
      ++m.instances;
    } else if (!w.skip(type)) {
      return false;
    }
  }
  return true;
}

model::Value to_model_value(const WireValue& v) {
  model::Value out;
  assign_value(v, out);
  return out;
}

// The lazy decoder of an instance list (model::InstanceList): `body` is the
// whole metric result, already walked once by read_metric, so it is well formed
// at this level; a damaged element inside ends the list there.
void decode_instances(std::string_view body, std::vector<model::Instance>& out) {
  wire::Walker w(body);
  while (!w.done()) {
    uint32_t field, type;
    std::string_view element;
    if (!w.tag(field, type)) return;
    if (field != 3 || type != wire::kDelimited) {
      if (!w.skip(type)) return;
      continue;
    }
    if (!w.delimited(element)) return;
    WireValue key, value;
    wire::Walker e(element);
    while (!e.done()) {
      uint32_t f, t;
      std::string_view sub;
      if (!e.tag(f, t)) return;
      if ((f == 1 || f == 2) && t == wire::kDelimited) {
        if (!e.delimited(sub) || !read_value(sub, f == 1 ? key : value)) return;
      } else if (!e.skip(t)) {
        return;
      }
    }
    out.push_back({to_model_value(key), to_model_value(value)});
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
  // What keeps the report's bytes alive past the read (null: a decompressed
  // stream, whose chunks do not last): a cubin inside `backing` is viewed, not copied.
  std::shared_ptr<const void> owner;
  std::string_view backing;
  std::vector<std::string_view> strings;              // cumulative, global string table, viewing `string_bytes`
  std::vector<std::unique_ptr<char[]>> string_bytes;  // one buffer per block's table
  model::Session session;                             // merged from fragments (finish_session hands it over)
  pb::ProcessInfo process;                            // of the current block
  pb::RuleResult rule;                                // reused scratch messages
  pb::ProfileResultHeader header;
  std::string header_bytes;
  // The kernel being decoded: its metric bodies with their name ids as
  // split() peeked them (read once, used by the filter, the grid and the
  // deferral check), and its rule bodies.
  struct MetricBody {
    std::string_view body;
    uint64_t at = 0;
    std::optional<uint32_t> id;
  };
  std::vector<MetricBody> metric_bodies;
  std::vector<std::pair<std::string_view, uint64_t>> rule_bodies;
  std::deque<Deferred> deferred;  // kernels waiting for names, in report order
  uint64_t deferred_bytes = 0;
  Unresolved unresolved;
  std::vector<uint32_t> grid_size_ids;  // string ids of "launch__grid_size" (see launch_grid)
  std::vector<int8_t> verdicts;         // metric_filter's answer per string id (-1: not asked yet)
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

  // Fills `k` (a kernel object the caller may recycle: every field is
  // overwritten, and the strings and vectors it holds keep their buffers, so a
  // streamed report costs no allocation per metric). Returns false, leaving
  // `k` alone, when a metric's name id lies beyond the string table and
  // `final` is false (the caller defers the kernel). With `final`, such
  // metrics are left out and counted.
  bool decode(std::string_view bytes, uint64_t offset, const pb::ProcessInfo& process, bool final, model::Kernel& k) {
    split(bytes, offset);
    if (!final && opt_.metrics && max_name_id_ >= st_.strings.size()) return false;
    uint64_t dropped = st_.unresolved.metrics;
    size_t used = 0;
    lists_.clear();
    if (opt_.metrics) {
      // Room for every metric only when every metric is kept: a kernel a
      // filter keeps four metrics of (keet list) would hold room for a
      // thousand, 10 KB per kernel of a report that is kept whole.
      if (!opt_.metric_filter) k.metrics.reserve(st_.metric_bodies.size());
      for (const auto& mb : st_.metric_bodies) used += metric(mb, k, used);
    }
    k.metrics.resize(used);
    attach_lists(k);
    k.reset_index();
    size_t rules = 0;
    if (opt_.rules)
      for (auto [body, at] : st_.rule_bodies) rule(body, k, rules++, at);
    k.rules.resize(rules);
    if (st_.unresolved.metrics > dropped) ++st_.unresolved.kernels;
    parse(st_.header, st_.header_bytes, offset, "kernel result header");
    fill_header(k, process);
    k.grid = grid_in_blocks(k.grid, k.block, launch_grid());
    return true;
  }

  // The largest metric name id of the kernel last split (0 when none).
  uint32_t max_name_id() const { return max_name_id_; }

  // Walks the kernel's fields once: metric and rule bodies are noted for
  // decoding, every other (small) field is kept as raw header bytes.
  void split(std::string_view bytes, uint64_t offset) {
    st_.header_bytes.clear();
    st_.metric_bodies.clear();
    st_.rule_bodies.clear();
    max_name_id_ = 0;
    wire::Walker w(bytes);
    while (!w.done()) {
      const char* tag_start = w.here();
      uint32_t number, type;
      if (!w.tag(number, type))
        throw Corrupt{offset + (tag_start - bytes.data()), "kernel result is not a valid protobuf message", false};
      field(w, number, type, tag_start, bytes, offset);
    }
  }

 private:
  void field(wire::Walker& w, uint32_t number, uint32_t type, const char* tag_start, std::string_view bytes,
             uint64_t offset) {
    uint64_t start = offset + (w.here() - bytes.data());
    if (type == wire::kDelimited && (number == 13 || number == 17 || number == 19)) {
      std::string_view body;
      if (!w.delimited(body)) throw Corrupt{start, "kernel result field runs past its message", false};
      if (number == 13) {
        auto id = peek_name_id(body);
        st_.metric_bodies.push_back({body, start, id});
        if (id) max_name_id_ = std::max(max_name_id_, *id);
      }
      if (number == 19) st_.rule_bodies.emplace_back(body, start);
      return;
    }
    if (!w.skip(type)) throw Corrupt{start, "kernel result has a malformed field", false};
    // Keep the raw bytes of every small field; they are parsed as a header.
    st_.header_bytes.append(tag_start, w.here() - tag_start);
  }

  // Cheap look at MetricResult.NameId (almost always the first field) so that
  // filtered-out metrics are never decoded.
  static std::optional<uint32_t> peek_name_id(std::string_view body) {
    if (body.size() >= 2 && body[0] == 0x08 && static_cast<uint8_t>(body[1]) < 0x80)
      return static_cast<uint8_t>(body[1]);
    wire::Walker w(body);
    uint32_t field, type;
    uint64_t id;
    if (w.tag(field, type) && field == 1 && type == wire::kVarint && w.varint(id)) return static_cast<uint32_t>(id);
    return std::nullopt;
  }

  const std::string_view* name_of(uint32_t id) {
    if (id < st_.strings.size()) return &st_.strings[id];
    ++st_.unresolved.metrics;
    st_.unresolved.max_id = std::max(st_.unresolved.max_id, id);
    return nullptr;
  }

  // The metric filter's answer for a name id; asked once per id when the
  // caller says the answer depends on the name alone.
  bool keep(uint32_t id) {
    if (!opt_.metric_filter_by_name) return opt_.metric_filter(st_.strings[id]);
    if (st_.verdicts.size() <= id) st_.verdicts.resize(st_.strings.size(), -1);
    int8_t& v = st_.verdicts[id];
    if (v < 0) v = opt_.metric_filter(st_.strings[id]) ? 1 : 0;
    return v == 1;
  }

  // Decodes one metric into k.metrics[slot] (appended when the kernel has
  // fewer); returns 1 when it was kept.
  size_t metric(const FileState::MetricBody& mb, model::Kernel& k, size_t slot) {
    bool filtered = false;  // the filter is asked once per metric
    std::string_view body = mb.body;
    uint64_t offset = mb.at;
    auto id = mb.id;
    if (opt_.metric_filter && id && *id < st_.strings.size()) {
      if (!keep(*id)) return 0;
      filtered = true;
    }
    WireMetric wm;
    if (!opt_.metric_values && id)
      wm.name_id = *id, wm.has_name = true;  // the name is all that is wanted
    else if (!read_metric(body, wm))
      throw Corrupt{offset, "metric result is not a valid protobuf message", false};
    const std::string_view* name = name_of(wm.name_id);
    if (name == nullptr) return 0;
    if (!filtered && opt_.metric_filter && !keep(wm.name_id)) return 0;
    if (slot == k.metrics.size()) k.metrics.emplace_back();
    model::Metric& m = k.metrics[slot];
    m.name.assign(*name);
    m.name_id = wm.name_id;
    assign_value(wm.value, m.value);
    m.unit.clear();
    m.listed = wm.instances > 0;
    m.instances.clear();
    if (opt_.instances && wm.instances > 0) lists_.push_back({slot, body, wm.instances});
    return 1;
  }

  // The kernel's instance lists stay undecoded: their metrics' bytes are
  // copied into one buffer the lists share, and each decodes on first use.
  void attach_lists(model::Kernel& k) {
    if (lists_.empty()) return;
    size_t total = 0;
    for (const auto& l : lists_) total += l.body.size();
    auto owner = std::make_shared<std::string>();
    owner->reserve(total);
    for (const auto& l : lists_) owner->append(l.body);
    std::shared_ptr<const std::string> shared = owner;
    size_t at = 0;
    for (const auto& l : lists_) {
      k.metrics[l.slot].instances = model::InstanceList::lazy(
          shared, std::string_view(*shared).substr(at, l.body.size()), l.count, decode_instances);
      at += l.body.size();
    }
  }

  // Decodes one rule result into k.rules[slot] (appended when the kernel has
  // fewer), reusing the strings a recycled kernel holds.
  void rule(std::string_view body, model::Kernel& k, size_t slot, uint64_t offset) {
    parse(st_.rule, body, offset, "rule result");
    if (slot == k.rules.size()) k.rules.emplace_back();
    model::RuleResult& r = k.rules[slot];
    r.id.assign(st_.rule.identifier());
    r.display_name.assign(st_.rule.display_name());
    r.section.assign(st_.rule.section_identifier());
    size_t messages = 0, focus = 0;
    for (const auto& item : st_.rule.body().items()) rule_item(item, r, messages, focus);
    r.messages.resize(messages);
    r.focus.resize(focus);
  }

  template <typename T>
  static T& next(std::vector<T>& v, size_t& used) {
    if (used == v.size()) v.emplace_back();
    return v[used++];
  }

  static void rule_item(const pb::RuleBodyItem& item, model::RuleResult& r, size_t& messages, size_t& focus) {
    if (item.has_message()) {
      const auto& m = item.message();
      auto& out = next(r.messages, messages);
      out.type = static_cast<int>(m.type());
      out.id = m.id();
      out.name.assign(m.name());
      out.text.assign(m.message());
      out.estimated_speedup.reset();
      out.speedup_type = 0;
    }
    for (const auto& f : item.focus_metrics()) {
      auto& out = next(r.focus, focus);
      out.message_id = f.message_id();
      out.metric.assign(f.metric_name());
      out.value = f.metric_value();
      out.severity = static_cast<int>(f.severity());
      out.info.assign(f.info());
    }
    if (item.has_speedup()) attach_speedup(item.speedup(), r, messages);
  }

  // To the message it names, else the last one so far (the first `messages` are this rule's).
  static void attach_speedup(const pb::RuleSpeedup& s, model::RuleResult& r, size_t messages) {
    for (size_t i = 0; i < messages; ++i)
      if (r.messages[i].id == s.message_id()) {
        r.messages[i].estimated_speedup = s.speedup();
        r.messages[i].speedup_type = static_cast<int>(s.type());
        return;
      }
    if (messages > 0) r.messages[messages - 1].estimated_speedup = s.speedup();
  }

  // The kernel's launch__grid_size metric (blocks), whatever the metric filter
  // keeps: it decides how to read GridSize (grid_in_blocks).
  std::optional<double> launch_grid() {
    if (st_.grid_size_ids.empty()) return std::nullopt;
    for (const auto& mb : st_.metric_bodies) {
      if (!mb.id || std::find(st_.grid_size_ids.begin(), st_.grid_size_ids.end(), *mb.id) == st_.grid_size_ids.end())
        continue;
      WireMetric m;
      if (!read_metric(mb.body, m)) return std::nullopt;
      return to_model_value(m.value).as_number();
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
    k.source_ref =
        h.has_source() && h.source().has_reference() ? std::optional<uint64_t>(h.source().reference()) : std::nullopt;
    k.nvtx = h.has_nvtx() ? to_nvtx(h.nvtx(), h.thread_id()) : decltype(k.nvtx){};
    k.invocations = 0;
  }

  struct PendingList {
    size_t slot;  // in k.metrics
    std::string_view body;
    uint32_t count;
  };

  FileState& st_;
  const ReadOptions& opt_;
  uint32_t max_name_id_ = 0;
  std::vector<PendingList> lists_;  // of the kernel being decoded
};

// The payload of a message's leading length-delimited field 1, if it has one.
std::optional<std::string_view> leading_message(std::string_view bytes) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  uint32_t len = 0;
  if (in.ReadTag() != 0x0A || !in.ReadVarint32(&len) || len > bytes.size() - in.CurrentPosition()) return std::nullopt;
  return bytes.substr(in.CurrentPosition(), len);
}

// The fields of a message in order, for the messages read off the wire once
// per report (not per metric): `on(field, type, walker)` reads a field it
// knows from the walker and returns whether that went well, or returns
// nullopt to have the field stepped over, as protobuf steps over a field it
// does not know or of an unexpected wire type.
template <typename OnField>
bool walk_fields(std::string_view bytes, OnField&& on) {
  wire::Walker w(bytes);
  while (!w.done()) {
    uint32_t field, type;
    if (!w.tag(field, type)) return false;
    std::optional<bool> took = on(field, type, w);
    if (took ? !*took : !w.skip(type)) return false;
  }
  return true;
}

// Calls `f` for each occurrence of the string (or bytes) field `want`.
template <typename F>
bool walk_strings(std::string_view bytes, uint32_t want, F&& f) {
  return walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    if (field != want || type != wire::kDelimited) return std::nullopt;
    std::string_view s;
    if (!w.delimited(s)) return false;
    f(s);
    return true;
  });
}

// SourceFiles {1: repeated SourceFile {1: file_name, 2: content}} into `m`.
bool read_source_files(std::string_view bytes, model::Module& m) {
  return walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    if (field != 1 || type != wire::kDelimited) return std::nullopt;
    std::string_view file;
    if (!w.delimited(file)) return false;
    model::SourceFile out;
    bool ok = walk_fields(file, [&](uint32_t n, uint32_t t, wire::Walker& f) -> std::optional<bool> {
      if ((n != 1 && n != 2) || t != wire::kDelimited) return std::nullopt;
      std::string_view text;
      if (!f.delimited(text)) return false;
      (n == 1 ? out.path : out.content).assign(text);
      return true;
    });
    if (ok) m.files.push_back(std::move(out));
    return ok;
  });
}

// SourceData {1: reference, 4: binary, 6: sm_revision, 8: SourceFiles} off
// the wire: a cubin (often megabytes) is viewed where it lies in the mapped
// report (copied once from a decompressed stream), and is only stepped over
// when modules are not wanted.
bool read_source_data(std::string_view bytes, const ReadOptions& opt, const FileState& st, model::Module& m) {
  std::string_view binary;
  std::vector<std::string_view> files;  // repeated occurrences merge, as protobuf's do
  bool ok = walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    uint64_t v = 0;
    std::string_view sub;
    if ((field == 1 || field == 6) && type == wire::kVarint) {
      if (!w.varint(v)) return false;
      if (field == 1)
        m.reference = v;
      else
        m.sm_revision = static_cast<uint32_t>(v);
      return true;
    }
    if ((field == 4 || field == 8) && type == wire::kDelimited) {
      if (!w.delimited(sub)) return false;
      if (field == 4)
        binary = sub;
      else
        files.push_back(sub);
      return true;
    }
    return std::nullopt;
  });
  if (!ok) return false;
  if (!opt.modules) return true;
  std::less_equal<const char*> le;  // a total order, whatever the two spans are
  bool inside = st.owner != nullptr && !binary.empty() && le(st.backing.data(), binary.data()) &&
                le(binary.data() + binary.size(), st.backing.data() + st.backing.size());
  m.binary = model::Blob(binary, inside ? st.owner : nullptr);
  for (auto f : files)
    if (!read_source_files(f, m)) return false;
  return true;
}

void read_source(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report) {
  uint64_t at = cur.pos();
  std::string_view bytes = cur.item("source entry");
  // 2020-era writers wrapped the entry as {1: SourceData}; v7 writes it bare.
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == 0x0A) {
    auto inner = leading_message(bytes);
    if (!inner) throw Corrupt{at + 4, "source entry is not a valid protobuf message", false};
    bytes = *inner;
  }
  model::Module m;
  if (!read_source_data(bytes, opt, st, m))
    throw Corrupt{at + 4, "source entry is not a valid protobuf message", false};
  uint64_t reference = m.reference;
  report.modules[reference] = std::move(m);
}

// BlockHeader {1: num_sources, 2: num_results, 3: SessionDetails fragment,
// 4: StringTable {1: repeated string}, 5: payload_size, 6: ProcessInfo,
// 7: num_range_results}, walked off the wire: the string table (hundreds of
// names per block) is copied into one buffer instead of a string per name,
// twice. As protobuf does, a scalar's last occurrence wins, repeated messages
// merge, and a field of an unexpected wire type is stepped over. Nothing is
// kept until the whole header has been checked.
struct BlockHeader {
  uint32_t num_sources = 0, num_results = 0, num_range_results = 0;
  std::optional<uint64_t> payload_size;
  std::vector<std::string_view> sessions, processes, tables;  // each occurrence, in order
};

bool walk_block_header(std::string_view bytes, BlockHeader& h) {
  return walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    uint64_t v = 0;
    std::string_view sub;
    if (type == wire::kVarint && (field == 1 || field == 2 || field == 5 || field == 7)) {
      if (!w.varint(v)) return false;
      if (field == 1)
        h.num_sources = static_cast<uint32_t>(v);
      else if (field == 2)
        h.num_results = static_cast<uint32_t>(v);
      else if (field == 5)
        h.payload_size = v;
      else
        h.num_range_results = static_cast<uint32_t>(v);
      return true;
    }
    if (type == wire::kDelimited && (field == 3 || field == 4 || field == 6)) {
      if (!w.delimited(sub)) return false;
      (field == 3 ? h.sessions : field == 4 ? h.tables : h.processes).push_back(sub);
      return true;
    }
    return std::nullopt;
  });
}

template <typename Msg>
bool merge_occurrences(Msg& msg, const std::vector<std::string_view>& parts) {
  msg.Clear();
  Msg one;
  for (auto part : parts) {
    if (!one.ParsePartialFromArray(part.data(), static_cast<int>(part.size()))) return false;
    msg.MergeFrom(one);
  }
  return true;
}

// ------------------------------------------------------------ session off the wire
//
// SessionDetails {2: creation_time, 3: host SystemInfo, 4: target SystemInfo,
// 6: repeated DeviceAttributes, 8: repeated VersionInfo, 11: cmdline},
// SystemInfo {1: os_name, 5: computer_name}, DeviceAttributes {1: id, 2: name,
// 3: repeated NamedAttribute {1: name, 2: MetricValue}}, VersionInfo {1:
// provider, 2: version}: read as protobuf would merge them (a scalar's last
// occurrence wins, a message field merges, a repeated one appends, a field of
// an unexpected wire type is stepped over), without building the messages
// (150 device attributes per fragment made this a tenth of a small export).
// Every known sub-message is walked, so a malformed one refuses the header as
// protobuf's parse did.
struct SessionPart {
  std::optional<uint64_t> creation_time;
  std::optional<std::string_view> host_name, os, cmdline;
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<model::Device> devices;
};

// A string field `want` of a message of strings and varints (SystemInfo).
bool read_string_field(std::string_view bytes, uint32_t want, std::optional<std::string_view>& out) {
  return walk_strings(bytes, want, [&](std::string_view s) { out = s; });  // the last occurrence wins
}

bool read_version(std::string_view bytes, std::pair<std::string, std::string>& v) {
  std::optional<std::string_view> provider, version;
  if (!read_string_field(bytes, 1, provider) || !read_string_field(bytes, 2, version)) return false;
  v = {std::string(provider.value_or("")), std::string(version.value_or(""))};
  return true;
}

bool read_named_attribute(std::string_view bytes, model::Device& d) {
  std::string_view name;
  WireValue value;  // occurrences of the value merge, as protobuf's do
  bool ok = walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    std::string_view sub;
    if (field == 1 && type == wire::kDelimited) return w.delimited(name);
    if (field == 2 && type == wire::kDelimited) return w.delimited(sub) && read_value(sub, value);
    return std::nullopt;
  });
  if (!ok) return false;
  assign_value(value, d.attributes[std::string(name)]);  // the last of a repeated name wins
  return true;
}

bool read_device(std::string_view bytes, model::Device& d) {
  return walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    uint64_t v = 0;
    std::string_view sub;
    if (field == 1 && type == wire::kVarint) {
      if (!w.varint(v)) return false;
      d.id = static_cast<uint32_t>(v);
      return true;
    }
    if ((field != 2 && field != 3) || type != wire::kDelimited) return std::nullopt;
    if (!w.delimited(sub)) return false;
    if (field == 3) return read_named_attribute(sub, d);
    d.name.assign(sub);
    return true;
  });
}

bool read_session(std::string_view bytes, SessionPart& s) {
  return walk_fields(bytes, [&](uint32_t field, uint32_t type, wire::Walker& w) -> std::optional<bool> {
    uint64_t v = 0;
    std::string_view sub;
    if (field == 2 && type == wire::kVarint) {
      if (!w.varint(v)) return false;
      s.creation_time = v;
      return true;
    }
    bool known = field == 3 || field == 4 || field == 6 || field == 8 || field == 11;
    if (!known || type != wire::kDelimited) return std::nullopt;
    if (!w.delimited(sub)) return false;
    if (field == 3) return read_string_field(sub, 5, s.host_name);
    if (field == 4) return read_string_field(sub, 1, s.os);
    if (field == 6) return read_device(sub, s.devices.emplace_back());
    if (field == 8) return read_version(sub, s.versions.emplace_back());
    s.cmdline = sub;
    return true;
  });
}

void merge_session(model::Session& into, SessionPart& from) {
  if (from.creation_time) into.creation_time = *from.creation_time;
  if (from.host_name) into.host_name.assign(*from.host_name);
  if (from.os) into.os.assign(*from.os);
  if (from.cmdline) into.cmdline.assign(*from.cmdline);
  std::ranges::move(from.versions, std::back_inserter(into.versions));
  std::ranges::move(from.devices, std::back_inserter(into.devices));
}

// Reads the header at `bytes` into `h` and merges its session, process and
// strings into `st`.
void read_block_header(std::string_view bytes, uint64_t offset, FileState& st, BlockHeader& h) {
  Corrupt bad{offset, "block header is not a valid protobuf message", false};
  if (!walk_block_header(bytes, h)) throw bad;
  size_t total = 0;
  for (auto t : h.tables)
    if (!walk_strings(t, 1, [&](std::string_view s) { total += s.size(); })) throw bad;
  SessionPart session;
  pb::ProcessInfo process;
  for (auto part : h.sessions)
    if (!read_session(part, session)) throw bad;
  if (!merge_occurrences(process, h.processes)) throw bad;
  merge_session(st.session, session);
  if (!h.processes.empty()) st.process = std::move(process);
  if (total == 0 && h.tables.empty()) return;
  auto buffer = std::make_unique<char[]>(std::max<size_t>(total, 1));
  char* at = buffer.get();
  for (auto t : h.tables)
    walk_strings(t, 1, [&](std::string_view s) {
      std::memcpy(at, s.data(), s.size());
      if (s == "launch__grid_size") st.grid_size_ids.push_back(static_cast<uint32_t>(st.strings.size()));
      st.strings.emplace_back(at, s.size());
      at += s.size();
    });
  st.string_bytes.push_back(std::move(buffer));
}

// Hands kernels to the sink in report order, holding back those whose metric
// names arrive in a later block (and every kernel after them).
class Delivery {
 public:
  Delivery(FileState& st, const ReadOptions& opt, const KernelSink& sink)
      : st_(st), opt_(opt), sink_(sink), dec_(st, opt) {}

  // Returns false once the sink asked to stop.
  bool take(std::string_view bytes, uint64_t offset) {
    if (st_.deferred.empty()) {
      if (dec_.decode(bytes, offset, st_.process, false, kernel_)) return deliver();
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
    dec_.decode(d.bytes, d.offset, d.process, true, kernel_);
    return deliver();
  }

  // The sink takes the kernel by rvalue: it may move it away (then the next
  // kernel starts from an empty object) or leave it, and the next kernel is
  // decoded into the same object, reusing its buffers.
  bool deliver() {
    ++st_.kernels;
    return sink_(std::move(kernel_));
  }

  FileState& st_;
  const ReadOptions& opt_;
  const KernelSink& sink_;
  KernelDecoder dec_;
  model::Kernel kernel_;  // recycled from one kernel to the next
};

bool read_block(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report, Delivery& out) {
  uint64_t header_at = cur.pos();
  std::string_view hb = cur.item("block header");
  BlockHeader h;
  read_block_header(hb, header_at + 4, st, h);
  // Every kernel of the block copies these: a long one would be multiplied.
  if (st.process.process_name().size() + st.process.hostname().size() > kMaxProcessText)
    throw Corrupt{header_at, "block header's process name is longer than any path", false};
  if (!out.drain(false)) return false;  // the new strings may name what waiting kernels lacked
  uint64_t payload_at = cur.pos();
  auto left = cur.remaining();
  if (h.payload_size && left && *h.payload_size > *left)
    throw Corrupt{
        header_at,
        fmt::format("block payload of {} bytes runs past the end of the file ({} left)", *h.payload_size, *left), true};
  for (uint32_t i = 0; i < h.num_sources; ++i) read_source(cur, st, opt, report);
  for (uint32_t i = 0; i < h.num_results; ++i) {
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
  for (uint32_t i = 0; i < h.num_range_results; ++i) cur.item("range result");
  uint64_t used = cur.pos() - payload_at;
  if (h.payload_size && used != *h.payload_size) {
    if (used > *h.payload_size)
      throw Corrupt{header_at, fmt::format("block items use {} bytes but the header says {}", used, *h.payload_size),
                    false};
    // Items this reader does not know about: skip them, as the size allows.
    cur.skip_to(payload_at + *h.payload_size);
  }
  return true;
}

void finish_session(FileState& st, model::Report& report) {
  auto& s = st.session;
  report.session.creation_time = s.creation_time;
  report.session.host_name = std::move(s.host_name);
  report.session.os = std::move(s.os);
  report.session.cmdline = std::move(s.cmdline);
  std::ranges::move(s.versions, std::back_inserter(report.session.versions));
  std::ranges::move(s.devices, std::back_inserter(report.session.devices));
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
                             const KernelSink& sink, const std::function<void(uint64_t)>& release,
                             std::shared_ptr<const void> owner = nullptr, std::string_view backing = {}) {
  FileState st;
  st.owner = std::move(owner);
  st.backing = backing;
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
  return read_cursor(
      cur, src.name(), opt, report, sink, [&src](uint64_t upto) { src.release(upto); }, src.share(), src.bytes());
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
    if (head.empty())
      what = "unsupported compressed report: the zstd container holds no data (skippable frames only)";
    else if (head != kMagic)
      what = "unsupported compressed report: the zstd container does not hold an Nsight Compute report";
  } catch (const Corrupt& c) {
    what = c.what;
  }
  if (!what.empty()) return std::unexpected(ReadError{src.name(), 0, what, false});
  return read_cursor(cur, src.name(), opt, report, sink, [](uint64_t) {});
}

}  // namespace keet::readers::ncurep
