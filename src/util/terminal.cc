#include "util/terminal.h"

#include "util/bytes.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace keet {
namespace {

constexpr size_t kMaxSgr = 32;  // longer "colour" sequences are not ours

constexpr bool is_control(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

// The bytes the loop below must look at: controls (ESC among them) and the
// lead byte of a C1 control. Everything else is copied in runs.
constexpr auto kSpecial = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = is_control(static_cast<unsigned char>(c)) || c == 0xc2;
  return t;
}();

size_t next_special(std::string_view in, size_t i) {
  // Whole words with no control (newline and tab pass), DEL or C2 byte are
  // skipped at once.
  for (;;) {
    while (i + 8 <= in.size()) {
      uint64_t w = bytes::load(in.data() + i);
      // The cheap test first; the exact one only for words it flags, which
      // in indented JSON are mostly those holding a newline.
      if (bytes::any_below(w, 0x20) | bytes::any_equal(w, 0x7f) | bytes::any_equal(w, 0xc2)) {
        uint64_t controls = bytes::below_mask(w, 0x20) & ~bytes::equal_mask(w, '\n') & ~bytes::equal_mask(w, '\t');
        if (controls | bytes::equal_mask(w, 0x7f) | bytes::equal_mask(w, 0xc2)) break;
      }
      i += 8;
    }
    size_t word_end = std::min(in.size(), i + 8);
    for (; i < word_end; ++i)
      if (kSpecial[static_cast<unsigned char>(in[i])]) return i;
    if (i == in.size()) return i;
  }
}

// Length of the colour sequence at in[0] (ESC [ [0-9;]* m); 0 when it is not
// one; npos when `in` ends before it could be decided.
size_t sgr_length(std::string_view in) {
  if (in.size() < 2) return std::string_view::npos;
  if (in[1] != '[') return 0;
  for (size_t i = 2; i < in.size() && i < kMaxSgr; ++i) {
    if (in[i] == 'm') return i + 1;
    if (in[i] != ';' && (in[i] < '0' || in[i] > '9')) return 0;
  }
  return in.size() < kMaxSgr ? std::string_view::npos : 0;
}

}  // namespace

size_t append_terminal_safe(std::string& out, std::string_view in, bool keep_sgr, bool final) {
  size_t i = 0, clean = 0;
  auto flush_clean = [&] { out.append(in.substr(clean, i - clean)); };
  while ((i = next_special(in, i)) < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c == 0x1b && keep_sgr) {
      size_t n = sgr_length(in.substr(i));
      if (n == std::string_view::npos && !final) break;  // decide when more arrives
      if (n != 0 && n != std::string_view::npos) {
        i += n;
        continue;
      }
    }
    if (is_control(c)) {
      flush_clean();
      out += '^';
      out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
      clean = ++i;
      continue;
    }
    if (c == 0xc2) {  // C1 controls are U+0080..U+009F: C2 80..C2 9F in UTF-8
      if (i + 1 == in.size() && !final) break;
      auto next = i + 1 < in.size() ? static_cast<unsigned char>(in[i + 1]) : 0;
      if (next >= 0x80 && next <= 0x9f) {
        flush_clean();
        out += fmt::format("U+{:04X}", next);
        clean = i += 2;
        continue;
      }
    }
    ++i;
  }
  flush_clean();
  return i;
}

size_t terminal_clean_prefix(std::string_view in) { return next_special(in, 0); }

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_terminal_safe(out, s, false, true);
  return out;
}

}  // namespace keet
