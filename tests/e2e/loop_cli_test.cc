// End-to-end: keet diff / record / history / gate / profile on reports built
// here and on NVIDIA's sample pair (when ../shared is present).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
namespace fs = std::filesystem;

// A one-kernel report; `device` is stored as the string metric ncu writes.
std::string report(const std::string& file, const std::string& kernel, double ns,
                   std::vector<std::pair<std::string, double>> metrics = {}) {
  metrics.emplace_back("gpu__time_duration.sum", ns);
  std::string path = temp_path(file);
  write_file(path, one_kernel_report(kernel, 64, 256, metrics));
  return path;
}

std::string db_url(const std::string& name) {
  std::string path = temp_path(name);
  fs::remove(path);
  return "sqlite:" + path;
}

TEST(LoopCliDiff, OwnReportsJsonTextAndHtml) {
  auto before = report("d_before.ncu-rep", "k", 2000, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40}});
  auto after = report("d_after.ncu-rep", "k", 1000, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 80}});
  auto r = run_keet("diff --format json " + shell_quote(before) + " " + shell_quote(after));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "keet.diff/1");
  ASSERT_EQ(j["pairs"].size(), 1u);
  EXPECT_EQ(j["pairs"][0]["verdict"], "faster");
  EXPECT_DOUBLE_EQ(j["pairs"][0]["speedup"].get<double>(), 2.0);
  EXPECT_EQ(j["pairs"][0]["before"]["name"], "k()");
  EXPECT_TRUE(j["unmatched_before"].empty());
  auto text = run_keet("diff " + shell_quote(after) + " " + shell_quote(before));
  EXPECT_NE(text.out.find("slower"), std::string::npos);
  auto same = run_keet("diff --threshold 60% " + shell_quote(after) + " " + shell_quote(before));
  EXPECT_NE(same.out.find("unchanged"), std::string::npos) << same.out;
  std::string html = temp_path("diff.html");
  auto h =
      run_keet("diff --format html -o " + shell_quote(html) + " " + shell_quote(before) + " " + shell_quote(after));
  ASSERT_EQ(h.rc, 0) << h.err;
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(page.find("<!doctype html>"), std::string::npos);
  EXPECT_NE(page.find("faster"), std::string::npos);
}

TEST(LoopCliDiff, BadArgumentsExitTwo) {
  auto a = report("d_bad.ncu-rep", "k", 10);
  EXPECT_EQ(run_keet("diff --pair x:y " + shell_quote(a) + " " + shell_quote(a)).rc, 2);
  EXPECT_EQ(run_keet("diff --threshold lots " + shell_quote(a) + " " + shell_quote(a)).rc, 2);
  auto missing = run_keet("diff /nonexistent.ncu-rep " + shell_quote(a));
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("/nonexistent.ncu-rep"), std::string::npos);
}

TEST(LoopCliDiff, APairThatCannotBeHonouredIsRejectedLoudly) {
  auto a = report("d_pair_a.ncu-rep", "k", 10);
  auto b = report("d_pair_b.ncu-rep", "k", 12);
  auto missing = run_keet("diff --pair 0:5 " + shell_quote(a) + " " + shell_quote(b));
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("--pair 0:5: the second report has no kernel 5"), std::string::npos) << missing.err;
  EXPECT_EQ(run_keet("diff --pair 3:0 " + shell_quote(a) + " " + shell_quote(b)).rc, 2);
  EXPECT_EQ(run_keet("diff --pair 0:0 --pair 0:0 " + shell_quote(a) + " " + shell_quote(b)).rc, 2);
  auto ok = run_keet("diff --format json --pair 0:0 " + shell_quote(a) + " " + shell_quote(b));
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["pairs"].size(), 1u);
}

