// keet profile's orchestration pieces: locating ncu, its command line, and the
// guidance for its failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <filesystem>
#include <map>
#include <fstream>

#include "app/profile.h"
#include "support/testing.h"

namespace keet::app {
namespace {

namespace fs = std::filesystem;

std::string make_exe(const std::string& dir_name) {
  fs::path dir = testing::temp_path(dir_name);
  fs::create_directories(dir);
  fs::path exe = dir / "ncu";
  std::ofstream(exe) << "#!/bin/sh\n";
  fs::permissions(exe, fs::perms::owner_all);
  return exe.string();
}

GetEnv env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) {
    auto it = vars.find(n);
    return it == vars.end() ? std::string() : it->second;
  };
}

TEST(LoopProfileFind, FlagThenEnvThenPath) {
  auto on_path = make_exe("pathdir");
  auto in_env = make_exe("envdir");
  auto flagged = make_exe("flagdir");
  std::string path = "/nonexistent:" + fs::path(on_path).parent_path().string();
  EXPECT_EQ(*find_ncu(flagged, env({{"NCU", in_env}, {"PATH", path}})), flagged);
  EXPECT_EQ(*find_ncu("", env({{"NCU", in_env}, {"PATH", path}})), in_env);
  EXPECT_EQ(*find_ncu("", env({{"PATH", path}})), on_path);
}

TEST(LoopProfileFind, MissingIsDependencyErrorWithGuidance) {
  if (fs::exists("/usr/local/cuda/bin/ncu")) GTEST_SKIP() << "a real ncu is installed";
  auto r = find_ncu("", env({{"PATH", "/nonexistent"}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ExitCode::Dependency);
  EXPECT_NE(r.error().message.find("--ncu"), std::string::npos);
  auto bad_flag = find_ncu("/nonexistent/ncu", env({}));
  ASSERT_FALSE(bad_flag);
  EXPECT_NE(bad_flag.error().message.find("/nonexistent/ncu"), std::string::npos);
}

TEST(LoopProfileArgs, FullCollectionAndKernelFilters) {
  ProfileRequest r{"", "regex:gemm", "", {"./app", "-n", "3"}};
  auto a = ncu_arguments("ncu", r, "out.ncu-rep");
  auto has = [&](std::vector<std::string> seq) { return std::ranges::search(a, seq).begin() != a.end(); };
  EXPECT_TRUE(has({"--set", "full"}));
  EXPECT_TRUE(has({"--import-source", "yes"}));
  EXPECT_TRUE(has({"--section", "SourceCounters"}));
  EXPECT_TRUE(has({"-o", "out.ncu-rep"}));
  EXPECT_TRUE(has({"--kernel-name", "regex:gemm"}));
  EXPECT_TRUE(has({"./app", "-n", "3"}));
  EXPECT_EQ(a.back(), "3");  // the application's own arguments come last
  r.kernel = "4";
  a = ncu_arguments("ncu", r, "o");
  EXPECT_TRUE(has({"--launch-skip", "4", "--launch-count", "1"}));
  EXPECT_EQ(default_report_path({"./build/bench", "x"}), "bench.ncu-rep");
}

TEST(LoopProfileArgs, NcuNamingRuleAndAppsThatLookLikeOptions) {
  EXPECT_EQ(ncu_report_file("out"), "out.ncu-rep");
  EXPECT_EQ(ncu_report_file("dir/out.ncu-rep"), "dir/out.ncu-rep");
  EXPECT_EQ(ncu_report_file("out.rep"), "out.rep.ncu-rep");
  ProfileRequest r{"", "", "", {"-app", "--set", "x"}};
  auto a = ncu_arguments("ncu", r, "o");
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()), (std::vector<std::string>{"./-app", "--set", "x"}));
  EXPECT_EQ(std::ranges::count(a, "--"), 0);  // ncu rejects "--" as an ambiguous option
}

TEST(LoopProfileOutcome, OutputTailKeepsMarkersNotEverything) {
  OutputTail t;
  t.add("==ERROR== ERR_NVGPU");
  t.add("CTRPERM - no permission\n");  // a marker cut between two reads
  for (int i = 0; i < 100; ++i) t.add(std::string(10000, 'x'));
  EXPECT_LT(t.text().size(), 200u * 1024);
  EXPECT_FALSE(check_ncu_outcome(1, t.text(), "/nonexistent.ncu-rep").error().message.find(
                   "NVreg_RestrictProfilingToAdminUsers=0") == std::string::npos);
}

TEST(LoopProfileOutcome, ExplainsPermissionAndMissingReport) {
  auto perm = check_ncu_outcome(1, "==ERROR== ERR_NVGPUCTRPERM - no permission", "/nonexistent.ncu-rep");
  ASSERT_FALSE(perm);
  EXPECT_EQ(perm.error().code, ExitCode::Dependency);
  EXPECT_NE(perm.error().message.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  auto none = check_ncu_outcome(0, "==WARNING== No kernels were profiled.", "/nonexistent.ncu-rep");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no kernels"), std::string::npos);
  std::string real = testing::temp_path("outcome.ncu-rep");
  std::ofstream(real) << "x";
  EXPECT_TRUE(check_ncu_outcome(0, "", real));
}

TEST(LoopProfileRunner, StreamsOutputAndStatus) {
  std::string seen;
  auto rc = system_runner().run({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 7"},
                                [&](std::string_view s) { seen += s; });
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 7);
  EXPECT_NE(seen.find("hello"), std::string::npos);
  EXPECT_NE(seen.find("oops"), std::string::npos);
  EXPECT_FALSE(system_runner().run({"/nonexistent/binary"}, [](std::string_view) {}));
}

TEST(LoopProfileRunner, GrandchildHoldingTheOutputDoesNotBlock) {
  auto started = std::chrono::steady_clock::now();
  std::string seen;
  auto rc = system_runner().run({"/bin/sh", "-c", "sleep 60 & echo started; exit 0"},
                                [&](std::string_view s) { seen += s; });
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 0);
  EXPECT_NE(seen.find("started"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(LoopProfileRunner, TimeoutStopsTheWholeGroup) {
  std::string marker = testing::temp_path("profile_timeout_marker");
  std::remove(marker.c_str());
  auto started = std::chrono::steady_clock::now();
  auto rc = system_runner().run({"/bin/sh", "-c", "(sleep 3; touch " + marker + ") & sleep 60"},
                                [](std::string_view) {}, std::chrono::seconds(1));
  ASSERT_FALSE(rc);
  EXPECT_NE(rc.error().message.find("ran longer than 1 s"), std::string::npos) << rc.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a process of the group outlived the timeout";
}

}  // namespace
}  // namespace keet::app
