#include "readers/kineto_trace.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace keet::readers {
namespace {

namespace od = simdjson::ondemand;

struct TraceFailure {
  std::string what;
};

bool is_gzip(std::string_view b) { return b.size() >= 2 && b[0] == '\x1f' && b[1] == '\x8b'; }

// Decompressed bytes, a chunk at a time.
class Input {
 public:
  virtual ~Input() = default;
  // Up to `n` bytes into `buf`; 0 at the end (a truncated stream throws).
  virtual size_t read(char* buf, size_t n) = 0;
};

// A file through zlib's gz* functions, which read a plain file as it is:
// gzip is told by its magic, never by the file name.
class FileInput final : public Input {
 public:
  explicit FileInput(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw TraceFailure{fmt::format("cannot open: {}", std::strerror(errno))};
    gzbuffer(f_, 1 << 18);
  }
  ~FileInput() override { gzclose(f_); }
  FileInput(const FileInput&) = delete;
  FileInput& operator=(const FileInput&) = delete;
  size_t read(char* buf, size_t n) override {
    int got = gzread(f_, buf, static_cast<unsigned>(std::min<size_t>(n, INT_MAX / 2)));
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    if (got < 0 || (err != Z_OK && err != Z_BUF_ERROR))
      throw TraceFailure{fmt::format("damaged gzip stream: {}", msg ? msg : "read error")};
    if (got == 0 && err == Z_BUF_ERROR) throw TraceFailure{"truncated: the gzip stream ends before its end marker"};
    return static_cast<size_t>(got);
  }

 private:
  gzFile f_;
};

// Bytes in memory, inflated when they start with gzip's magic (members one
// after another, as gzip -c a b writes them).
class MemoryInput final : public Input {
 public:
  explicit MemoryInput(std::string_view bytes) : in_(bytes), gzip_(is_gzip(bytes)) {
    if (gzip_ && inflateInit2(&z_, 15 + 16) != Z_OK) throw TraceFailure{"zlib: out of memory"};
  }
  ~MemoryInput() override {
    if (gzip_) inflateEnd(&z_);
  }
  MemoryInput(const MemoryInput&) = delete;
  MemoryInput& operator=(const MemoryInput&) = delete;
  size_t read(char* buf, size_t n) override {
    if (!gzip_) {
      size_t k = std::min(n, in_.size() - pos_);
      std::memcpy(buf, in_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    size_t out = 0;
    while (out < n) {
      if (ended_) {  // another member follows, or the end
        if (pos_ >= in_.size() || !is_gzip(in_.substr(pos_))) break;
        inflateReset(&z_);
        ended_ = false;
      }
      if (pos_ >= in_.size()) throw TraceFailure{"truncated: the gzip stream ends before its end marker"};
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data() + pos_));
      z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.size() - pos_, 1u << 30));
      z_.next_out = reinterpret_cast<Bytef*>(buf + out);
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - out, 1u << 30));
      auto before_in = z_.avail_in, before_out = z_.avail_out;
      int rc = inflate(&z_, Z_NO_FLUSH);
      pos_ += before_in - z_.avail_in;
      out += before_out - z_.avail_out;
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc != Z_OK) {
        if (rc == Z_BUF_ERROR && pos_ >= in_.size())
          throw TraceFailure{"truncated: the gzip stream ends before its end marker"};
        throw TraceFailure{fmt::format("damaged gzip stream: {}", z_.msg ? z_.msg : "inflate failed")};
      }
    }
    return out;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool gzip_ = false, ended_ = false;
  z_stream z_{};
};

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Microseconds as Kineto writes them (1695835572943623, 4458676522690.655,
// "1.5e3") to nanoseconds. Decimal digits are read exactly: a double holds
// epoch microseconds to only about a quarter of a microsecond.
std::optional<int64_t> us_to_ns(std::string_view t) {
  while (!t.empty() && is_ws(t.back())) t.remove_suffix(1);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
  if (t.empty()) return std::nullopt;
  bool neg = t.front() == '-';
  size_t i = neg ? 1 : 0;
  int64_t whole = 0;
  size_t digits = 0;
  constexpr int64_t kMaxUs = 9'000'000'000'000'000;  // 9e15 us: 9e18 ns fits int64 (year 2255)
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > kMaxUs) return std::nullopt;
    whole = whole * 10 + (t[i] - '0');
  }
  if (whole > kMaxUs) return std::nullopt;
  // Nanoseconds are the first three decimals; the fourth rounds.
  int64_t frac = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    static constexpr int kScale[] = {100, 10, 1};
    for (size_t k = 0; ++i < t.size() && t[i] >= '0' && t[i] <= '9'; ++k, ++digits) {
      if (k < 3) frac += (t[i] - '0') * kScale[k];
      if (k == 3) round_up = t[i] >= '5';
    }
  }
  if (digits == 0) return std::nullopt;
  if (i < t.size()) {  // an exponent: rare enough for a double
    char* end = nullptr;
    std::string s(t);
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !(v > -9e15 && v < 9e15)) return std::nullopt;
    return static_cast<int64_t>(std::llround(v * 1000));
  }
  int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
  return neg ? -ns : ns;
}

