// model/nvtx: ncu's --nvtx-include/--nvtx-exclude expressions over the NVTX
// state of one launch.
#include <gtest/gtest.h>

#include "model/nvtx.h"

namespace keet::model {
namespace {

NvtxState state(std::vector<std::string> stack, std::string domain = "", std::vector<NvtxState::Range> open = {}) {
  NvtxState s;
  s.push_pop.push_back({std::move(domain), std::move(stack)});
  s.start_end = std::move(open);
  return s;
}

bool m(const std::string& expr, const NvtxState& s) { return NvtxExpression::parse(expr)->matches(s); }

TEST(ModelNvtx, PushPopPaths) {
  auto s = state({"A", "B", "C"});
  EXPECT_TRUE(m("A/", s));
  EXPECT_TRUE(m("B/", s));
  EXPECT_TRUE(m("A/B/", s));
  EXPECT_TRUE(m("B/C", s));
  EXPECT_FALSE(m("A/C/", s));   // not directly inside
  EXPECT_TRUE(m("A/*/C", s));   // any ranges between
  EXPECT_TRUE(m("A/*/B/", s));  // "*" may take none
  EXPECT_TRUE(m("[A/", s));
  EXPECT_FALSE(m("[B/", s));
  EXPECT_TRUE(m("C]", s));
  EXPECT_FALSE(m("B]", s));
  EXPECT_TRUE(m("[A/B/C]", s));
  EXPECT_FALSE(m("[A/B]", s));
  EXPECT_TRUE(m("[A/*]", s));
  EXPECT_FALSE(m("D/", s));
}

TEST(ModelNvtx, DomainsAndStartEndRanges) {
  auto s = state({"A"}, "Net", {{"", "Epoch"}, {"Data", "Load"}});
  EXPECT_FALSE(m("A/", s));  // pushed in domain Net, not the default one
  EXPECT_TRUE(m("Net@A/", s));
  EXPECT_TRUE(m("Epoch", s));
  EXPECT_TRUE(m("Data@Load", s));
  EXPECT_FALSE(m("Load", s));
  EXPECT_FALSE(m("Net@Epoch", s));
}

TEST(ModelNvtx, FilterNeedsEveryIncludeAndNoExclude) {
  auto s = state({"A", "B"});
  EXPECT_TRUE(NvtxFilter::parse({"A/", "B/"}, {})->matches(s));
  EXPECT_FALSE(NvtxFilter::parse({"A/", "C/"}, {})->matches(s));
  EXPECT_FALSE(NvtxFilter::parse({"A/"}, {"B]"})->matches(s));
  EXPECT_TRUE(NvtxFilter::parse({}, {"C/"})->matches(s));
  EXPECT_FALSE(NvtxFilter::parse({}, {})->active());
}

TEST(ModelNvtx, MalformedExpressionsAreErrors) {
  for (std::string bad : {"", "[", "]", "A//B", "/A", "@"}) {
    auto e = NvtxExpression::parse(bad);
    EXPECT_FALSE(e) << bad;
    if (!e) {
      EXPECT_EQ(e.error().code, ExitCode::BadInput);
    }
  }
}

}  // namespace
}  // namespace keet::model
