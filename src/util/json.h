// The one way KEET turns JSON into text.
#pragma once
#include <iosfwd>
#include <string>
#include <string_view>

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
class JsonArrayStream {
 public:
  JsonArrayStream(std::ostream& out, int indent, int depth) : out_(out), indent_(indent), depth_(depth) {}
  void add(const nlohmann::json& element);
  void close();  // "]" (or "[]" when nothing was added)

 private:
  std::ostream& out_;
  int indent_, depth_;
  size_t count_ = 0;
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

}  // namespace keet
