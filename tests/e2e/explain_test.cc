// End-to-end: `keet explain` on the real binary with the built-in knowledge base.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::ranges::count(s, '\n')); }

TEST(KbExplain, MetricAliasInText) {
  auto r = run_keet("explain achieved_occupancy");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Achieved occupancy (metric:sm__warps_active)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("What to do:"), std::string::npos);
  EXPECT_NE(r.out.find("https://docs.nvidia.com/"), std::string::npos);
  EXPECT_TRUE(r.err.empty());
}

TEST(KbExplain, StallReasonSpellingsAsJson) {
  for (std::string term :
       {"long_scoreboard", "stall_long_scoreboard", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}) {
    auto r = run_keet("explain --format json " + term);
    ASSERT_EQ(r.rc, 0) << term << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["query"], term);
    ASSERT_FALSE(j["entries"].empty()) << term;
    EXPECT_EQ(j["entries"][0]["id"], "stall:long_scoreboard") << term;
    EXPECT_EQ(j["entries"][0]["kind"], "stall");
    EXPECT_FALSE(j["entries"][0]["remedies"].empty());
    EXPECT_TRUE(j["entries"][0]["references"][0]["url"].get<std::string>().starts_with("https://"));
  }
}

TEST(KbExplain, FindingIdAndCount) {
  auto r = run_keet("explain -n 1 --format json memory.shared_bank_conflicts");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["id"], "finding:memory.shared_bank_conflicts");
  EXPECT_EQ(j["entries"][0]["match"], "id");
}

TEST(KbExplain, FreeTextQuestionUnquoted) {
  auto r = run_keet("explain --format json -n 3 why are my global loads slow");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["query"], "why are my global loads slow");
  ASSERT_FALSE(j["entries"].empty());
  EXPECT_LE(j["entries"].size(), 3u);
  for (const auto& e : j["entries"]) EXPECT_EQ(e["match"], "text");
  auto text = run_keet("explain " + shell_quote("why are my global loads slow"));
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("See also:"), std::string::npos);
}

TEST(KbExplain, NoMatchExitsTwoWithOneLine) {
  for (std::string term : {"zzqqxxnotaterm", "\"foo AND (", "'; zqxw(); --"}) {
    auto r = run_keet("explain " + shell_quote(term));
    EXPECT_EQ(r.rc, 2) << term << ": " << r.out;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("nothing in the knowledge base matches"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(KbExplain, BadArguments) {
  EXPECT_EQ(run_keet("explain").rc, 2);
  EXPECT_EQ(run_keet("explain -n 0 dram").rc, 2);
  EXPECT_EQ(run_keet("explain --format xml dram").rc, 2);
  auto help = run_keet("explain --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("stall reason"), std::string::npos);
}

}  // namespace
}  // namespace keet
