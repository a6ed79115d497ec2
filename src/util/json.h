// The one way KEET turns JSON into text.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace keet {

// nlohmann's dump() throws type_error.316 on a string that is not valid UTF-8,
// and strings come from reports, CSV files and servers KEET does not control
// (one damaged byte in a kernel name aborted every JSON-writing command). This
// writer replaces each invalid byte with U+FFFD instead, so it never throws.
// indent < 0 writes one line.
std::string json_text(const nlohmann::json& j, int indent = -1);

// `j` as json_text(j, indent) lays it out when it sits `depth` levels deep in
// a larger document (every line after the first is indented by depth levels).
std::string json_text_at(const nlohmann::json& j, int indent, int depth);

// Writes a JSON array one element at a time, byte for byte as json_text() of
// the whole array would, so a command can stream thousands of kernels without
// building the document. The caller writes whatever leads up to the array.
class JsonWriter;

class JsonArrayStream {
 public:
  JsonArrayStream(std::ostream& out, int indent, int depth) : out_(out), indent_(indent), depth_(depth) {}
  void add(const nlohmann::json& element);
  // The next element, written by `write` with a JsonWriter (no tree built).
  void add(const std::function<void(JsonWriter&)>& write);
  void close();  // "]" (or "[]" when nothing was added)

 private:
  void separator();
  std::ostream& out_;
  int indent_, depth_;
  size_t count_ = 0;
  std::string buffer_;  // one element's text, reused
};

// Writes a top-level JSON object member by member in the caller's order. The
// caller passes the members in the order nlohmann uses (sorted by key) so the
// text is identical to dumping the whole object.
class JsonObjectStream {
 public:
  JsonObjectStream(std::ostream& out, int indent) : out_(out), indent_(indent) {}
  void member(std::string_view key, const nlohmann::json& value);
  // Starts a member whose value is an array written element by element; close
  // the returned stream before the next member.
  JsonArrayStream array_member(std::string_view key);
  void close();  // "}" and a newline

 private:
  void key(std::string_view k);
  std::ostream& out_;
  int indent_;
  size_t count_ = 0;
};

// A document whose one member is an array written element by element
// ({"kernels": [...]}, as metrics and source write it). open() comes before
// the first element; close() writes the end, or nothing when never opened.
class JsonArrayDocument {
 public:
  JsonArrayDocument(std::ostream& out, std::string key) : doc_(out, 2), key_(std::move(key)) {}
  void open() { array_.emplace(doc_.array_member(key_)); }
  void add(const nlohmann::json& element) { array_->add(element); }
  void close() {
    if (!array_) return;
    array_->close();
    doc_.close();
  }

 private:
  JsonObjectStream doc_;
  std::string key_;
  std::optional<JsonArrayStream> array_;
};

// Writes JSON text straight from the caller's values, byte for byte as
// json_text_at() lays out the same document built as a tree: the same
// indentation, number format, escaping and U+FFFD replacement (numbers and
// strings that need escaping go through nlohmann's own serializer). The caller
// gives object members in nlohmann's order, sorted by key. Building the tree
// first was half of analyze --format json's work on reports with many kernels
// and findings: a map node and a string copy for every member.
class JsonWriter {
 public:
  // Appends to `out`; `depth` as in json_text_at (the value sits that many
  // levels deep in a larger document).
  JsonWriter(std::string& out, int indent, int depth = 0);
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(bool b);
  template <class Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool>) JsonWriter& value(Int i) {
    if constexpr (std::is_signed_v<Int>)
      return integer(static_cast<int64_t>(i), false);
    else
      return integer(static_cast<int64_t>(i), true);
  }
  JsonWriter& value(const std::optional<double>& d) { return d ? value(*d) : null(); }
  JsonWriter& value(const std::vector<std::string>& list);
  JsonWriter& value(const nlohmann::json& j);  // a sub-tree, as json_text_at would place it
  JsonWriter& null();
  template <class T>
  JsonWriter& member(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

 private:
  struct Level {
    bool array;
    size_t count;
  };
  void before_value();
  JsonWriter& close(char bracket);
  void newline(size_t levels);
  JsonWriter& integer(int64_t bits, bool is_unsigned);
  std::string& out_;
  int indent_, depth_;
  std::vector<Level> open_;
  bool after_key_ = false;
  nlohmann::detail::serializer<nlohmann::json> serializer_;
};

}  // namespace keet
