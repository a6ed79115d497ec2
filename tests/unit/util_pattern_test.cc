// util/pattern.h: RE2 behind one small interface, with bounded size.
#include <gtest/gtest.h>

#include "util/pattern.h"

namespace keet {
namespace {

TEST(UtilPattern, SearchFindAndGroups) {
  auto p = Pattern::compile(R"(\b(memory|compute)[- ]?(bound)\b)", {.case_insensitive = true});
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->search("it is Memory-bound here"));
  EXPECT_FALSE(p->search("unbounded memorybounds"));
  auto m = p->find("x compute bound, memory bound", 3);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->pos, 17u);
  EXPECT_EQ(m->groups[0], "memory bound");
  EXPECT_EQ(m->groups[1], "memory");
  EXPECT_EQ(m->groups[2], "bound");
  EXPECT_FALSE(p->find("memory bound", 13));
}

TEST(UtilPattern, ReplaceAllIncludingEmptyMatches) {
  EXPECT_EQ(Pattern::compile("/[a-z]+")->replace_all("/usr/bin and /x", "<p>"), "<p><p> and <p>");
  EXPECT_EQ(Pattern::compile("x*")->replace_all("ab", "-"), "-a-b-");
}

TEST(UtilPattern, PathologicalPatternsRunInLinearTime) {
  std::string name(100000, 'a');
  name += ",";
  for (const char* src : {"(.*)*zq", "(a|,)*>", "(a*)*b", "(a|aa)*c"}) {
    auto p = Pattern::compile(src);
    ASSERT_TRUE(p) << src << ": " << p.error();
    EXPECT_FALSE(p->search(name)) << src;
  }
  EXPECT_TRUE(Pattern::compile("(a|,)*,$")->search(name));
}

TEST(UtilPattern, RefusesBadAndOversizedPatterns) {
  EXPECT_FALSE(Pattern::compile("("));
  EXPECT_FALSE(Pattern::compile(R"((a)\1)"));  // no backreferences: they need backtracking
  EXPECT_FALSE(Pattern::compile(std::string(Pattern::kMaxPatternBytes + 1, 'x')));
  auto huge = Pattern::compile("((a{100}){100}){100}");  // a short pattern with a huge program
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().find("repetition"), std::string::npos) << huge.error();
  std::string letters;  // 360 bytes, each repetition allowed, the program past the memory budget
  for (int i = 0; i < 40; ++i) letters += "\\pL{1000}";
  auto big = Pattern::compile(letters);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().find("too large"), std::string::npos) << big.error();
  EXPECT_TRUE(Pattern::compile(std::string(Pattern::kMaxPatternBytes, 'x')));
}

}  // namespace
}  // namespace keet
