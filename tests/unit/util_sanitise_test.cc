// The output sanitisers, one per medium: terminal text (util/terminal.h), JSON
// (util/json.h), markup (render::html::esc) and markdown (render/markdown.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include <sstream>

#include "app/safe_output.h"
#include "render/html_parts.h"
#include "render/markdown.h"
#include "util/bytes.h"
#include "util/json.h"
#include "util/strings.h"
#include "util/terminal.h"

namespace keet {
namespace {

TEST(UtilTerminal, ControlsBecomeCaretNotation) {
  EXPECT_EQ(terminal_safe("k\x1b]0;title\x07\x1b[2J\rX\x7f"), "k^[]0;title^G^[[2J^MX^?");
  EXPECT_EQ(terminal_safe("line\n\tkept"), "line\n\tkept");
  EXPECT_EQ(terminal_safe("c1 \xc2\x9b"
                          "31m"),
            "c1 U+009B31m");
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xc2\xa0ok"), "caf\xc3\xa9 \xc2\xa0ok");  // printable UTF-8 untouched
}

TEST(UtilTerminal, OnlyColourSequencesPassAndOnlyWhenAsked) {
  std::string out;
  EXPECT_EQ(append_terminal_safe(out, "\x1b[1;31mred\x1b[0m \x1b[2J", true, true), 19u);
  EXPECT_EQ(out, "\x1b[1;31mred\x1b[0m ^[[2J");
  out.clear();
  append_terminal_safe(out, "\x1b[1m", false, true);
  EXPECT_EQ(out, "^[[1m");
}

TEST(UtilTerminal, SequencesCutBetweenChunksAreDecidedLater) {
  std::string out;
  std::string_view a = "ab\x1b[1;3";
  size_t used = append_terminal_safe(out, a, true, false);
  EXPECT_EQ(used, 2u);  // the possible colour sequence waits
  std::string rest = std::string(a.substr(used)) + "1mX\xc2";
  used = append_terminal_safe(out, rest, true, false);
  EXPECT_EQ(out, "ab\x1b[1;31mX");
  EXPECT_EQ(rest.substr(used), "\xc2");
  append_terminal_safe(out, std::string_view(rest).substr(used), true, true);
  EXPECT_EQ(out, "ab\x1b[1;31mX\xc2");
}

// keet's stdout: clean text goes straight through, and what follows a
// control character (or a sequence cut between writes) is still filtered.
TEST(UtilTerminal, SafeOutputFiltersAcrossWrites) {
  std::stringbuf target;
  {
    app::SafeOutput buf(&target, false);
    std::ostream out(&buf);
    out << "clean " << std::string(100000, 'x').substr(0, 3) << " k\x1b[2Jz";
    out << "ab\xc2";
    out << "\x9b"
           "31m"
        << '\r' << "end";
    out.flush();
    EXPECT_TRUE(buf.ok());
  }
  EXPECT_EQ(target.str(),
            "clean xxx k^[[2Jzab"
            "U+009B31m^Mend");
}

// The scan that skips eight bytes at a time stops where a byte-by-byte scan
// would: at the first control other than newline and tab, DEL, or a C2 byte.
TEST(UtilTerminal, CleanPrefixEndsAtTheFirstSpecialByte) {
  std::mt19937 rng(5);
  static const char kAlphabet[] = "abc \n\t{}\"\\\x1b\x01\x7f\xc2\x85\xc3\xa9\xff";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (int n = static_cast<int>(rng() % 40); n > 0; --n) {
      // Mostly plain text, so long clean runs cross word boundaries.
      s += rng() % 8 ? static_cast<char>('a' + rng() % 26) : alphabet[rng() % alphabet.size()];
    }
    size_t expected = 0;
    while (expected < s.size()) {
      auto c = static_cast<unsigned char>(s[expected]);
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c == 0xc2) break;
      ++expected;
    }
    ASSERT_EQ(terminal_clean_prefix(s), expected) << ::testing::PrintToString(s);
  }
}

// The exact per-byte masks agree with a byte-by-byte test on every byte value
// in every position of a word.
TEST(UtilBytes, MasksMarkExactlyTheBytesThatPass) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 4000; ++i) {
    unsigned char b[8];
    for (auto& c : b) c = static_cast<unsigned char>(i < 256 ? i : rng());
    b[rng() % 8] = static_cast<unsigned char>(rng() % 3 == 0 ? 0 : rng());
    uint64_t w;
    std::memcpy(&w, b, 8);
    for (unsigned char n : {0x01, 0x20, 0x80})
      for (int k = 0; k < 8; ++k) {
        bool below = ((bytes::below_mask(w, n) >> (8 * k + 7)) & 1) != 0;
        ASSERT_EQ(below, b[k] < n) << int(b[k]) << " " << int(n);
      }
    for (unsigned char v : {0x00, 0x0a, 0x7f, 0xc2})
      for (int k = 0; k < 8; ++k) {
        bool equal = ((bytes::equal_mask(w, v) >> (8 * k + 7)) & 1) != 0;
        ASSERT_EQ(equal, b[k] == v) << int(b[k]) << " " << int(v);
        ASSERT_EQ(bytes::any_equal(w, v) != 0, std::find(b, b + 8, v) != b + 8);
      }
  }
}

TEST(UtilJson, InvalidUtf8IsReplacedNotThrown) {
  nlohmann::json j = {{"name", "k\xff\xc0\x80"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // why json_text exists
  std::string text = json_text(j);
  EXPECT_EQ(text, "{\"name\":\"k\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}");
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(UtilStrings, ValidUtf8) {
  EXPECT_EQ(valid_utf8("ok \xc3\xa9 \xf0\x9f\x98\x80"), "ok \xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("\xff"), "\xef\xbf\xbd");
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
  EXPECT_EQ(valid_utf8("a\xe2\x82"), "a\xef\xbf\xbd\xef\xbf\xbd");                // cut short
}

TEST(RenderMarkup, EscapeMakesValidXmlText) {
  EXPECT_EQ(render::html::esc("<script>&\"'"), "&lt;script&gt;&amp;&quot;&#39;");
  EXPECT_EQ(render::html::esc("k\x1b[2J\x07\xff"), "k^[[2J^G\xef\xbf\xbd");
}

TEST(RenderMarkdown, CodeSpansAndTextCannotBreakOut) {
  EXPECT_EQ(render::md_code("void f<int>()"), "`void f<int>()`");
  EXPECT_EQ(render::md_code("a`b``c"), "```a`b``c```");
  EXPECT_EQ(render::md_code("`x"), "`` `x ``");
  EXPECT_EQ(render::md_code("k\n<script>alert(1)</script>"), "`k <script>alert(1)</script>`");
  EXPECT_EQ(render::md_code("a|b", true), "`a\\|b`");
  EXPECT_EQ(render::md_text("<script>*x*\n# y"), "\\<script\\>\\*x\\* # y");
}

}  // namespace
}  // namespace keet
