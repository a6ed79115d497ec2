#include "util/strings.h"

#include <cstring>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace keet {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string shell_word(std::string_view s) {
  bool plain = !s.empty() && std::ranges::all_of(s, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("_-.:/=", c));
  });
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.back() == '%') s = trim(s.substr(0, s.size() - 1));
  std::string clean;
  clean.reserve(s.size());
  for (char c : s)
    if (c != ',') clean.push_back(c);
  if (clean.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (ec != std::errc() || ptr != clean.data() + clean.size()) return std::nullopt;
  return v;
}

void append_quote_doubled(std::string& out, std::string_view text) {
  for (size_t q; (q = text.find('"')) != std::string_view::npos; text.remove_prefix(q + 1)) {
    out.append(text.substr(0, q + 1));
    out += '"';
  }
  out.append(text);
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return b(k) >= lo && b(k) <= hi; };
  unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace keet

namespace keet {
namespace {

size_t columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count code points, not continuation bytes
  return n;
}

}  // namespace

std::string wrap_text(std::string_view text, size_t width, std::string_view first_indent, std::string_view indent) {
  std::string out(first_indent);
  if (width == 0) return out.append(text);
  size_t used = columns(first_indent);
  bool line_empty = true;
  size_t gap = 1;  // spaces before the next word: a run of spaces inside a line is kept
  for (auto word : split(text, ' ')) {
    if (word.empty()) {
      if (!line_empty) ++gap;
      continue;
    }
    size_t w = columns(word);
    if (!line_empty && used + gap + w > width) {
      out += '\n';
      out += indent;
      used = columns(indent);
      line_empty = true;
    }
    if (!line_empty) {
      out.append(gap, ' ');
      used += gap;
    }
    out += word;
    used += w;
    line_empty = false;
    gap = 1;
  }
  return out;
}

namespace {

// `name` with the contents of every <...> deeper than `keep` levels replaced
// by "..."; nullopt when the brackets do not balance (an operator< in the name).
std::optional<std::string> collapse_templates(std::string_view name, int keep) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    for (std::string_view marker : {"<unnamed>", "(anonymous namespace)"})
      if (name.substr(i).starts_with(marker)) {
        if (depth <= keep) out += marker;
        i += marker.size() - 1;
        c = 0;
        break;
      }
    if (c == 0) continue;
    if (c == '<') {
      if (depth < keep)
        out += c;
      else if (depth == keep)
        out += "<...";
      ++depth;
    } else if (c == '>') {
      if (--depth < 0) return std::nullopt;
      if (depth <= keep) out += c;
    } else if (depth <= keep) {
      out += c;
    }
  }
  if (depth != 0) return std::nullopt;
  return out;
}

// The outermost parameter list, the last top-level "(...)", as "(...)".
std::string collapse_parameters(const std::string& name) {
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return name.substr(0, i) + "(...)";
  }
  return name;
}

}  // namespace

std::string abbreviate_name(std::string_view name, size_t max) {
  if (name.size() <= max) return std::string(name);
  std::string out(name);
  for (int keep : {2, 1, 0}) {
    if (auto shorter = collapse_templates(name, keep)) out = *shorter;
    if (out.size() <= max) return out;
  }
  out = collapse_parameters(out);
  if (out.size() <= max) return out;
  return out.substr(0, max > 3 ? max - 3 : 0) + "...";
}

}  // namespace keet
