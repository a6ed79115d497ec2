// The rule expression language.
#include <gtest/gtest.h>

#include "analysis/expr.h"

namespace keet::analysis {
namespace {

std::optional<double> ev(const std::string& text, std::map<std::string, double> vars = {}) {
  auto r = evaluate(text, [&](const std::string& n) -> std::optional<double> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional(it->second);
  });
  EXPECT_TRUE(r) << text;
  return r ? *r : std::nullopt;
}

TEST(AnalysisExpr, ArithmeticAndPrecedence) {
  EXPECT_DOUBLE_EQ(*ev("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(*ev("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(*ev("-2 + 5 / 2"), 0.5);
  EXPECT_DOUBLE_EQ(*ev("min(3, 4) + max(1, 2) + ceil(1.2) + floor(1.8) + abs(-1)"), 3 + 2 + 2 + 1 + 1);
}

TEST(AnalysisExpr, ComparisonsAndLogic) {
  EXPECT_EQ(*ev("a >= 15 && b < 2", {{"a", 20}, {"b", 1}}), 1);
  EXPECT_EQ(*ev("a >= 15 && b < 2", {{"a", 10}, {"b", 1}}), 0);
  EXPECT_EQ(*ev("!(a == 1) || a != 1", {{"a", 1}}), 0);
}

TEST(AnalysisExpr, UnknownNamesMakeTheResultUnknownUnlessLogicDecides) {
  EXPECT_FALSE(ev("missing + 1").has_value());
  EXPECT_FALSE(ev("missing > 3 && a > 0", {{"a", 1}}).has_value());
  EXPECT_EQ(*ev("missing > 3 && a > 0", {{"a", 0}}), 0);  // known false decides
  EXPECT_EQ(*ev("missing > 3 || a > 0", {{"a", 1}}), 1);  // known true decides
  EXPECT_FALSE(ev("1 / zero", {{"zero", 0}}).has_value());
}

TEST(AnalysisExpr, SyntaxErrorsAreReported) {
  for (std::string bad : {"1 +", "(1", "min(1)", "foo(2)", "1 $ 2", ""}) {
    auto r = evaluate(bad, [](const std::string&) { return 1.0; });
    EXPECT_FALSE(r) << bad;
  }
}

TEST(AnalysisExpr, IdentifiersAreListed) {
  auto ids = identifiers("a / (b + 1) > min(c, 2)");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace keet::analysis
