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
#include <cstring>
#include <expected>
#include <optional>

#include <fmt/format.h>

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

class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  uint64_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= data_.size(); }
  uint64_t remaining() const { return data_.size() - pos_; }

  uint32_t u32(std::string_view what) {
    if (remaining() < 4) throw Corrupt{pos_, fmt::format("truncated {} length", what), true};
    uint32_t v;
    std::memcpy(&v, data_.data() + pos_, 4);  // little-endian on every target we build for
    pos_ += 4;
    return v;
  }
  // A u32 length prefix followed by that many bytes.
  std::string_view item(std::string_view what) {
    uint64_t at = pos_;
    uint32_t n = u32(what);
    if (n > INT_MAX) throw Corrupt{at, fmt::format("{} length {} is too large", what, n), false};
    if (n > remaining())
      throw Corrupt{at, fmt::format("{} of {} bytes runs past the end of the file ({} left)", what, n, remaining()), true};
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void seek(uint64_t p) { pos_ = p; }

 private:
  std::string_view data_;
  uint64_t pos_ = 0;
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

struct FileState {
  std::vector<std::string> strings;  // cumulative, global string table
  pb::SessionDetails session;        // merged from fragments
  pb::ProcessInfo process;           // of the current block
  pb::MetricResult metric;           // reused scratch messages
  pb::RuleResult rule;
  pb::ProfileResultHeader header;
  std::string header_bytes;
  std::string scratch;               // a metric without its instance list
  int kernels = 0;
  bool warned_bad_name = false;
};

class KernelDecoder {
 public:
  KernelDecoder(FileState& st, const ReadOptions& opt, model::Report& report)
      : st_(st), opt_(opt), report_(report) {}

  model::Kernel decode(std::string_view bytes, uint64_t offset) {
    model::Kernel k;
    st_.header_bytes.clear();
    CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(INT_MAX);
    for (;;) {
      int tag_start = in.CurrentPosition();
      uint32_t tag = in.ReadTag();
      if (tag == 0) break;
      field(in, tag, tag_start, bytes, k, offset);
    }
    if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(bytes.size()))
      throw Corrupt{offset, "kernel result is not a valid protobuf message", false};
    parse(st_.header, st_.header_bytes, offset, "kernel result header");
    fill_header(k);
    return k;
  }

 private:
  void field(CodedInputStream& in, uint32_t tag, int tag_start, std::string_view bytes, model::Kernel& k,
             uint64_t offset) {
    int start = in.CurrentPosition();
    int number = WireFormatLite::GetTagFieldNumber(tag);
    bool delimited = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (delimited && (number == 13 || number == 17 || number == 19)) {
      uint32_t len = 0;
      if (!in.ReadVarint32(&len) || len > bytes.size() - in.CurrentPosition())
        throw Corrupt{offset + start, "kernel result field runs past its message", false};
      std::string_view body = bytes.substr(in.CurrentPosition(), len);
      in.Skip(static_cast<int>(len));
      if (number == 13 && opt_.metrics) metric(body, k, offset + start);
      if (number == 19 && opt_.rules) rule(body, k, offset + start);
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
    if (!st_.warned_bad_name) {
      report_.warnings.push_back(fmt::format("metric name id {} is outside the string table ({} entries)", id,
                                             st_.strings.size()));
      st_.warned_bad_name = true;
    }
    return nullptr;
  }

  void metric(std::string_view body, model::Kernel& k, uint64_t offset) {
    if (opt_.metric_filter) {
      auto id = peek_name_id(body);
      if (id && *id < st_.strings.size() && !opt_.metric_filter(st_.strings[*id])) return;
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
    if (opt_.metric_filter && !opt_.metric_filter(*name)) return;
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

  void fill_header(model::Kernel& k) {
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
    k.process_id = st_.process.process_id();
    k.process_name = st_.process.process_name();
    k.host_name = st_.process.hostname();
    if (h.has_source() && h.source().has_reference()) k.source_ref = h.source().reference();
  }

  FileState& st_;
  const ReadOptions& opt_;
  model::Report& report_;
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
  for (const auto& s : h.string_table().strings()) st.strings.push_back(s);
}

bool read_block(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report, const KernelSink& sink) {
  uint64_t header_at = cur.pos();
  std::string_view hb = cur.item("block header");
  pb::BlockHeader h;
  parse(h, hb, header_at + 4, "block header");
  merge_session(st, h);
  // Every kernel of the block copies these: a long one would be multiplied.
  if (st.process.process_name().size() + st.process.hostname().size() > kMaxProcessText)
    throw Corrupt{header_at, "block header's process name is longer than any path", false};
  uint64_t payload_at = cur.pos();
  if (h.has_payload_size() && h.payload_size() > cur.remaining())
    throw Corrupt{header_at, fmt::format("block payload of {} bytes runs past the end of the file ({} left)",
                                         h.payload_size(), cur.remaining()), true};
  for (uint32_t i = 0; i < h.num_sources(); ++i) read_source(cur, st, opt, report);
  KernelDecoder dec(st, opt, report);
  for (uint32_t i = 0; i < h.num_results(); ++i) {
    uint64_t at = cur.pos();
    std::string_view body = cur.item("kernel result");
    // An empty result is no kernel; refusing it keeps a header that claims
    // millions of them from costing a model kernel per 4 bytes of file.
    if (body.empty()) throw Corrupt{at, "kernel result is empty", false};
    model::Kernel k = dec.decode(body, at + 4);
    ++st.kernels;
    if (!sink(std::move(k))) return false;
  }
  for (uint32_t i = 0; i < h.num_range_results(); ++i) cur.item("range result");
  uint64_t used = cur.pos() - payload_at;
  if (h.has_payload_size() && used != h.payload_size()) {
    if (used > h.payload_size())
      throw Corrupt{header_at, fmt::format("block items use {} bytes but the header says {}", used, h.payload_size()), false};
    // Items this reader does not know about: skip them, as the size allows.
    cur.seek(payload_at + h.payload_size());
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

void read_all(Cursor& cur, FileState& st, const ReadOptions& opt, model::Report& report, const KernelSink& sink,
              const std::function<void(uint64_t)>& release) {
  cur.seek(kMagic.size());
  uint64_t at = cur.pos();
  pb::FileHeader fh;
  parse(fh, cur.item("file header"), at + 4, "file header");
  report.file_version = fh.version();
  while (!cur.at_end()) {
    if (!read_block(cur, st, opt, report, sink)) return;
    release(cur.pos());  // everything before this block was copied into the model
  }
}

}  // namespace

bool detect(std::string_view bytes) { return bytes.substr(0, 4) == kMagic; }

ReadResult<void> read(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                      const KernelSink& sink) {
  Cursor cur(src.bytes());
  FileState st;
  report.format = model::Format::NcuRep;
  try {
    if (!detect(src.bytes())) throw Corrupt{0, "not an Nsight Compute report (no NVR magic)", false};
    read_all(cur, st, opt, report, sink, [&src](uint64_t upto) { src.release(upto); });
  } catch (const Corrupt& c) {
    finish_session(st, report);
    if (st.kernels == 0) return std::unexpected(ReadError{src.name(), c.offset, c.what, false});
    report.partial = true;
    report.warnings.push_back(fmt::format("{}: at byte {}: {}; read {} kernel(s) before it", src.name(),
                                          c.offset, c.what, st.kernels));
    return {};
  }
  finish_session(st, report);
  return {};
}

}  // namespace keet::readers::ncurep