// The done-when check: the uncoalesced sample fixed by the coalesced one.
TEST(LoopCliDiff, NvidiaSamplePairResolvesUncoalescedAccess) {
  KEET_REQUIRE_SHARED();
  auto dir = oracle_examples();
  if (!dir) GTEST_SKIP() << "ncu-oracle examples unavailable";
  // Their kernels are named differently (addConstDouble3 / addConstDouble): by
  // name alone they are missing + new, so the user pairs them (or keet diff
  // pairs the only kernel of each report by default: tests/e2e/diff_renamed_test.cc).
  auto unpaired = run_keet("diff --names-only --format json " + shell_quote(*dir + "/addConstDouble3.ncu-rep") + " " +
                           shell_quote(*dir + "/addConstDouble.ncu-rep"));
  ASSERT_EQ(unpaired.rc, 0) << unpaired.err;
  EXPECT_TRUE(nlohmann::json::parse(unpaired.out)["pairs"].empty()) << unpaired.out;
  auto r = run_keet("diff --format json --pair 0:0 " + shell_quote(*dir + "/addConstDouble3.ncu-rep") + " " +
                    shell_quote(*dir + "/addConstDouble.ncu-rep"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["pairs"].size(), 1u);
  const auto& p = j["pairs"][0];
  EXPECT_EQ(p["paired_by"], "forced");
  EXPECT_EQ(p["verdict"], "faster");
  EXPECT_NEAR(p["speedup"].get<double>(), 294336.0 / 239008.0, 1e-3);
  auto resolved = p["resolved"].get<std::vector<std::string>>();
  EXPECT_NE(std::ranges::find(resolved, "memory.uncoalesced_global"), resolved.end()) << p.dump(2);
}

TEST(LoopCliGate, RecordThenGateFailsOnRegressionAndPassesOtherwise) {
  std::string db = "--db " + shell_quote(db_url("gate.sqlite"));
  auto base = report("g_base.ncu-rep", "k", 1000, {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 100}});
  auto slow = report("g_slow.ncu-rep", "k", 1300, {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 300}});
  auto ok = report("g_ok.ncu-rep", "k", 1020, {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 100}});
  EXPECT_EQ(run_keet("gate " + shell_quote(slow) + " --baseline main " + db).rc, 2);  // nothing recorded yet
  auto rec = run_keet("record " + shell_quote(base) + " --tag main --commit abc123 " + db);
  ASSERT_EQ(rec.rc, 0) << rec.err;
  EXPECT_NE(rec.out.find("recorded run #1"), std::string::npos) << rec.out;

  auto bad = run_keet("gate " + shell_quote(slow) + " --baseline main --max-slowdown 5% " + db);
  EXPECT_EQ(bad.rc, 1) << bad.err;
  EXPECT_NE(bad.out.find("REGRESSION k()"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("+30.0%"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("global load sectors"), std::string::npos)
      << "cause should name the moved metric: " << bad.out;

  auto good = run_keet("gate " + shell_quote(ok) + " --baseline main --max-slowdown 5% " + db);
  EXPECT_EQ(good.rc, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("PASSED"), std::string::npos);
  EXPECT_EQ(run_keet("gate " + shell_quote(ok) + " --baseline nightly " + db).rc, 2);
  EXPECT_EQ(run_keet("gate " + shell_quote(ok) + " --max-slowdown much " + db).rc, 2);
}

TEST(LoopCliGate, JunitAndSarifForCi) {
  std::string db = "--db " + shell_quote(db_url("ci.sqlite"));
  ASSERT_EQ(run_keet("record " + shell_quote(report("c_base.ncu-rep", "k", 1000)) + " " + db).rc, 0);
  auto slow = shell_quote(report("c_slow.ncu-rep", "k", 2000));
  auto junit = run_keet("gate " + slow + " --baseline latest --format junit " + db);
  EXPECT_EQ(junit.rc, 1);
  EXPECT_NE(junit.out.find("<testsuite "), std::string::npos);
  EXPECT_NE(junit.out.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(junit.out.find("<failure type=\"performance-regression\""), std::string::npos);
  auto sarif = run_keet("gate " + slow + " --baseline latest --format sarif " + db);
  EXPECT_EQ(sarif.rc, 1);
  auto j = nlohmann::json::parse(sarif.out);
  EXPECT_EQ(j["version"], "2.1.0");
  ASSERT_EQ(j["runs"][0]["results"].size(), 1u);
  EXPECT_NE(j["runs"][0]["results"][0]["message"]["text"].get<std::string>().find("k()"), std::string::npos);
}

TEST(LoopCliHistory, ParallelRecordersLoseNothingAndHistoryShowsTrend) {
  std::string db = "--db " + shell_quote(db_url("parallel.sqlite"));
  std::string script;
  constexpr int kWriters = 8;
  for (int i = 0; i < kWriters; ++i) {
    auto r = report("h" + std::to_string(i) + ".ncu-rep", "k", 1000 + i);
    script += keet_binary() + " record " + shell_quote(r) + " --tag t" + std::to_string(i) + " " + db + " & ";
  }
  auto all = run_command("(" + script + "wait)");
  ASSERT_EQ(all.rc, 0) << all.err;
  auto h = run_keet("history --format json --limit 0 " + db);
  ASSERT_EQ(h.rc, 0) << h.err;
  auto j = nlohmann::json::parse(h.out);
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_EQ(j["kernels"][0]["points"].size(), size_t{kWriters});
  auto text = run_keet("history -k 'regex:^k' " + db);
  EXPECT_NE(text.out.find("k() grid (64, 1, 1) block (256, 1, 1) on Test GPU"), std::string::npos) << text.out;
  auto none = run_keet("history -k nomatch " + db);
  EXPECT_NE(none.out.find("no recorded kernels"), std::string::npos);
}

// A stand-in ncu: checks the collection flags, then copies a report to -o.
std::string fake_ncu(const std::string& name, const std::string& body) {
  std::string path = temp_path(name);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

TEST(LoopCliProfile, RunsNcuWithFullCollectionThenAnalyses) {
  auto src = report("p_src.ncu-rep", "profiledKernel", 4096);
  auto ncu = fake_ncu("ncu-ok",
                      "echo \"$@\" > \"$0.args\"\n"
                      "case \" $* \" in *' --set full '*) ;; *) echo 'missing --set full' >&2; exit 9;; esac\n"
                      "case \" $* \" in *' --import-source yes '*) ;; *) exit 9;; esac\n"
                      "case \" $* \" in *' --section SourceCounters '*) ;; *) exit 9;; esac\n"
                      "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n"
                      "cp " +
                          shell_quote(src) + " \"$out\"\n");
  std::string out = temp_path("p_out.ncu-rep");
  fs::remove(out);
  auto r =
      run_keet("profile --ncu " + shell_quote(ncu) + " -k regex:prof -o " + shell_quote(out) + " -- ./myapp --size 3");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_NE(r.out.find("profiledKernel"), std::string::npos) << r.out;
  std::ifstream args(ncu + ".args");
  std::string line;
  std::getline(args, line);
  EXPECT_NE(line.find("--kernel-name regex:prof"), std::string::npos) << line;
  EXPECT_NE(line.find("./myapp --size 3"), std::string::npos) << line;
}

TEST(LoopCliProfile, ReadsTheFileNcuWritesNotAStaleOne) {
  auto fresh = report("p_fresh.ncu-rep", "freshKernel", 4096);
  auto stale = report("p_stale.ncu-rep", "staleKernel", 4096);
  // Like ncu: -o NAME writes NAME.ncu-rep unless NAME already ends with it.
  auto ncu = fake_ncu("ncu-naming",
                      "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n"
                      "case $out in *.ncu-rep) ;; *) out=$out.ncu-rep;; esac\n"
                      "cp " +
                          shell_quote(fresh) + " \"$out\"\n");
  std::string out = temp_path("p_named");
  fs::copy_file(stale, out, fs::copy_options::overwrite_existing);
  fs::remove(out + ".ncu-rep");
  auto r = run_keet("profile --ncu " + shell_quote(ncu) + " -o " + shell_quote(out) + " -- ./myapp");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("freshKernel"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("staleKernel"), std::string::npos) << r.out;
  // An ncu that writes nothing: with --force-overwrite the stale
  // NAME.ncu-rep is removed first, so it is not analysed either.
  auto silent = fake_ncu("ncu-silent", "exit 0\n");
  auto none =
      run_keet("profile --force-overwrite --ncu " + shell_quote(silent) + " -o " + shell_quote(out) + " -- ./myapp");
  EXPECT_EQ(none.rc, 3) << none.out;
  // -f is --format here as in every command: ncu's habit of -f for
  // --force-overwrite fails before anything runs or is removed.
  auto habit = run_keet("profile -f --ncu " + shell_quote(silent) + " -o " + shell_quote(out) + " -- ./myapp");
  EXPECT_EQ(habit.rc, 2) << habit.err;
  EXPECT_NE(habit.err.find("--format"), std::string::npos) << habit.err;
}

// A stand-in ncu that records its argv, one word a line, and copies `src` to
// the file ncu would write for -o.
std::string recording_ncu(const std::string& name, const std::string& src) {
  return fake_ncu(name,
                  "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$0.args\"\n"
                  "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n"
                  "case $out in *.ncu-rep) ;; *) out=$out.ncu-rep;; esac\n"
                  "cp " +
                      shell_quote(src) + " \"$out\"\n");
}

std::vector<std::string> recorded_args(const std::string& ncu) {
  std::ifstream in(ncu + ".args");
  std::vector<std::string> words;
  for (std::string w; std::getline(in, w);) words.push_back(w);
  return words;
}

bool has_run(const std::vector<std::string>& a, const std::vector<std::string>& seq) {
  return std::ranges::search(a, seq).begin() != a.end();
}

TEST(LoopCliProfile, NoSilentOverwriteOfAnExistingReport) {
  auto old = report("p_old.ncu-rep", "oldKernel", 4096);
  auto fresh = report("p_new_src.ncu-rep", "newKernel", 4096);
  auto ncu = recording_ncu("ncu-overwrite", fresh);
  std::string out = temp_path("p_keep");
  fs::copy_file(old, out + ".ncu-rep", fs::copy_options::overwrite_existing);
  fs::remove(ncu + ".args");
  auto refused = run_keet("profile --ncu " + shell_quote(ncu) + " -o " + shell_quote(out) + " -- ./myapp");
  EXPECT_EQ(refused.rc, 2) << refused.err;
  EXPECT_NE(refused.err.find("exists: pass --force-overwrite to replace it"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(ncu + ".args"));  // ncu never ran
  auto kept = run_keet("list " + shell_quote(out + ".ncu-rep"));
  EXPECT_NE(kept.out.find("oldKernel"), std::string::npos);
  auto forced =
      run_keet("profile --ncu " + shell_quote(ncu) + " --force-overwrite -o " + shell_quote(out) + " -- ./myapp");
  ASSERT_EQ(forced.rc, 0) << forced.err;
  EXPECT_NE(forced.out.find("newKernel"), std::string::npos) << forced.out;
  EXPECT_TRUE(has_run(recorded_args(ncu), {"--force-overwrite"}));
}

TEST(LoopCliProfile, NcuFlagsPassThroughAndAnalysisFlagsAsAnalyze) {
  auto src =
      report("p_flags_src.ncu-rep", "flagKernel", 4096, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 10}});
  auto ncu = recording_ncu("ncu-flags", src);
  std::string out = temp_path("p_flags"), analysis = temp_path("p_flags.json");
  fs::remove(out + ".ncu-rep");
  fs::remove(analysis);
  auto r = run_keet("profile --ncu " + shell_quote(ncu) + " -o " + shell_quote(out) +
                    " --set detailed --section Occupancy --section LaunchStats -k regex:flag --kernel-name-base "
                    "demangled -s 2 -c 3 --format json --top 1 --analysis-output " +
                    shell_quote(analysis) +
                    " -- --nvtx --nvtx-include 'Train step/' --replay-mode application ./myapp --set 7");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");  // the analysis went to its file
  auto a = recorded_args(ncu);
  EXPECT_TRUE(has_run(a, {"--set", "detailed", "--section", "Occupancy", "--section", "LaunchStats"})) << r.err;
  EXPECT_FALSE(has_run(a, {"--set", "full"}));
  EXPECT_TRUE(has_run(a, {"-o", out}));
  EXPECT_TRUE(has_run(a, {"--kernel-name-base", "demangled", "--kernel-name", "regex:flag"}));
  EXPECT_TRUE(has_run(a, {"--launch-skip", "2", "--launch-count", "3"}));
  EXPECT_TRUE(
      has_run(a, {"--nvtx", "--nvtx-include", "Train step/", "--replay-mode", "application", "./myapp", "--set", "7"}));
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[a.size() - 3], "./myapp");  // the application and its own arguments last
  std::ifstream in(analysis);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "keet.analysis/1");
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_LE(j["kernels"][0]["findings"].size(), 1u);
  // An option keet sets itself, given after --, is refused with the keet flag.
  auto owned = run_keet("profile --ncu " + shell_quote(ncu) + " -- --launch-count 1 ./myapp");
  EXPECT_EQ(owned.rc, 2);
  EXPECT_NE(owned.err.find("give it to keet before -- (-c)"), std::string::npos) << owned.err;
}

