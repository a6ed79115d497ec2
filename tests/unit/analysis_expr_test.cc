// The rule expression language.
#include <gtest/gtest.h>

#include "analysis/expr.h"

#include <map>

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
  ids = identifiers("a + b * a");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<std::string>{"a", "b", "a"}));  // as written, repeats included
}

// --- Parsed once, evaluated many times ---------------------------------------

Expr parsed(const std::string& text) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e) << text << ": " << (e ? "" : e.error().message);
  return e ? std::move(*e) : Expr{};
}

TEST(AnalysisExpr, ParsedExpressionNamesEachNameOnce) {
  Expr e = parsed("x * 2 + y > x && first(z, x)");
  EXPECT_EQ(e.text(), "x * 2 + y > x && first(z, x)");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(e.identifiers(), (std::vector<std::string>{"x", "y", "x", "z", "x"}));
}

TEST(AnalysisExpr, ParsedExpressionReadsValuesByNamePosition) {
  Expr e = parsed("a / b - c");
  std::vector<std::optional<double>> values = {9.0, 3.0, 1.0};  // a, b, c
  EXPECT_DOUBLE_EQ(*e.eval(values), 2);
  values[2] = 5.0;  // the same tree with other values: nothing is cached between calls
  EXPECT_DOUBLE_EQ(*e.eval(values), -2);
  values[1] = std::nullopt;
  EXPECT_FALSE(e.eval(values).has_value());
  values[1] = 0.0;
  EXPECT_FALSE(e.eval(values).has_value());  // division by zero is unknown
}

TEST(AnalysisExpr, BoundExpressionReadsTheCallersSlots) {
  Expr e = parsed("speed > 10 || ncu_warn");
  std::map<std::string, uint32_t> slot = {{"ncu_warn", 0}, {"speed", 3}};
  e.bind([&](const std::string& n) { return slot.at(n); });
  std::vector<std::optional<double>> values(4);
  values[0] = 0.0;
  values[3] = 12.0;
  EXPECT_EQ(*e.eval(values), 1);
  values[3] = 2.0;
  EXPECT_EQ(*e.eval(values), 0);
  values[3] = std::nullopt;
  EXPECT_FALSE(e.eval(values).has_value());  // unknown || false is unknown
  values[0] = 1.0;
  EXPECT_EQ(*e.eval(values), 1);  // known true decides
}

// Answers recorded from the earlier evaluate-while-parsing implementation, for
// every combination of a and b in kSamples (a outer, b inner; kU: unknown).
// Both the parsed tree and the one-off evaluate() must reproduce them.
constexpr double kU = 1e300;
const std::vector<std::optional<double>> kSamples = {std::nullopt, 0.0, 2.0, 3.0, -7.5};
// clang-format off
const std::vector<std::pair<std::string, std::vector<double>>> kRecorded = {
    {"a + b * 2 - -a / 4",
     {kU, kU, kU, kU, kU,
      kU, 0, 4, 6, -15,
      kU, 2.5, 6.5, 8.5, -12.5,
      kU, 3.75, 7.75, 9.75, -11.25,
      kU, -9.375, -5.375, -3.375, -24.375}},
    {"a >= b && !(a == 3) || b != 2",
     {kU, 1, kU, 1, 1,
      kU, 1, 0, 1, 1,
      kU, 1, 1, 1, 1,
      kU, 1, 0, 1, 1,
      kU, 1, 0, 1, 1}},
    {"first(a, b, 7) * max(a, 1)",
     {kU, kU, kU, kU, kU,
      0, 0, 0, 0, 0,
      4, 4, 4, 4, 4,
      9, 9, 9, 9, 9,
      -7.5, -7.5, -7.5, -7.5, -7.5}},
    {"min(a, b) + ceil(a / 3) + floor(b) + abs(a - b)",
     {kU, kU, kU, kU, kU,
      kU, 0, 4, 6, -8,
      kU, 3, 5, 7, -5,
      kU, 4, 6, 7, -4,
      kU, -2, 2, 4, -17.5}},
    {"a < b == b > a",
     {kU, kU, kU, kU, kU,
      kU, 1, 0, 0, 0,
      kU, 0, 0, 0, 0,
      kU, 0, 0, 0, 0,
      kU, 1, 1, 1, 1}},
    {"!a || !!b && a <= 2",
     {kU, kU, kU, kU, kU,
      1, 1, 1, 1, 1,
      kU, 0, 1, 1, 1,
      0, 0, 0, 0, 0,
      kU, 0, 1, 1, 1}},
    {"1 / (1 - a / 100 * max(b, 5) / 100)",
     {kU, kU, kU, kU, kU,
      kU, 1, 1, 1, 1,
      kU, 1.0010010010010011, 1.0010010010010011, 1.0010010010010011, 1.0010010010010011,
      kU, 1.0015022533800702, 1.0015022533800702, 1.0015022533800702, 1.0015022533800702,
      kU, 0.9962640099626402, 0.9962640099626402, 0.9962640099626402, 0.9962640099626402}},
    {"first(b) - .5e1",
     {kU, -5, -3, -2, -12.5,
      kU, -5, -3, -2, -12.5,
      kU, -5, -3, -2, -12.5,
      kU, -5, -3, -2, -12.5,
      kU, -5, -3, -2, -12.5}},
};
// clang-format on

TEST(AnalysisExpr, ResultsMatchTheEarlierImplementation) {
  for (const auto& [text, expected] : kRecorded) {
    Expr e = parsed(text);
    ASSERT_EQ(expected.size(), kSamples.size() * kSamples.size()) << text;
    for (size_t i = 0; i < expected.size(); ++i) {
      std::map<std::string, std::optional<double>> vars = {{"a", kSamples[i / kSamples.size()]},
                                                           {"b", kSamples[i % kSamples.size()]}};
      std::vector<std::optional<double>> values;
      for (const auto& n : e.names()) values.push_back(vars.at(n));
      auto tree = e.eval(values);
      auto direct = evaluate(text, [&](const std::string& n) { return vars.at(n); });
      ASSERT_TRUE(direct) << text;
      auto want = expected[i] == kU ? std::nullopt : std::optional(expected[i]);
      EXPECT_EQ(tree, want) << text << " case " << i;
      EXPECT_EQ(*direct, want) << text << " case " << i;
    }
  }
}

TEST(AnalysisExpr, AnEmptyExpressionIsUnknown) {
  std::vector<std::optional<double>> none;
  EXPECT_FALSE(Expr{}.eval(none).has_value());
}

TEST(AnalysisExpr, ParseErrorsNameTheExpression) {
  for (std::string bad : {"1 +", "(1", "a )", "min(1)", "foo(2)", "1 $ 2", "", "max(a, b, c)", "first()"}) {
    auto e = Expr::parse(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_NE(e.error().message.find("expression '" + bad + "'"), std::string::npos) << e.error().message;
  }
  // A misspelt function fails when parsed, even when its arguments would be unknown.
  auto e = Expr::parse("maxx(unknown_a, unknown_b)");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("unknown function maxx/2"), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace keet::analysis