// CUPTI's memory kinds as Kineto names them ("Pageable", "Device Static").
model::HostMemory memory_kind(std::string_view k) {
  using model::HostMemory;
  if (k.starts_with("Pageable")) return HostMemory::Pageable;
  if (k.starts_with("Pinned")) return HostMemory::Pinned;
  if (k.starts_with("Device")) return HostMemory::Device;
  if (k.starts_with("Array")) return HostMemory::Array;
  if (k.starts_with("Managed")) return HostMemory::Managed;
  return HostMemory::Unknown;
}

// CUPTI's copy kinds, in ENUM_CUDA_MEMCPY_OPER's order and words (nsys's
// export), so both readers name directions alike.
struct CopyKind {
  std::string_view code, label;
  int id;
};
constexpr std::array<CopyKind, 10> kKinetoCopyKinds = {{{"HtoD", "Host-to-Device", 1},
                                                        {"DtoH", "Device-to-Host", 2},
                                                        {"HtoA", "Host-to-Array", 3},
                                                        {"AtoH", "Array-to-Host", 4},
                                                        {"AtoA", "Array-to-Array", 5},
                                                        {"AtoD", "Array-to-Device", 6},
                                                        {"DtoA", "Device-to-Array", 7},
                                                        {"DtoD", "Device-to-Device", 8},
                                                        {"HtoH", "Host-to-Host", 9},
                                                        {"PtoP", "Peer-to-Peer", 10}}};

const CopyKind* copy_kind(std::string_view code) {
  for (const auto& k : kKinetoCopyKinds)
    if (k.code == code) return &k;
  return nullptr;
}

enum class Kind : uint8_t { Kernel, Copy, Set };

// One GPU operation, kept until every event is read: the sink wants them in
// start order, after the span and each device's range.
struct GpuOp {
  int64_t start = 0, end = 0;
  uint64_t correlation = 0, bytes = 0;
  uint32_t name = 0;  // interned: the kernel's name, a copy's direction label
  uint32_t short_name = 0;
  uint32_t device = 0, stream = 0;
  std::array<uint32_t, 3> grid{}, block{};
  Kind kind = Kind::Kernel;
  bool has_correlation = false;
  int8_t copy_kind = -1;
  model::HostMemory src = model::HostMemory::Unknown, dst = model::HostMemory::Unknown;
};

struct Call {
  uint64_t correlation = 0;
  int64_t start = 0;
  uint32_t name = 0;
};

struct Range {
  int64_t start = 0, end = 0;
  uint32_t name = 0;
};

// The fields of one event that any mapping uses.
struct Event {
  std::string_view ph, cat, name, tid_text;
  std::optional<int64_t> pid, tid, ts, dur, id;
  std::optional<int64_t> device, stream, correlation;
  std::optional<uint64_t> bytes;
  std::array<uint32_t, 3> grid{}, block{};
  std::string_view kind_text;
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_sync_call(std::string_view n) {
  for (std::string_view prefix : {"cuda", "hip"})
    if (n.starts_with(prefix)) {
      auto rest = n.substr(prefix.size());
      return rest.starts_with("DeviceSynchronize") || rest.starts_with("StreamSynchronize") ||
             rest.starts_with("ThreadSynchronize");
    }
  return false;
}

class TraceReader {
 public:
  TraceReader(Input& in, std::string path, model::TimelineSink& sink, const KinetoLimits& limits)
      : in_(in), sink_(sink), limits_(limits) {
    meta_.path = std::move(path);
    meta_.source = model::TimelineSource::Kineto;
    meta_.schema = "Kineto";
    limits_.max_value_bytes = std::max<size_t>(limits_.max_value_bytes, 64);
    buf_.resize(std::min(limits_.max_value_bytes, std::max<size_t>(limits_.batch_bytes * 2, 4096)));
  }

  void read() {
    walk_top();
    emit();
  }

 private:
  static constexpr size_t npos = std::string::npos;

  // --- the byte stream and the scanner of the top level --------------------

  // Reads more bytes; what the scanner still needs (the batch of events, the
  // value being scanned) moves to the front first. False at the end.
  bool refill() {
    if (eof_) return false;
    size_t keep = batch_n_ ? batch_from_ : (value_from_ != npos ? value_from_ : pos_);
    if (keep == 0 && end_ == buf_.size() && batch_n_) {  // full of whole events: hand them on first
      flush_batch();
      keep = value_from_ != npos ? value_from_ : pos_;
    }
    if (keep > 0) {
      std::memmove(buf_.data(), buf_.data() + keep, end_ - keep);
      end_ -= keep, pos_ -= keep, offset_ += keep;
      if (value_from_ != npos) value_from_ -= keep;
      if (batch_n_) batch_from_ -= keep, batch_end_ -= keep;
    }
    if (end_ == buf_.size()) {
      if (buf_.size() >= limits_.max_value_bytes)
        throw TraceFailure{fmt::format("at byte {}: one event or top-level member longer than {} bytes", offset_ + pos_,
                                       limits_.max_value_bytes)};
      buf_.resize(std::min(buf_.size() * 2, limits_.max_value_bytes));
    }
    size_t got = in_.read(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) eof_ = true;
    end_ += got;
    return got > 0;
  }