TEST(LoopCliProfile, TimeoutStopsAHungNcu) {
  auto ncu = fake_ncu("ncu-hung", "sleep 60\n");
  auto started = std::chrono::steady_clock::now();
  auto r =
      run_keet("profile --timeout 1 --ncu " + shell_quote(ncu) + " -o " + shell_quote(temp_path("hung")) + " -- ./app");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("ran longer than 1 s"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(LoopCliProfile, CounterPermissionAndMissingNcuExitThree) {
  auto ncu =
      fake_ncu("ncu-perm", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission' >&2\nexit 1\n");
  auto perm =
      run_keet("profile --ncu " + shell_quote(ncu) + " -o " + shell_quote(temp_path("none.ncu-rep")) + " -- ./app");
  EXPECT_EQ(perm.rc, 3);
  EXPECT_NE(perm.err.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << perm.err;
  auto missing = run_command("env -i PATH=/nonexistent " + keet_binary() + " profile -- ./app");
  if (fs::exists("/usr/local/cuda/bin/ncu")) GTEST_SKIP() << "a real ncu is installed";
  EXPECT_EQ(missing.rc, 3);
  EXPECT_NE(missing.err.find("ncu (the Nsight Compute CLI) was not found"), std::string::npos) << missing.err;
  auto env_bad = run_command("NCU=/nonexistent/ncu " + keet_binary() + " profile -- ./app");
  EXPECT_EQ(env_bad.rc, 3);
}

}  // namespace
}  // namespace keet
