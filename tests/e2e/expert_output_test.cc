// End-to-end: what an expert reads on the page (issue 24). One diagnosis per
// kernel, not per launch; severities that follow the kernel's weight; and,
// over every fixture and NVIDIA's samples, no sentence an expert would strike:
// a finding contradicting the verdict, advice the GPU cannot take, __f*_rn as
// a speed-up, a gain below the launch floor, a high finding with no gain.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/report_writer.h"
#include "support/testing.h"
#include "util/pattern.h"

namespace keet {
namespace {

using namespace keet::testing;
using json = nlohmann::json;

std::vector<std::pair<std::string, double>> kernel_metrics(double duration_ns) { return scenario_metrics(duration_ns); }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t longest_line(const std::string& text) {
  size_t n = 0;
  for (const auto& l : split_lines(text)) n = std::max(n, l.size());
  return n;
}

// `launches` launches of one kernel (durations 100 us +- 2%), then three of a
// second kernel, as a training loop profiled many times would hold.
std::string repeated_launches_report(int launches) {
  ReportWriter w;
  ReportWriter::Block b;
  for (int i = 0; i < launches; ++i) {
    auto k = w.kernel("train_step", 8192, 256, kernel_metrics(100000 + (i % 5) * 500));
    b.results.push_back(k.SerializeAsString());
  }
  for (int i = 0; i < 3; ++i)
    b.results.push_back(w.kernel("reduce", 8192, 256, kernel_metrics(50000)).SerializeAsString());
  w.flush_strings(b);
  // Results reference names flushed with this block: the writer interns them
  // first, so the table is complete before any result is read.
  w.add(b);
  std::string path = temp_path("launches_" + std::to_string(launches) + ".ncu-rep");
  w.write(path);
  return path;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ExpertOutput, IdenticalLaunchesFoldIntoOneDiagnosis) {
  std::string report = shell_quote(repeated_launches_report(105));
  auto text = run_keet("analyze " + report);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_EQ(count_of(text.out, "] train_step()"), 1u) << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("train_step()  x105 launches"), std::string::npos) << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("105 launches: median 101.00 us (100.00"), std::string::npos) << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("Launches #0-#104 fold into this diagnosis"), std::string::npos);
  EXPECT_EQ(count_of(text.out, "] reduce()"), 1u);
  EXPECT_LT(std::count(text.out.begin(), text.out.end(), '\n'), 200) << "two diagnoses, not 108";

  auto all = run_keet("analyze --launches all " + report);
  ASSERT_EQ(all.rc, 0) << all.err;
  EXPECT_EQ(count_of(all.out, "] train_step()"), 105u);

  auto md = run_keet("analyze --format markdown " + report);
  EXPECT_EQ(count_of(md.out, "] train_step()"), 1u);

  // JSON keeps every launch, and says how they fold.
  auto j = json::parse(run_keet("analyze --format json " + report).out);
  EXPECT_EQ(j["kernels"].size(), 108u);
  ASSERT_EQ(j["launch_folds"].size(), 2u);
  EXPECT_EQ(j["launch_folds"][0]["count"], 105);
  EXPECT_EQ(j["launch_folds"][0]["min_ns"], 100000);
  EXPECT_EQ(j["launch_folds"][0]["max_ns"], 102000);
  EXPECT_EQ(j["launch_folds"][1]["count"], 3);

  // HTML: a table of contents, one collapsible section per diagnosed kernel.
  std::string html = temp_path("folded.html");
  ASSERT_EQ(run_keet("analyze --format html -o " + shell_quote(html) + " " + report).rc, 0);
  std::string page = read_file(html);
  EXPECT_NE(page.find("<h2>Contents</h2>"), std::string::npos);
  EXPECT_NE(page.find("href='#k52'"), std::string::npos) << "the median launch stands for the fold";
  EXPECT_EQ(count_of(page, "<details open>"), 2u);
  EXPECT_NE(page.find("&times;105 launches"), std::string::npos);
}

