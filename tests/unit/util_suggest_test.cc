#include "util/suggest.h"

#include <gtest/gtest.h>

namespace keet {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("analyse", "analyze"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("lsit", "list"), 1u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Suggest, ClosestNameOnlyForTypos) {
  std::vector<std::string> names = {"analyze", "list", "diff", "gate"};
  EXPECT_EQ(closest_name("analyse", names), "analyze");
  EXPECT_EQ(closest_name("lsit", names), "list");
  EXPECT_EQ(closest_name("x", names), std::nullopt);
  EXPECT_EQ(closest_name("profile", names), std::nullopt);
}

}  // namespace
}  // namespace keet
