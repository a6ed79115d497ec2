#include "util/json.h"

#include <ostream>

namespace keet {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Raw newlines never occur inside dumped strings (they are escaped), so every
// newline of the text starts a line that needs the extra indentation.
std::string json_text_at(const nlohmann::json& j, int indent, int depth) {
  std::string text = json_text(j, indent);
  if (indent < 0 || depth <= 0) return text;
  std::string pad(static_cast<size_t>(indent * depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

namespace {
std::string newline_and_pad(int indent, int depth) {
  if (indent < 0) return "";
  return "\n" + std::string(static_cast<size_t>(indent * depth), ' ');
}
}  // namespace

void JsonArrayStream::add(const nlohmann::json& element) {
  out_ << (count_++ == 0 ? "[" : ",") << newline_and_pad(indent_, depth_ + 1)
       << json_text_at(element, indent_, depth_ + 1);
}

void JsonArrayStream::close() {
  if (count_ == 0) out_ << "[]";
  else out_ << newline_and_pad(indent_, depth_) << "]";
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
  if (count_ == 0) out_ << "{}";
  else out_ << newline_and_pad(indent_, 0) << "}";
  out_ << "\n";
}

}  // namespace keet
