#include "util/json.h"

#include "util/bytes.h"

#include <charconv>
#include <ostream>

namespace keet {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// nlohmann's own serializer, started at the element's depth: the bytes of
// the text dumped at depth 0 with every line after the first shifted right by
// indent * depth, in one pass (no second pass inserting the padding).
std::string json_text_at(const nlohmann::json& j, int indent, int depth) {
  if (indent < 0 || depth <= 0) return json_text(j, indent);
  std::string out;
  nlohmann::detail::serializer<nlohmann::json> s(nlohmann::detail::output_adapter<char, std::string>(out), ' ',
                                                 nlohmann::json::error_handler_t::replace);
  s.dump(j, true, false, static_cast<unsigned int>(indent), static_cast<unsigned int>(indent * depth));
  return out;
}

namespace {
std::string newline_and_pad(int indent, int depth) {
  if (indent < 0) return "";
  return "\n" + std::string(static_cast<size_t>(indent * depth), ' ');
}
}  // namespace

void JsonArrayStream::separator() { out_ << (count_++ == 0 ? "[" : ",") << newline_and_pad(indent_, depth_ + 1); }

void JsonArrayStream::add(const nlohmann::json& element) {
  separator();
  out_ << json_text_at(element, indent_, depth_ + 1);
}

void JsonArrayStream::add(const std::function<void(JsonWriter&)>& write) {
  separator();
  buffer_.clear();
  JsonWriter w(buffer_, indent_, depth_ + 1);
  write(w);
  out_ << buffer_;
}

void JsonArrayStream::close() {
  if (count_ == 0)
    out_ << "[]";
  else
    out_ << newline_and_pad(indent_, depth_) << "]";
}

void JsonObjectStream::key(std::string_view k) {
  out_ << (count_++ == 0 ? "{" : ",") << newline_and_pad(indent_, 1) << json_text(nlohmann::json(k))
       << (indent_ < 0 ? ":" : ": ");
}

void JsonObjectStream::member(std::string_view k, const nlohmann::json& value) {
  key(k);
  out_ << json_text_at(value, indent_, 1);
}

JsonArrayStream JsonObjectStream::array_member(std::string_view k) {
  key(k);
  return JsonArrayStream(out_, indent_, 1);
}

void JsonObjectStream::close() {
  if (count_ == 0)
    out_ << "{}";
  else
    out_ << newline_and_pad(indent_, 0) << "}";
  out_ << "\n";
}

JsonWriter::JsonWriter(std::string& out, int indent, int depth)
    : out_(out),
      indent_(indent),
      depth_(depth < 0 ? 0 : depth),
      serializer_(nlohmann::detail::output_adapter<char, std::string>(out), ' ',
                  nlohmann::json::error_handler_t::replace) {}

// The line break and padding before a member or element `levels` deep.
void JsonWriter::newline(size_t levels) {
  if (indent_ < 0) return;
  out_ += '\n';
  out_.append(static_cast<size_t>(indent_) * (static_cast<size_t>(depth_) + levels), ' ');
}

// A value goes straight after its key; in an array it needs the separator
// and its own line first.
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty() || !open_.back().array) return;
  if (open_.back().count++ > 0) out_ += ',';
  newline(open_.size());
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  open_.push_back({false, 0});
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  open_.push_back({true, 0});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  if (open_.back().count > 0) newline(open_.size() - 1);
  out_ += bracket;
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::end_object() { return close('}'); }
JsonWriter& JsonWriter::end_array() { return close(']'); }

JsonWriter& JsonWriter::key(std::string_view k) {
  if (open_.back().count++ > 0) out_ += ',';
  newline(open_.size());
  after_key_ = false;
  value(k);
  out_ += indent_ < 0 ? ":" : ": ";
  after_key_ = true;
  return *this;
}

namespace {
bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Text nlohmann writes unchanged (with ensure_ascii off): well-formed UTF-8
// (the sequences its decoder accepts: no overlong forms, no surrogates,
// nothing above U+10FFFF) without control characters, '"' or '\\'.
bool needs_no_escaping(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // Eight plain ASCII bytes at a time; anything else is looked at alone.
    while (end - p >= 8) {
      uint64_t w = bytes::load(reinterpret_cast<const char*>(p));
      if (bytes::any_high(w) || bytes::any_below(w, 0x20) || bytes::any_equal(w, '"') || bytes::any_equal(w, '\\'))
        break;
      p += 8;
    }
    if (p == end) break;
    unsigned char c = *p;
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return false;
      ++p;
      continue;
    }
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (c < 0xC2 || c > 0xF4 || static_cast<size_t>(end - p) < n) return false;
    for (size_t i = 1; i < n; ++i)
      if (!continuation(p[i])) return false;
    unsigned char second = p[1];
    if ((c == 0xE0 && second < 0xA0) || (c == 0xED && second > 0x9F) || (c == 0xF0 && second < 0x90) ||
        (c == 0xF4 && second > 0x8F))
      return false;
    p += n;
  }
  return true;
}
}  // namespace

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  if (needs_no_escaping(s)) {
    out_ += '"';
    out_ += s;
    out_ += '"';
  } else {
    serializer_.dump(nlohmann::json(s), false, false, 0);
  }
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  before_value();
  serializer_.dump(nlohmann::json(d), false, false, 0);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::integer(int64_t bits, bool is_unsigned) {
  before_value();
  char buf[24];
  auto r = is_unsigned ? std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(bits))
                       : std::to_chars(buf, buf + sizeof buf, bits);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::value(const std::vector<std::string>& list) {
  begin_array();
  for (const auto& s : list) value(s);
  return end_array();
}

JsonWriter& JsonWriter::value(const nlohmann::json& j) {
  before_value();
  size_t levels = static_cast<size_t>(depth_) + open_.size();
  serializer_.dump(j, indent_ >= 0, false, indent_ < 0 ? 0 : static_cast<unsigned>(indent_),
                   indent_ < 0 ? 0 : static_cast<unsigned>(static_cast<size_t>(indent_) * levels));
  return *this;
}

}  // namespace keet
