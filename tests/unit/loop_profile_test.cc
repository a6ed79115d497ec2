// keet profile's orchestration pieces: locating ncu, its command line, and the
// guidance for its failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

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

bool has_run(const std::vector<std::string>& a, std::vector<std::string> seq) {
  return std::ranges::search(a, seq).begin() != a.end();
}

TEST(LoopProfileArgs, FullCollectionAndKernelFilters) {
  ProfileRequest r{.kernel = "regex:gemm", .tail = {"./app", "-n", "3"}};
  auto a = *ncu_arguments("ncu", r, "out.ncu-rep");
  EXPECT_TRUE(has_run(a, {"--set", "full"}));
  EXPECT_TRUE(has_run(a, {"--import-source", "yes"}));
  EXPECT_TRUE(has_run(a, {"--section", "SourceCounters"}));
  EXPECT_TRUE(has_run(a, {"-o", "out.ncu-rep"}));
  EXPECT_TRUE(has_run(a, {"--kernel-name", "regex:gemm"}));
  EXPECT_EQ(std::ranges::count(a, "--kernel-name-base"), 0);  // ncu's own default (function), as the reading commands
  EXPECT_EQ(std::ranges::count(a, "--force-overwrite"), 0);   // never without -f
  EXPECT_TRUE(has_run(a, {"./app", "-n", "3"}));
  EXPECT_EQ(a.back(), "3");  // the application's own arguments come last
  r.kernel = "4";
  a = *ncu_arguments("ncu", r, "o");
  EXPECT_TRUE(has_run(a, {"--launch-skip", "4", "--launch-count", "1"}));
  r.skip = 2;
  EXPECT_FALSE(ncu_arguments("ncu", r, "o"));  // an index and -s together say two things
  EXPECT_EQ(default_report_path({"./build/bench", "x"}), "bench.ncu-rep");
}

TEST(LoopProfileArgs, SetSectionsSelectionAndOverwrite) {
  ProfileRequest r{.tail = {"./app"},
                   .force = true,
                   .set = "basic",
                   .sections = {"MemoryWorkloadAnalysis", "Occupancy"},
                   .name_base = "demangled",
                   .skip = 5,
                   .count = 2};
  r.kernel = "regex:^gemm";
  auto a = *ncu_arguments("ncu", r, "o");
  EXPECT_TRUE(has_run(a, {"--set", "basic"}));
  EXPECT_EQ(std::ranges::count(a, "full"), 0);
  EXPECT_TRUE(has_run(a, {"--section", "MemoryWorkloadAnalysis", "--section", "Occupancy"}));
  EXPECT_EQ(std::ranges::count(a, "SourceCounters"), 0);  // the user chose the collection
  EXPECT_TRUE(has_run(a, {"--force-overwrite"}));
  EXPECT_TRUE(has_run(a, {"--kernel-name-base", "demangled", "--kernel-name", "regex:^gemm"}));
  EXPECT_TRUE(has_run(a, {"--launch-skip", "5", "--launch-count", "2"}));
  r.set.clear();  // sections alone: only them, as ncu
  a = *ncu_arguments("ncu", r, "o");
  EXPECT_EQ(std::ranges::count(a, "--set"), 0);
}

TEST(LoopProfileArgs, NcuOptionsAfterTheSeparatorPassThrough) {
  auto t = *split_tail(
      {"--nvtx", "--nvtx-include", "Train/", "--metrics=a,b", "--replay-mode", "application", "./app", "--set", "x"});
  EXPECT_EQ(t.ncu_options, (std::vector<std::string>{"--nvtx", "--nvtx-include", "Train/", "--metrics=a,b",
                                                     "--replay-mode", "application"}));
  EXPECT_EQ(t.app, (std::vector<std::string>{"./app", "--set", "x"}));  // the application's own --set
  ProfileRequest r{.tail = {"--import-source", "no", "--cache-control", "none", "./app"}};
  auto a = *ncu_arguments("ncu", r, "o");
  EXPECT_TRUE(has_run(a, {"--import-source", "no", "--cache-control", "none", "./app"}));
  EXPECT_EQ(std::ranges::count(a, "--import-source"), 1);  // keet's default gives way
  EXPECT_EQ(std::ranges::count(a, "--"), 0);               // ncu rejects "--" as an ambiguous option
  auto owned = split_tail({"--set", "full", "./app"});
  ASSERT_FALSE(owned);
  EXPECT_NE(owned.error().message.find("before --"), std::string::npos) << owned.error().message;
  EXPECT_FALSE(split_tail({"-o=x", "./app"}));
  auto none = split_tail({"--nvtx"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no application"), std::string::npos);
}

TEST(LoopProfileArgs, NcuNamingRuleAndNoSilentOverwrite) {
  EXPECT_EQ(ncu_report_file("out"), "out.ncu-rep");
  EXPECT_EQ(ncu_report_file("dir/out.ncu-rep"), "dir/out.ncu-rep");
  EXPECT_EQ(ncu_report_file("out.rep"), "out.rep.ncu-rep");
  std::string old = testing::temp_path("overwrite.ncu-rep");
  std::ofstream(old) << "x";
  auto refused = prepare_report_path(old, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::BadInput);
  EXPECT_NE(refused.error().message.find("--force-overwrite"), std::string::npos);
  EXPECT_TRUE(fs::exists(old));
  EXPECT_TRUE(prepare_report_path(old, true));
  EXPECT_FALSE(fs::exists(old));  // removed, so a failed run cannot analyse it
  EXPECT_TRUE(prepare_report_path(old, false));
}

TEST(LoopProfileOutcome, OutputTailKeepsMarkersNotEverything) {
  OutputTail t;
  t.add("==ERROR== ERR_NVGPU");
  t.add("CTRPERM - no permission\n");  // a marker cut between two reads
  for (int i = 0; i < 100; ++i) t.add(std::string(10000, 'x'));
  EXPECT_LT(t.text().size(), 200u * 1024);
  EXPECT_FALSE(check_ncu_outcome(1, t.text(), "/nonexistent.ncu-rep")
                   .error()
                   .message.find("NVreg_RestrictProfilingToAdminUsers=0") == std::string::npos);
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
  auto rc =
      system_runner().run({"/bin/sh", "-c", "sleep 60 & echo started; exit 0"}, [&](std::string_view s) { seen += s; });
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 0);
  EXPECT_NE(seen.find("started"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(LoopProfileRunner, TimeoutStopsTheWholeGroup) {
  std::string marker = testing::temp_path("profile_timeout_marker");
  std::remove(marker.c_str());
  auto started = std::chrono::steady_clock::now();
  auto rc = system_runner().run(
      {"/bin/sh", "-c", "(sleep 3; touch " + marker + ") & sleep 60"}, [](std::string_view) {},
      std::chrono::seconds(1));
  ASSERT_FALSE(rc);
  EXPECT_NE(rc.error().message.find("ran longer than 1 s"), std::string::npos) << rc.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a process of the group outlived the timeout";
}

}  // namespace
}  // namespace keet::app