  // The next byte that is not whitespace (pos_ on it), or -1 at the end.
  int next() {
    for (;;) {
      while (pos_ < end_ && is_ws(buf_[pos_])) ++pos_;
      if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
      if (!refill()) return -1;
    }
  }

  [[noreturn]] void truncated(std::string_view inside) {
    throw TraceFailure{fmt::format("truncated: the trace ends inside {} (after {} bytes)", inside, offset_ + end_)};
  }

  // pos_ on a '"': past the closing quote. Quotes are found with memchr,
  // escapes skipped; what the string holds is simdjson's to check.
  void skip_string() {
    ++pos_;
    for (;;) {
      const char* p = buf_.data() + pos_;
      const char* e = buf_.data() + end_;
      const char* q = static_cast<const char*>(std::memchr(p, '"', static_cast<size_t>(e - p)));
      const char* b = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>((q ? q : e) - p)));
      if (b) {
        if (b + 1 < e) {
          pos_ = static_cast<size_t>(b + 2 - buf_.data());
          continue;
        }
        pos_ = static_cast<size_t>(b - buf_.data());  // the escape's second byte is still to come
      } else if (q) {
        pos_ = static_cast<size_t>(q + 1 - buf_.data());
        return;
      } else {
        pos_ = end_;
      }
      if (!refill()) truncated("a string");
    }
  }

  // pos_ on a value's first byte: past its end. Structure only (strings,
  // nesting); values are checked where they are parsed.
  void skip_value() {
    int depth = 0;
    bool scalar = false;
    for (;;) {
      if (pos_ == end_ && !refill()) {
        if (scalar && depth == 0) return;
        truncated(depth > 0 ? "an object or array" : "a value");
      }
      char c = buf_[pos_];
      if (c == '"') {
        skip_string();
        if (depth == 0) return;
        continue;
      }
      if (c == '{' || c == '[') {
        if (scalar && depth == 0) return;
        if (++depth > 512) throw TraceFailure{fmt::format("at byte {}: nested more than 512 deep", offset_ + pos_)};
        ++pos_;
        continue;
      }
      if (c == '}' || c == ']') {
        if (depth == 0) return;
        ++pos_;
        if (--depth == 0) return;
        continue;
      }
      if (depth == 0) {
        if (c == ',' || is_ws(c)) return;
        scalar = true;
      }
      ++pos_;
    }
  }

  void expect(int c, char want, std::string_view where) {
    if (c == -1) truncated(where);
    if (c != want)
      throw TraceFailure{fmt::format("at byte {}: expected '{}' in {}, found '{}'", offset_ + pos_, want, where,
                                     static_cast<char>(c))};
  }

  // The top-level object: traceEvents streamed, the other members kept
  // whole (they are small) and the ones that describe the run parsed.
  void walk_top() {
    int c = next();
    if (c == 0xEF) {  // a UTF-8 byte order mark
      pos_ = std::min(end_, pos_ + 3);
      c = next();
    }
    if (c == -1) throw TraceFailure{"empty file: not a PyTorch profiler trace"};
    if (c == '[') {  // the Chrome trace format's bare array of events
      read_events();
      finish_top();
      return;
    }
    if (c != '{')
      throw TraceFailure{"not a PyTorch profiler trace: a Kineto trace is a JSON object with a \"traceEvents\" array"};
    ++pos_;
    c = next();
    if (c == '}') {
      ++pos_;
    } else {
      for (;;) {
        expect(c, '"', "the trace's top-level object");
        value_from_ = pos_;
        skip_string();
        std::string key(buf_.data() + value_from_ + 1, pos_ - value_from_ - 2);
        value_from_ = npos;
        expect(next(), ':', "the trace's top-level object");
        ++pos_;
        c = next();
        if (c == -1) truncated("the trace's top-level object");
        if (key == "traceEvents") {
          expect(c, '[', "traceEvents");
          read_events();
        } else {
          value_from_ = pos_;
          skip_value();
          member(key, std::string_view(buf_.data() + value_from_, pos_ - value_from_));
          value_from_ = npos;
        }
        c = next();
        if (c == '}') {
          ++pos_;
          break;
        }
        expect(c, ',', "the trace's top-level object");
        ++pos_;
        c = next();
      }
    }
    finish_top();
  }

  void finish_top() {
    if (int c = next(); c != -1)
      throw TraceFailure{
          fmt::format("at byte {}: '{}' after the end of the trace's JSON", offset_ + pos_, static_cast<char>(c))};
    if (!saw_events_) throw TraceFailure{"not a PyTorch profiler trace: no \"traceEvents\" array"};
  }

  // pos_ on traceEvents' '['. Whole events gather in the buffer and go to
  // simdjson in batches of limits_.batch_bytes.
  void read_events() {
    saw_events_ = true;
    ++pos_;
    bool first = true;
    for (;;) {
      int c = next();
      if (c == -1) truncated("traceEvents");
      if (c == ']') {
        if (batch_n_) flush_batch();
        ++pos_;
        return;
      }
      if (!first) {
        expect(c, ',', "traceEvents");
        ++pos_;
        if (next() == -1) truncated("traceEvents");
      }
      first = false;
      value_from_ = pos_;
      skip_value();
      if (batch_n_++ == 0) batch_from_ = value_from_;
      batch_end_ = pos_;
      value_from_ = npos;
      if (batch_end_ - batch_from_ >= limits_.batch_bytes) flush_batch();
    }
  }

  // --- events, through simdjson ------------------------------------------------

  void flush_batch() {
    size_t n = batch_end_ - batch_from_;
    doc_.resize(n + 2 + simdjson::SIMDJSON_PADDING);
    doc_[0] = '[';
    std::memcpy(doc_.data() + 1, buf_.data() + batch_from_, n);
    doc_[n + 1] = ']';
    std::memset(doc_.data() + n + 2, ' ', simdjson::SIMDJSON_PADDING);
    uint64_t first = events_;
    batch_n_ = 0;
    od::document doc;
    check(parser_.iterate(doc_.data(), n + 2, doc_.size()).get(doc), first);
    od::array events;
    check(doc.get_array().get(events), first);
    for (auto item : events) {
      od::value v;
      check(item.get(v), events_);
      od::object obj;
      if (auto e = v.get_object().get(obj)) {
        check_fatal(e, events_);
        ++odd_events_;
        ++events_;
        continue;
      }
      Event ev;
      read_event(obj, ev);
      take(ev);
      ++events_;
    }
  }

  void check(simdjson::error_code e, uint64_t index) {
    if (e) throw TraceFailure{fmt::format("traceEvents[{}]: malformed JSON ({})", index, simdjson::error_message(e))};
  }
  // A value of another type than expected is left aside; a broken document is not.
  void check_fatal(simdjson::error_code e, uint64_t index) {
    if (e && e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_OUT_OF_RANGE && e != simdjson::NUMBER_ERROR)
      check(e, index);
  }

  std::optional<int64_t> integer(od::value v) {
    od::json_type t{};  // set by get(); {} keeps -Wmaybe-uninitialized quiet
    if (auto e = v.type().get(t)) return check_fatal(e, events_), std::nullopt;
    if (t == od::json_type::number) {
      int64_t i;
      if (!v.get_int64().get(i)) return i;
      double d;
      if (!v.get_double().get(d) && d > -9.2e18 && d < 9.2e18) return static_cast<int64_t>(d);
      return std::nullopt;
    }
    if (t == od::json_type::string) {  // "256", as HIP traces write some arguments
      std::string_view s;
      if (v.get_string().get(s)) return std::nullopt;
      int64_t out = 0;
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
      for (char c : s) out = out * 10 + (c - '0');
      return out;
    }
    return std::nullopt;
  }

  std::optional<int64_t> time(od::value v) {
    // The number's own digits (raw_json_token), read exactly by us_to_ns.
    return us_to_ns(v.raw_json_token());
  }

  std::string_view text(od::value v) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) check_fatal(e, events_);
    return s;
  }

  void dims(od::value v, std::array<uint32_t, 3>& out) {
    od::array a;
    if (auto e = v.get_array().get(a)) return check_fatal(e, events_);
    size_t i = 0;
    for (auto x : a) {
      od::value xv;
      check(x.get(xv), events_);
      auto n = integer(xv);
      if (i < 3 && n && *n >= 0 && *n <= UINT32_MAX) out[i] = static_cast<uint32_t>(*n);
      ++i;
    }
  }

  void read_event(od::object obj, Event& ev) {
    for (auto field : obj) {
      std::string_view key;
      check(field.unescaped_key().get(key), events_);
      od::value v;
      check(field.value().get(v), events_);
      if (key == "ph") {
        ev.ph = text(v);
      } else if (key == "cat") {
        ev.cat = text(v);
      } else if (key == "name") {
        ev.name = text(v);
      } else if (key == "ts") {
        ev.ts = time(v);
      } else if (key == "dur") {
        ev.dur = time(v);
      } else if (key == "pid") {
        ev.pid = integer(v);
      } else if (key == "tid") {
        od::json_type t{};  // set by get(); {} keeps -Wmaybe-uninitialized quiet
        check(v.type().get(t), events_);
        if (t == od::json_type::string)
          ev.tid_text = text(v);
        else
          ev.tid = integer(v);
      } else if (key == "id") {
        ev.id = integer(v);
      } else if (key == "args") {
        od::object args;
        if (auto e = v.get_object().get(args)) {
          check_fatal(e, events_);
          continue;
        }
        for (auto arg : args) {
          std::string_view k;
          check(arg.unescaped_key().get(k), events_);
          od::value a;
          check(arg.value().get(a), events_);
          if (k == "device")
            ev.device = integer(a);
          else if (k == "stream")
            ev.stream = integer(a);
          else if (k == "correlation")
            ev.correlation = integer(a);
          else if (k == "bytes") {
            if (auto b = integer(a); b && *b >= 0) ev.bytes = static_cast<uint64_t>(*b);
          } else if (k == "grid")
            dims(a, ev.grid);
          else if (k == "block")
            dims(a, ev.block);
          else if (k == "kind") {
            od::json_type t{};  // set by get(); {} keeps -Wmaybe-uninitialized quiet
            check(a.type().get(t), events_);
            if (t == od::json_type::string) ev.kind_text = text(a);
          }
        }
      }
    }
  }

  uint32_t intern(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    auto id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(s);
    ids_.emplace(names_.back(), id);
    return id;
  }

  void count_record() {
    if (++records_ > limits_.max_events)
      throw TraceFailure{fmt::format("more than {} GPU operations, calls and ranges: a trace this large is not read",
                                     limits_.max_events)};
  }

  static uint32_t small(std::optional<int64_t> v) {
    return v && *v >= 0 && *v <= UINT32_MAX ? static_cast<uint32_t>(*v) : 0;
  }

  // A GPU event's device and stream: its args, else the lane it is drawn
  // in (pid is the device, tid the stream: 7, or "stream 7" in 2021 traces).
  void place(const Event& ev, GpuOp& op) {
    op.device = small(ev.device ? ev.device : ev.pid);
    std::optional<int64_t> stream = ev.stream ? ev.stream : ev.tid;
    if (!stream && !ev.tid_text.empty()) {
      auto digits = ev.tid_text.substr(std::min(ev.tid_text.size(), ev.tid_text.find_first_of("0123456789")));
      int64_t s = 0;
      size_t i = 0;
      for (; i < digits.size() && i < 9 && digits[i] >= '0' && digits[i] <= '9'; ++i) s = s * 10 + (digits[i] - '0');
      if (i > 0) stream = s;
    }
    op.stream = small(stream);
    if (ev.correlation) op.correlation = static_cast<uint64_t>(*ev.correlation), op.has_correlation = true;
  }

  void take(const Event& ev) {
    if (ev.ph == "s" && ev.cat == "ac2g" && ev.id && ev.ts) {  // a launch's flow, from its runtime call
      // Kineto writes it right after the call it starts from: then it says
      // nothing the call did not, and is not kept.
      if (!calls_.empty() && calls_.back().correlation == static_cast<uint64_t>(*ev.id)) return;
      count_record();
      flows_.push_back({static_cast<uint64_t>(*ev.id), *ev.ts, 0});
      return;
    }
    if (ev.ph != "X") return;
    const std::string_view cat = ev.cat;
    if (iequals(cat, "gpu_user_annotation") && ev.name.starts_with("ProfilerStep#")) {
      take_gpu_step(ev);
      return;
    }
    bool kernel = iequals(cat, "kernel"), copy = iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy"),
         set = iequals(cat, "gpu_memset") || iequals(cat, "memset"),
         api = iequals(cat, "cuda_runtime") || iequals(cat, "cuda_driver") || iequals(cat, "runtime"),
         range = iequals(cat, "user_annotation") ||
                 (ev.name.starts_with("ProfilerStep#") && !iequals(cat, "gpu_user_annotation"));
    if (!(kernel || copy || set || api || range)) return;
    if (!ev.ts || !ev.dur || *ev.dur < 0) {
      ++skipped_;
      return;
    }
    int64_t start = *ev.ts, end = *ev.ts + *ev.dur;
    count_record();
    if (api) {
      uint32_t name = intern(ev.name);
      if (name >= api_time_.size()) api_time_.resize(name + 1);
      api_time_[name].add(end - start);
      ++api_events_;
      if (ev.correlation) calls_.push_back({static_cast<uint64_t>(*ev.correlation), start, name});
      if (is_sync_call(ev.name)) syncs_.push_back({start, end, 0, small(ev.tid), name});
      return;
    }
    if (range) {
      ranges_.push_back({start, end, intern(ev.name.empty() ? std::string_view("(unnamed)") : ev.name)});
      return;
    }
    GpuOp op{.start = start, .end = end};
    place(ev, op);
    if (kernel) {
      op.kind = Kind::Kernel;
      op.name = intern(ev.name);
      op.short_name = short_name_of(op.name);
      op.grid = ev.grid, op.block = ev.block;
      ++kernels_;
    } else if (copy) {
      op.kind = Kind::Copy;
      op.bytes = ev.bytes.value_or(0);
      read_copy_name(ev, op);
      ++copies_;
    } else {
      op.kind = Kind::Set;
      op.bytes = ev.bytes.value_or(0);
      auto open = ev.name.find('(');
      if (open != std::string_view::npos) op.dst = memory_kind(ev.name.substr(open + 1));
      ++memsets_;
    }
    ops_.push_back(op);
  }

  // The GPU side of a profiler step: kept (a few per trace) to measure the
  // GPU's busy time inside it once every operation is known.
  void take_gpu_step(const Event& ev) {
    if (!ev.ts || !ev.dur || *ev.dur < 0) {
      ++skipped_;
      return;
    }
    count_record();
    if (gpu_steps_.size() < kMaxSteps) gpu_steps_.push_back({*ev.ts, *ev.ts + *ev.dur, intern(ev.name)});
  }

  // Each step window with the time any GPU operation ran inside it: the
  // operations' union (ops_ is in start order) cut to the window.
  void measure_steps() {
    std::vector<std::pair<int64_t, int64_t>> busy;  // disjoint, in order
    for (const auto& op : ops_) {
      if (op.end < op.start) continue;
      if (busy.empty() || op.start > busy.back().second)
        busy.emplace_back(op.start, op.end);
      else
        busy.back().second = std::max(busy.back().second, op.end);
    }
    std::ranges::sort(gpu_steps_, {}, &Range::start);
    for (const auto& w : gpu_steps_) {
      int64_t in = 0;
      auto it = std::ranges::upper_bound(busy, w.start, {}, &std::pair<int64_t, int64_t>::second);
      for (; it != busy.end() && it->first < w.end; ++it)
        in += std::min(it->second, w.end) - std::max(it->first, w.start);
      meta_.steps.push_back({names_[w.name], w.start, w.end, in});
    }
  }

  // "Memcpy HtoD (Pageable -> Device)": the direction, then where it reads
  // and writes; a HIP trace's args.kind ("DtoH") when the name lacks it.
  void read_copy_name(const Event& ev, GpuOp& op) {
    std::string_view n = ev.name, code;
    if (n.starts_with("Memcpy ")) code = n.substr(7, std::min(n.size(), n.find(' ', 7)) - 7);
    const CopyKind* k = copy_kind(code);
    if (!k) k = copy_kind(ev.kind_text);
    op.copy_kind = static_cast<int8_t>(k ? k->id : -1);
    op.name = intern(k ? k->label : std::string_view("Unknown"));
    auto open = n.find('('), arrow = n.find("->");
    if (open == std::string_view::npos || arrow == std::string_view::npos || arrow < open) return;
    op.src = memory_kind(n.substr(open + 1));
    auto to = n.substr(arrow + 2);
    while (!to.empty() && to.front() == ' ') to.remove_prefix(1);
    op.dst = memory_kind(to);
  }

  uint32_t short_name_of(uint32_t name) {
    if (name < short_.size() && short_[name] != UINT32_MAX) return short_[name];
    if (name >= short_.size()) short_.resize(name + 1, UINT32_MAX);
    std::string s = kernel_function_name(names_[name]);
    uint32_t id = intern(s);
    if (name >= short_.size()) short_.resize(name + 1, UINT32_MAX);
    return short_[name] = id;
  }

  // A top-level member other than traceEvents.
  void member(const std::string& key, std::string_view json) {
    if (key == "schemaVersion") {
      std::string v(json);
      while (!v.empty() && is_ws(v.back())) v.pop_back();
      if (v.size() <= 32) meta_.schema_version = v;
      return;
    }
    if (key != "deviceProperties" && key != "distributedInfo") return;
    simdjson::padded_string padded(json);
    od::parser p;
    od::document doc;
    auto bad = [&](simdjson::error_code e) {
      throw TraceFailure{fmt::format("{}: malformed JSON ({})", key, simdjson::error_message(e))};
    };
    if (auto e = p.iterate(padded).get(doc)) bad(e);
    if (key == "deviceProperties") {
      od::array gpus;
      if (doc.get_array().get(gpus)) return;  // not a list: no GPU names
      for (auto g : gpus) {
        od::object o;
        if (auto e = g.get_object().get(o)) {
          if (e != simdjson::INCORRECT_TYPE) bad(e);
          continue;
        }
        model::TimelineMeta::Gpu gpu;
        for (auto f : o) {
          std::string_view k;
          if (auto e = f.unescaped_key().get(k)) bad(e);
          od::value v;
          if (auto e = f.value().get(v)) bad(e);
          if (k == "id") {
            int64_t id;
            if (!v.get_int64().get(id) && id >= 0) gpu.id = static_cast<uint64_t>(id);
          } else if (k == "name") {
            std::string_view name;
            if (!v.get_string().get(name)) gpu.name = std::string(name.substr(0, 256));
          }
        }
        if (gpu.name.empty()) gpu.name = "(no name in the trace)";
        if (meta_.gpus.size() < 1024) meta_.gpus.push_back(std::move(gpu));
      }
      return;
    }
    od::object info;
    if (doc.get_object().get(info)) return;
    auto& d = meta_.distributed;
    for (auto f : info) {
      std::string_view k;
      if (auto e = f.unescaped_key().get(k)) bad(e);
      od::value v;
      if (auto e = f.value().get(v)) bad(e);
      int64_t n;
      std::string_view s;
      if (k == "rank" && !v.get_int64().get(n)) d.rank = n;
      if (k == "world_size" && !v.get_int64().get(n)) d.world_size = n;
      if (k == "backend" && !v.get_string().get(s)) d.backend = std::string(s.substr(0, 64));
      if (k == "nccl_version" && !v.get_string().get(s)) d.nccl_version = std::string(s.substr(0, 64));
    }
  }

  // --- to the sink ------------------------------------------------------------

  void emit() {
    std::ranges::sort(
        ops_, [](const GpuOp& a, const GpuOp& b) { return a.start != b.start ? a.start < b.start : a.end < b.end; });
    std::ranges::sort(calls_, {}, &Call::correlation);
    std::ranges::sort(flows_, {}, &Call::correlation);
    std::ranges::sort(ranges_, {}, &Range::start);
    int64_t lo = 0, hi = 0;
    std::vector<model::TimelineMeta::GpuRange> per_device;
    for (const auto& op : ops_) {
      if (op.end < op.start) continue;
      lo = per_device.empty() ? op.start : std::min(lo, op.start);
      hi = per_device.empty() ? op.end : std::max(hi, op.end);
      auto it = std::ranges::find(per_device, uint64_t{op.device}, &model::TimelineMeta::GpuRange::device);
      if (it == per_device.end()) {
        if (per_device.size() >= 4096) continue;
        per_device.push_back({0, op.device, op.start, op.end});
      } else {
        it->start = std::min(it->start, op.start), it->end = std::max(it->end, op.end);
      }
    }
    std::ranges::sort(per_device, {}, &model::TimelineMeta::GpuRange::device);
    meta_.gpu_ranges = std::move(per_device);
    measure_steps();
    if (kernels_ == 0) meta_.absent_tables.emplace_back("CUPTI_ACTIVITY_KIND_KERNEL");
    if (copies_ == 0) meta_.absent_tables.emplace_back("CUPTI_ACTIVITY_KIND_MEMCPY");
    if (memsets_ == 0) meta_.absent_tables.emplace_back("CUPTI_ACTIVITY_KIND_MEMSET");
    if (api_events_ == 0) meta_.absent_tables.emplace_back("CUPTI_ACTIVITY_KIND_RUNTIME");
    if (ranges_.empty()) meta_.absent_tables.emplace_back("NVTX_EVENTS");
    if (skipped_)
      meta_.warnings.push_back(
          fmt::format("{} GPU, runtime or annotation event(s) without a valid ts and dur left out", skipped_));
    if (odd_events_)
      meta_.warnings.push_back(fmt::format("{} traceEvents entries that are no object left out", odd_events_));
    sink_.begin(meta_, lo, hi);
    for (const auto& r : ranges_) sink_.nvtx({r.start, r.end, names_[r.name]});
    for (const auto& op : ops_) emit_op(op);
    for (const auto& s : syncs_) sink_.sync_call({s.start, s.end, 0, s.tid, names_[s.name]});
    for (uint32_t id = 0; id < api_time_.size(); ++id)
      if (api_time_[id].count > 0) sink_.api_calls({.name = names_[id], .time = api_time_[id]});
  }

  // The call that issued an operation, by correlation id: the runtime or
  // driver call, else the start of its ac2g flow (a trace without the calls).
  const Call* call_of(const GpuOp& op, const std::vector<Call>& calls) const {
    if (!op.has_correlation) return nullptr;
    auto it = std::ranges::lower_bound(calls, op.correlation, {}, &Call::correlation);
    return it != calls.end() && it->correlation == op.correlation ? &*it : nullptr;
  }

  void emit_op(const GpuOp& op) {
    const Call* call = call_of(op, calls_);
    std::optional<int64_t> api_start;
    if (call)
      api_start = call->start;
    else if (const Call* flow = call_of(op, flows_))
      api_start = flow->start;
    if (op.kind == Kind::Kernel) {
      model::KernelLaunch k{.start = op.start, .end = op.end, .device = op.device, .stream = op.stream, .pid = 0};
      k.name_key = op.name;
      k.name = names_[op.name];
      k.short_name = names_[op.short_name];
      k.grid = {op.grid[0], op.grid[1], op.grid[2]};
      k.block = {op.block[0], op.block[1], op.block[2]};
      k.api_start = api_start;
      sink_.kernel(k);
      return;
    }
    model::MemoryOp m{.kind = op.kind == Kind::Copy ? model::MemoryKind::Copy : model::MemoryKind::Set,
                      .start = op.start,
                      .end = op.end,
                      .device = op.device,
                      .stream = op.stream,
                      .bytes = op.bytes,
                      .direction = op.kind == Kind::Copy ? std::string_view(names_[op.name]) : std::string_view(),
                      .pid = 0,
                      .copy_kind = op.copy_kind,
                      .src = op.src,
                      .dst = op.dst,
                      .same_device = op.copy_kind == 8};
    if (call) m.api = names_[call->name];
    m.api_start = api_start;
    sink_.memory(m);
  }

  struct Sync {
    int64_t start = 0, end = 0;
    uint32_t pid = 0, tid = 0, name = 0;
  };

  Input& in_;
  model::TimelineSink& sink_;
  KinetoLimits limits_;
  model::TimelineMeta meta_;

  std::string buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t offset_ = 0;  // bytes dropped from the buffer's front
  bool eof_ = false;
  size_t value_from_ = npos;                             // start of the value being scanned
  size_t batch_from_ = 0, batch_end_ = 0, batch_n_ = 0;  // whole events not yet parsed
  bool saw_events_ = false;

  od::parser parser_;
  std::vector<char> doc_;
  uint64_t events_ = 0, records_ = 0, skipped_ = 0, odd_events_ = 0;
  uint64_t kernels_ = 0, copies_ = 0, memsets_ = 0, api_events_ = 0;

  std::deque<std::string> names_;
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<uint32_t> short_;
  std::vector<GpuOp> ops_;
  std::vector<Call> calls_, flows_;
  std::vector<Range> ranges_, gpu_steps_;
  static constexpr size_t kMaxSteps = 100'000;  // step windows kept; more are counted, not measured
  std::vector<Sync> syncs_;
  std::vector<model::DurationStats> api_time_;
};