// Launches far apart in duration are not the same diagnosis.
TEST(ExpertOutput, LaunchesBeyondNoiseStayApart) {
  ReportWriter w;
  ReportWriter::Block b;
  for (double ns : {100000.0, 101000.0, 400000.0, 402000.0})
    b.results.push_back(w.kernel("solver", 8192, 256, kernel_metrics(ns)).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path("bands.ncu-rep");
  w.write(path);
  auto text = run_keet("analyze " + shell_quote(path));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_EQ(count_of(text.out, "] solver()  x2 launches"), 2u) << text.out;
}

// A kernel at a sliver of the report's GPU time never carries a high finding.
TEST(ExpertOutput, SeverityFollowsTheKernelsShareOfGpuTime) {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(w.kernel("hot", 8192, 256, kernel_metrics(10e6)).SerializeAsString());
  b.results.push_back(w.kernel("cold", 8192, 256, kernel_metrics(5000)).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path("shares.ncu-rep");
  w.write(path);
  auto j = json::parse(run_keet("analyze --top 0 --format json " + shell_quote(path)).out);
  ASSERT_EQ(j["kernels"].size(), 2u);
  bool hot_high = false;
  for (const auto& f : j["kernels"][0]["findings"]) hot_high |= f["severity"] == "high";
  EXPECT_TRUE(hot_high) << "the same kernel at 99.95% of the time keeps its high finding";
  for (const auto& f : j["kernels"][1]["findings"]) EXPECT_EQ(f["severity"], "low") << f["id"];
  // -k selects the cold kernel alone: it is then all the analysed time.
  auto alone = json::parse(run_keet("analyze --top 0 --format json -k 1 " + shell_quote(path)).out);
  bool alone_high = false;
  for (const auto& f : alone["kernels"][0]["findings"]) alone_high |= f["severity"] == "high";
  EXPECT_TRUE(alone_high);
}

TEST(ExpertOutput, EvidenceIsALabelledTableAndNotesNameSections) {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(w.kernel("partial", 8192, 256,
                               {{"gpu__time_duration.sum", 50000},
                                {"launch__grid_size", 8192},
                                {"smsp__issue_active.avg.pct_of_peak_sustained_active", 20}})
                          .SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string partial = temp_path("partial.ncu-rep");
  w.write(partial);
  auto text = run_keet("analyze " + shell_quote(partial));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("the SpeedOfLight section"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--section SpeedOfLight"), std::string::npos);
  EXPECT_EQ(text.out.find("compute_sol"), std::string::npos) << "internal names stay inside";

  std::string scenario = temp_path("evidence.ncu-rep");
  write_file(scenario, one_kernel_report("strided_copy", 8192, 256, scenario_metrics(120000)));
  auto plain = run_keet("analyze " + shell_quote(scenario));
  EXPECT_NE(plain.out.find("      Evidence:\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("DRAM throughput"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("gpu__dram_throughput"), std::string::npos) << "metric names only with --verbose";
  auto verbose = run_keet("analyze --verbose " + shell_quote(scenario));
  EXPECT_NE(verbose.out.find("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"), std::string::npos);
  // Prose wraps at $COLUMNS (evidence rows are a table, a little wider at most).
  auto wide = run_command("COLUMNS=1000 " + shell_quote(keet_binary()) + " analyze " + shell_quote(scenario));
  auto narrow = run_command("COLUMNS=60 " + shell_quote(keet_binary()) + " analyze " + shell_quote(scenario));
  EXPECT_GT(longest_line(wide.out), 200u);
  for (const auto& line : split_lines(narrow.out)) EXPECT_LE(line.size(), 90u) << line;
}

// --- the expert's checks over every fixture and NVIDIA's samples -------------

struct Strike {
  std::string what, where;
};

std::vector<std::string> all_reports() {
  auto out = fixture_reports();
  for (const auto& ex : {oracle_examples(), oracle_examples_2024()}) {
    if (!ex) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*ex))
      if (e.path().extension() == ".ncu-rep") out.push_back(e.path().string());
  }
  return out;
}

std::vector<Strike> strikes_in(const json& doc, const std::string& report) {
  static const Pattern tensor =
      Pattern::compile(R"(tensor core|\bWMMA\b|mma\.sync|\bHMMA\b)", {.case_insensitive = true}).value();
  static const Pattern no_tensor_chip =
      Pattern::compile(R"(GTX 16\d\d|\bMX ?\d{3}\b|\bT(400|600|1000|1200)\b|GTX 10\d\d|Tesla P|Quadro P)",
                       {.case_insensitive = true})
          .value();
  static const Pattern slow = Pattern::compile(R"(__[fd](mul|add|sub)_r[nzud]\b)").value();
  static const Pattern compute_words =
      Pattern::compile(R"(^compute-bound|limited by the instructions it issues|not by memory)",
                       {.case_insensitive = true})
          .value();
  static const Pattern memory_words =
      Pattern::compile(R"(^memory-bound|not by (the )?instructions)", {.case_insensitive = true}).value();
  std::vector<Strike> out;
  for (const auto& k : doc["kernels"]) {
    std::string where = report + " #" + std::to_string(k["index"].get<int>());
    std::string cls = k["bottleneck"]["class"];
    double cc = 0;
    try {
      cc = std::stod(k["device"]["compute_capability"].get<std::string>());
    } catch (...) {
    }
    std::string device = k["device"]["name"];
    for (const auto& f : k["findings"]) {
      std::string id = f["id"], title = f["title"], text = title + " " + f["explanation"].get<std::string>();
      std::string advice;
      for (const auto& a : f["advice"]) advice += a.get<std::string>() + "\n";
      if (cls == "memory" &&
          (compute_words.search(title) || (!id.starts_with("memory.") && compute_words.search(text))))
        out.push_back({"contradicts the memory verdict: " + title, where});
      if (cls == "compute" &&
          (memory_words.search(title) || (!id.starts_with("compute.") && memory_words.search(text))))
        out.push_back({"contradicts the compute verdict: " + title, where});
      if (tensor.search(advice) && cc > 0 && (cc < 7.0 || no_tensor_chip.search(device)))
        out.push_back({id + " advises tensor cores on " + device, where});
      if (slow.search(advice)) out.push_back({id + " offers an __f*_rn intrinsic as a speed-up", where});
      if (f["estimated_speedup"].is_number() && k["duration_ns"].is_number()) {
        double s = f["estimated_speedup"], d = k["duration_ns"];
        if (s > 1 && d > 0 && d / s < 1000) out.push_back({id + " promises a kernel under 1 us", where});
        if (f["severity"] == "high" && s <= 1.01) out.push_back({id + " is high with no gain", where});
      }
    }
  }
  return out;
}

TEST(ExpertOutput, NoFixtureHasASentenceAnExpertWouldStrike) {
  KEET_REQUIRE_SHARED();
  std::vector<Strike> strikes;
  size_t kernels = 0;
  for (const auto& r : all_reports()) {
    auto run = run_keet("analyze --allow-partial --top 0 --format json " + shell_quote(r));
    ASSERT_EQ(run.rc, 0) << r << ": " << run.err;
    auto doc = json::parse(run.out);
    kernels += doc["kernels"].size();
    for (auto& s : strikes_in(doc, r)) strikes.push_back(std::move(s));
  }
  EXPECT_GT(kernels, 500u);
  for (size_t i = 0; i < strikes.size() && i < 20; ++i) ADD_FAILURE() << strikes[i].where << ": " << strikes[i].what;
  EXPECT_EQ(strikes.size(), 0u);
}

// The default text diagnoses no kernel at one grid and block more than three times.
TEST(ExpertOutput, NoFixtureRepeatsADiagnosis) {
  KEET_REQUIRE_SHARED();
  for (const auto& r : all_reports()) {
    auto run = run_keet("analyze --allow-partial " + shell_quote(r));
    ASSERT_EQ(run.rc, 0) << r << ": " << run.err;
    std::map<std::string, int> heads;
    auto lines = split_lines(run.out);
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (!lines[i].starts_with("[")) continue;
      auto close = lines[i].find("] ");
      if (close == std::string::npos) continue;
      auto launch = lines[i + 1].find("grid (");
      std::string key =
          lines[i].substr(close + 2, lines[i].find("  x") - close - 2) +
          (launch == std::string::npos
               ? ""
               : lines[i + 1].substr(launch, lines[i + 1].find(')', lines[i + 1].find("block (")) - launch));
      ++heads[key];
    }
    for (const auto& [key, n] : heads) EXPECT_LE(n, 3) << r << ": " << key << " diagnosed " << n << " times";
  }
}

}  // namespace
}  // namespace keet
