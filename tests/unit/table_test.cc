// Text tables: whole values when piped (width 0), and cells cut on a terminal
// keeping the part that tells rows apart.
#include <gtest/gtest.h>

#include "render/table.h"

namespace keet::render::table_test {
namespace {

TEST(TableCells, APathKeepsItsEnd) {
  EXPECT_EQ(clip_cell("/home/me/runs/2026-12-07/before/run.ncu-rep", 24), "...07/before/run.ncu-rep");
  EXPECT_EQ(clip_cell("short.ncu-rep", 24), "short.ncu-rep");
}

TEST(TableCells, ANameLosesItsTemplateArgumentsBeforeItsArguments) {
  std::string name = "void gemm<float, 128, 64, cutlass::arch::Sm80<int>>(float *, const float *, int)";
  EXPECT_EQ(clip_cell(name, 50), "void gemm<...>(float *, const float *, int)");
  EXPECT_EQ(clip_cell(name, 20), "void gemm<...>(fl...");
  EXPECT_EQ(clip_cell("a -> b, operator>(x)", 12), "a -> b, o...");  // a '>' outside <...> stays
}

TEST(TableCells, WidthZeroCutsNothingAndWrapsNothing) {
  Table t({"name", "value"});
  std::string longest(300, 'x');
  t.add({longest, "1"});
  EXPECT_NE(t.str(0).find(longest), std::string::npos);
  EXPECT_EQ(t.str(40).find(longest), std::string::npos);
  EXPECT_NE(t.str_fit(0, 0, 40).find(longest), std::string::npos);
  EXPECT_EQ(t.str_fit(100, 0, 40).find(longest), std::string::npos);  // wrapped onto further lines
}

}  // namespace
}  // namespace keet::render::table_test
