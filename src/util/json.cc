#include "util/json.h"

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