ReadResult<void> run(Input* in, const std::string& name, model::TimelineSink& sink, const KinetoLimits& limits) {
  try {
    TraceReader(*in, name, sink, limits).read();
  } catch (const TraceFailure& f) {
    return std::unexpected(ReadError{.file = name, .what = f.what});
  } catch (const std::bad_alloc&) {
    return std::unexpected(ReadError{.file = name, .what = "out of memory reading the trace"});
  }
  return {};
}

}  // namespace

std::string kernel_function_name(std::string_view n) {
  // Without the trailing parameter list and template arguments (matched
  // from the end: "(anonymous namespace)" comes earlier), then what follows
  // the last scope or the return type.
  auto strip_group = [](std::string_view h, char open, char close) {
    if (!h.ends_with(close)) return h;
    int depth = 0;
    for (size_t i = h.size(); i-- > 0;) {
      if (h[i] == close) ++depth;
      if (h[i] == open && --depth == 0) return h.substr(0, i);
    }
    return h;
  };
  std::string_view head = strip_group(strip_group(n, '(', ')'), '<', '>');
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    char c = head[i];
    if (c == '<' || c == '(' || c == '{') ++depth;
    if ((c == '>' || c == ')' || c == '}') && depth > 0) --depth;
    if (depth == 0 && c == ' ') from = i + 1;
    if (depth == 0 && c == ':' && i + 1 < head.size() && head[i + 1] == ':') from = i + 2;
  }
  head = head.substr(std::min(from, head.size()));
  return head.empty() ? std::string(n.substr(0, 256)) : std::string(head);
}

