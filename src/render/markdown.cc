#include "render/markdown.h"

#include <algorithm>

namespace keet::render {
namespace {

bool line_break(char c) { return c == '\n' || c == '\r'; }

}  // namespace

std::string md_code(std::string_view s, bool in_table) {
  size_t longest = 0, run = 0;
  std::string body;
  body.reserve(s.size());
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (line_break(c))
      body += ' ';
    else if (c == '|' && in_table)
      body += "\\|";
    else
      body += c;
  }
  std::string fence(longest + 1, '`');
  // A space keeps a leading or trailing backtick from joining the fence.
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string md_text(std::string_view s) {
  static constexpr std::string_view kMarkup = "\\`*_[]<>&|";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (line_break(c)) {
      out += ' ';
      continue;
    }
    if (kMarkup.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace keet::render
