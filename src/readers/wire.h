// The protobuf wire format, read directly: varints, tags, fixed-width
// numbers and length-delimited payloads over a byte range, every length
// checked against what remains. The .ncu-rep reader decodes its hottest
// messages (metric results: millions in a large report) with this instead of
// generated message classes, so a metric costs no allocation and no second
// parse (shared/docs/ncu-rep-format.md; proto/ncu_report.proto).
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

namespace keet::readers::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kDelimited = 2, kFixed32 = 5 };

class Walker {
 public:
  explicit Walker(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  const char* here() const { return reinterpret_cast<const char*>(p_); }

  bool varint(uint64_t& v) {
    if (p_ != end_ && *p_ < 0x80) {  // one byte: field tags, small ids and counts
      v = *p_++;
      return true;
    }
    v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;  // bits past 64 drop, as protobuf's do
      if (b < 0x80) return true;
    }
    return false;  // more than ten bytes
  }
  // A field's number and wire type; false at a malformed tag (or field 0).
  bool tag(uint32_t& field, uint32_t& type) {
    uint64_t t;
    if (!varint(t) || t > UINT32_MAX || (t >> 3) == 0) return false;
    field = static_cast<uint32_t>(t >> 3);
    type = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool fixed32(uint32_t& v) { return fixed(&v, 4); }
  bool fixed64(uint64_t& v) { return fixed(&v, 8); }
  bool delimited(std::string_view& out) {
    uint64_t n;
    if (!varint(n) || n > left()) return false;
    out = {here(), static_cast<size_t>(n)};
    p_ += n;
    return true;
  }
  // Steps over a field of this wire type (groups, long deprecated, are not accepted).
  bool skip(uint32_t type) {
    uint64_t v;
    std::string_view s;
    switch (type) {
      case kVarint:
        return varint(v);
      case kFixed64:
        return fixed64(v);
      case kDelimited:
        return delimited(s);
      case kFixed32: {
        uint32_t w;
        return fixed32(w);
      }
      default:
        return false;
    }
  }

 private:
  bool fixed(void* v, size_t n) {
    if (left() < n) return false;
    std::memcpy(v, p_, n);  // little-endian on every target we build for
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace keet::readers::wire