bool looks_like_kineto(std::string_view head) {
  std::string inflated;
  if (is_gzip(head)) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) return false;
    inflated.resize(65536);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(head.data()));
    z.avail_in = static_cast<uInt>(std::min<size_t>(head.size(), 1u << 30));
    z.next_out = reinterpret_cast<Bytef*>(inflated.data());
    z.avail_out = static_cast<uInt>(inflated.size());
    inflate(&z, Z_NO_FLUSH);
    inflated.resize(inflated.size() - z.avail_out);
    inflateEnd(&z);
    head = inflated;
  }
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  head = head.substr(0, 65536);
  return head.find("\"traceEvents\"") != std::string_view::npos ||
         head.find("\"schemaVersion\"") != std::string_view::npos;
}

namespace {

// The trace from `source` (a path, or bytes in memory): an input that cannot
// be opened is the read's error, named `name`.
template <class KinetoInput, class Source>
ReadResult<void> read_kineto_input(const Source& source, const std::string& name, model::TimelineSink& sink,
                                   const KinetoLimits& limits) {
  std::unique_ptr<Input> in;
  try {
    in = std::make_unique<KinetoInput>(source);
  } catch (const TraceFailure& f) {
    return std::unexpected(ReadError{.file = name, .what = f.what});
  }
  return run(in.get(), name, sink, limits);
}

}  // namespace

ReadResult<void> read_kineto_trace(const std::string& path, model::TimelineSink& sink, const KinetoLimits& limits) {
  return read_kineto_input<FileInput>(path, path, sink, limits);
}

ReadResult<void> read_kineto_trace_bytes(std::string_view bytes, const std::string& name, model::TimelineSink& sink,
                                         const KinetoLimits& limits) {
  return read_kineto_input<MemoryInput>(bytes, name, sink, limits);
}

}  // namespace keet::readers
