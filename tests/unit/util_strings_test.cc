// Text helpers of the readable output: wrapping and long kernel names.
#include <gtest/gtest.h>

#include "util/strings.h"

namespace keet {
namespace {

TEST(WrapText, BreaksAtSpacesWithAHangingIndent) {
  EXPECT_EQ(wrap_text("one two three four", 12, "- ", "  "), "- one two\n  three four");
  EXPECT_EQ(wrap_text("one two", 0, "  ", "    "), "  one two");                           // 0: never wrap
  EXPECT_EQ(wrap_text("averyveryverylongword x", 8, "", ""), "averyveryverylongword\nx");  // a word stays whole
  EXPECT_EQ(wrap_text("title  est. 2x", 80, "", ""), "title  est. 2x");  // a run of spaces inside a line is kept
  EXPECT_EQ(wrap_text("é é é é", 4, "", ""), "é é\né é");                // columns, not bytes
}

TEST(AbbreviateName, ShortNamesStayWhole) {
  EXPECT_EQ(abbreviate_name("add(float *, float *, int)"), "add(float *, float *, int)");
}

TEST(AbbreviateName, InnerTemplatesGoFirstThenParameters) {
  std::string name =
      "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, "
      "void at::native::templates::cuda::uniform_and_transform<float, float, (unsigned long)4>>"
      "(int, at::PhiloxCudaState, T3, T4)";
  std::string short_name = abbreviate_name(name, 120);
  EXPECT_LE(short_name.size(), 120u);
  EXPECT_EQ(short_name,
            "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<...>(int, "
            "at::PhiloxCudaState, T3, T4)");
  std::string params = "kernel<float>(" + std::string(200, 'x') + ")";
  EXPECT_EQ(abbreviate_name(params, 40), "kernel<...>(...)");
  EXPECT_EQ(
      abbreviate_name(name, 60),
      std::string("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<...>(...)").substr(0, 57) +
          "...");
  // Unbalanced brackets (an operator< in the name): cut, never garbled.
  std::string odd = "bool operator<(" + std::string(200, 'y');
  EXPECT_EQ(abbreviate_name(odd, 20).size(), 20u);
  EXPECT_TRUE(abbreviate_name(odd, 20).ends_with("..."));
}

}  // namespace
}  // namespace keet
