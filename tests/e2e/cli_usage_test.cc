// End-to-end: mistakes and help at the command level answer like git/cargo do.
#include <gtest/gtest.h>

#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

TEST(CliUsage, MisspeltCommandSuggestsTheNearestOne) {
  auto r = run_keet("analyse x.ncu-rep");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown command 'analyse'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'analyze'?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage: keet <command>"), std::string::npos) << r.err;
  auto far = run_keet("frobnicate");
  EXPECT_EQ(far.rc, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_NE(far.err.find("usage:"), std::string::npos) << far.err;
}

TEST(CliUsage, NoCommandPrintsUsage) {
  auto r = run_keet("");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("usage: keet <command>"), std::string::npos) << r.err;
}

TEST(CliUsage, HelpCommand) {
  auto top = run_keet("help");
  EXPECT_EQ(top.rc, 0) << top.err;
  EXPECT_EQ(top.out, run_keet("--help").out);
  EXPECT_NE(top.out.find("analyze"), std::string::npos);
  auto cmd = run_keet("help diff");
  EXPECT_EQ(cmd.rc, 0) << cmd.err;
  EXPECT_EQ(cmd.out, run_keet("diff --help").out);
  auto bad = run_keet("help analyse");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("did you mean 'analyze'?"), std::string::npos) << bad.err;
}

TEST(CliUsage, ShortVersionFlag) {
  auto v = run_keet("-V");
  EXPECT_EQ(v.rc, 0) << v.err;
  EXPECT_EQ(v.out, run_keet("--version").out);
  EXPECT_EQ(v.out.rfind("keet ", 0), 0u);
}

}  // namespace
}  // namespace keet
