// End-to-end: `keet analyze`, `keet coverage` and `keet eval` on real reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using json = nlohmann::json;

// Fields that legitimately differ between machines are blanked before comparing.
json normalized(json j) {
  j["tool"]["version"] = "";
  j["report"]["path"] = "";
  return j;
}

// Compares with tests/golden/<name>; KEET_UPDATE_GOLDEN=1 rewrites it.
void expect_golden(const std::string& name, const json& actual) {
  std::string path = source_dir() + "/tests/golden/" + name;
  if (std::getenv("KEET_UPDATE_GOLDEN")) std::ofstream(path) << normalized(actual).dump(2) << "\n";
  std::string text = read_file(path);
  ASSERT_FALSE(text.empty()) << "missing golden file " << path << " (run with KEET_UPDATE_GOLDEN=1)";
  EXPECT_EQ(normalized(actual).dump(2), json::parse(text).dump(2)) << "golden " << name << " differs";
}

bool has_prefix(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (s.starts_with(p)) return true;
  return false;
}

double evidence_value(const json& finding, const std::string& metric, double fallback) {
  for (const auto& e : finding["evidence"])
    if (e["metric"] == metric) return e["value"].get<double>();
  return fallback;
}

// Class, binding unit and top finding never contradict; every cap is stated;
// no occupancy finding where the grid cannot place more CTAs per SM.
void check_consistency(const json& k, const std::string& where) {
  std::string cls = k["bottleneck"]["class"];
  const json& binding = k["limiter"]["binding"];
  const json& findings = k["findings"];
  if (cls == "memory" || cls == "compute") {
    ASSERT_FALSE(binding.is_null()) << where;
    EXPECT_EQ(binding["kind"], cls) << where;
    ASSERT_FALSE(findings.empty()) << where << ": a " << cls << "-bound kernel with no finding";
    auto relieves = findings[0]["relieves"].get<std::vector<std::string>>();
    EXPECT_NE(std::ranges::find(relieves, binding["unit"].get<std::string>()), relieves.end())
        << where << ": top finding " << findings[0]["id"] << " does not relieve the binding unit " << binding["unit"];
  }
  // A launch or latency verdict whose own causes gain nothing names the cause
  // that carries the gain, which then comes first.
  bool named = k["bottleneck"]["summary"].get<std::string>().find("the gain is in: ") != std::string::npos;
  if (cls == "latency" && !findings.empty() && !named)
    EXPECT_TRUE(has_prefix(findings[0]["id"], {"latency.", "occupancy."})) << where << ": " << findings[0]["id"];
  if (cls == "launch" && !findings.empty() && !named) EXPECT_TRUE(has_prefix(findings[0]["id"], {"launch."})) << where;
  if (cls == "unknown") EXPECT_EQ(k["data_quality"]["outcome"], "insufficient_data") << where;
  for (const auto& f : findings) {
    std::string formula = f["speedup_formula"], text = f["explanation"];
    bool no_gain = formula.starts_with("no gain");  // caps of a withdrawn estimate say nothing
    if (!no_gain && (formula.find("bound_pct / next_pct") != std::string::npos ||
                     formula.find("dram_headroom") != std::string::npos))
      EXPECT_NE(text.find("capped at"), std::string::npos)
          << where << " " << f["id"] << ": a cap the text does not state";
    if (has_prefix(f["id"], {"occupancy.registers", "occupancy.shared_memory", "occupancy.block_size"})) {
      EXPECT_EQ(cls, "latency") << where;
      double grid = evidence_value(f, "derived:blocks_per_sm_grid", 1e9),
             limit = evidence_value(f, "derived:blocks_per_sm_limit", 0);
      EXPECT_GT(grid, limit) << where << ": occupancy finding although the grid places only " << grid << " CTAs per SM";
    }
  }
}

void check_contract(const json& j) {
  ASSERT_EQ(j["schema"], "keet.analysis/1");
  ASSERT_TRUE(j["kernels"].is_array());
  static const std::set<std::string> classes = {"memory", "compute", "latency", "launch", "unknown"};
  static const std::set<std::string> severities = {"high", "medium", "low", "info"};
  for (const auto& k : j["kernels"]) {
    EXPECT_TRUE(classes.count(k["bottleneck"]["class"]));
    double c = k["bottleneck"]["confidence"];
    EXPECT_GE(c, 0.0);
    EXPECT_LE(c, 1.0);
    for (const auto& f : k["findings"]) {
      EXPECT_TRUE(severities.count(f["severity"]));
      EXPECT_FALSE(f["id"].get<std::string>().empty());
      if (!f["estimated_speedup"].is_null()) EXPECT_GE(f["estimated_speedup"].get<double>(), 1.0);
      for (const auto& e : f["evidence"]) EXPECT_TRUE(e["value"].is_number());
    }
    EXPECT_TRUE(k["limiter"].is_object());
    EXPECT_TRUE(k["data_quality"].is_object());
    static const std::set<std::string> outcomes = {"ok", "degraded", "insufficient_data"};
    EXPECT_TRUE(outcomes.count(k["data_quality"]["outcome"]));
    check_consistency(k, j["report"]["path"].get<std::string>() + " kernel " + std::to_string(k["index"].get<int>()));
  }
}

// "n/a", "nan", "-nan", "inf" as words: a reader cannot tell them from data.
std::string placeholder_word(const std::string& text) {
  static const std::set<std::string> bad = {"n/a", "nan", "-nan", "inf", "-inf", "NaN", "N/A"};
  std::string word;
  auto flush = [&]() -> std::string {
    std::string w = word;
    word.clear();
    return bad.count(w) ? w : "";
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-') {
      word += c;
      continue;
    }
    if (auto w = flush(); !w.empty()) return w;
  }
  return flush();
}

std::string scenario_report() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("strided_copy", 8192, 256, scenario_metrics(120000));
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("scenario.ncu-rep");
  w.write(path);
  return path;
}

TEST(AnalyzeE2E, OwnReportMatchesGolden) {
  auto r = run_keet("analyze --format json " + shell_quote(scenario_report()));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out);
  check_contract(j);
  EXPECT_EQ(j["kernels"][0]["bottleneck"]["class"], "memory");
  EXPECT_EQ(j["kernels"][0]["findings"][0]["id"], "memory.uncoalesced_global");
  expect_golden("scenario.analysis.json", j);
}

TEST(AnalyzeE2E, TextAndMarkdownShowTheNumbers) {
  std::string path = shell_quote(scenario_report());
  auto text = run_keet("analyze " + path);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("Bottleneck: MEMORY"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("66.7%"), std::string::npos);
  EXPECT_EQ(text.out.find("\033["), std::string::npos) << "no colour when not a terminal";
  auto md = run_keet("analyze --format markdown " + path);
  EXPECT_NE(md.out.find("## `[0] strided_copy()`"), std::string::npos) << md.out;
}

TEST(AnalyzeE2E, HtmlIsOneSelfContainedPage) {
  std::string out = temp_path("analysis.html");
  auto r = run_keet("analyze --format html -o " + shell_quote(out) + " " + shell_quote(scenario_report()));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string html = read_file(out);
  EXPECT_NE(html.find("<html"), std::string::npos);
  EXPECT_NE(html.find("memory.uncoalesced_global"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  for (std::string outside : {"src=\"http", "href=\"http", "<script src", "<link ", "@import", "url(http"})
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
}

TEST(AnalyzeE2E, SampleReportMatchesGolden) {
  auto ex = oracle_examples();
  if (!ex) GTEST_SKIP() << "../shared (ncu-oracle examples) is absent";
  auto r = run_keet("analyze --format json " + shell_quote(*ex + "/addConstDouble3.ncu-rep"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out);
  check_contract(j);
  auto& k = j["kernels"][0];
  EXPECT_EQ(k["bottleneck"]["class"], "memory");
  EXPECT_EQ(k["device"]["compute_capability"], "8.6");
  EXPECT_EQ(k["findings"][0]["id"], "memory.uncoalesced_global");
  expect_golden("addConstDouble3.analysis.json", j);
}

TEST(AnalyzeE2E, EveryFixtureAnalysesCleanly) {
  KEET_REQUIRE_SHARED();
  for (const auto& f : fixture_reports()) {
    auto r = run_keet("analyze --allow-partial --top 0 --format json " + shell_quote(f));
    ASSERT_EQ(r.rc, 0) << f << ": " << r.err;
    check_contract(json::parse(r.out));
  }
}

// Never print what the report does not hold: over every fixture and every
// output format, no "n/a", "nan" or "inf" stands in for a value.
TEST(AnalyzeE2E, NoFixtureOutputShowsAPlaceholderForAValue) {
  KEET_REQUIRE_SHARED();
  std::string html = temp_path("placeholder.html");
  for (const auto& f : fixture_reports()) {
    for (std::string format : {"text", "markdown", "json"}) {
      auto r = run_keet("analyze --allow-partial --top 0 --format " + format + " " + shell_quote(f));
      ASSERT_EQ(r.rc, 0) << f << ": " << r.err;
      EXPECT_EQ(placeholder_word(r.out), "") << f << " (" << format << ")";
    }
    auto r = run_keet("analyze --allow-partial --top 0 --format html -o " + shell_quote(html) + " " + shell_quote(f));
    ASSERT_EQ(r.rc, 0) << f << ": " << r.err;
    EXPECT_EQ(placeholder_word(read_file(html)), "") << f << " (html)";
  }
}

TEST(AnalyzeE2E, PlantedBrokenValuesAreReportedNotAnalysed) {
  ReportWriter w;
  ReportWriter::Block b;
  auto nan = std::nan("");
  auto k0 = w.kernel("interrupted", 0, 0,
                     {{"gpu__time_duration.sum", nan},
                      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30}});
  auto k1 = w.kernel("implausible", 4096, 256,
                     {{"gpu__time_duration.sum", 50000},
                      {"launch__grid_size", 4096},
                      {"launch__sm_count", 80},
                      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 350},
                      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", -3},
                      {"dram__bytes_read.sum", std::numeric_limits<double>::infinity()}});
  auto k2 = w.kernel("absent", 4096, 256, {{"gpu__time_duration.sum", 50000}});
  w.flush_strings(b);
  for (auto* k : {&k0, &k1, &k2}) b.results.push_back(k->SerializeAsString());
  w.add(b);
  std::string path = temp_path("planted.ncu-rep");
  w.write(path);
  auto r = run_keet("analyze --format json " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out);
  check_contract(j);
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k["bottleneck"]["class"], "unknown") << k["name"];
    EXPECT_EQ(k["data_quality"]["outcome"], "insufficient_data") << k["name"];
    EXPECT_TRUE(k["findings"].empty()) << k["name"];
  }
  EXPECT_FALSE(j["kernels"][0]["data_quality"]["problems"].empty());
  std::set<std::string> invalid;
  for (const auto& bad : j["kernels"][1]["data_quality"]["invalid"]) invalid.insert(bad["metric"]);
  EXPECT_TRUE(invalid.count("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_TRUE(invalid.count("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_TRUE(invalid.count("dram__bytes_read.sum"));
  EXPECT_FALSE(j["kernels"][2]["data_quality"]["collect"].empty());
  for (std::string format : {"text", "markdown"}) {
    auto t = run_keet("analyze --format " + format + " " + shell_quote(path));
    ASSERT_EQ(t.rc, 0) << t.err;
    EXPECT_EQ(placeholder_word(t.out), "") << t.out;
    EXPECT_NE(t.out.find("cannot support a diagnosis"), std::string::npos) << t.out;
    for (size_t at = t.out.find("0.0%"); at != std::string::npos; at = t.out.find("0.0%", at + 1))
      EXPECT_TRUE(at > 0 && std::isdigit(static_cast<unsigned char>(t.out[at - 1])))
          << "an absent value printed as zero:\n"
          << t.out;
  }
}

TEST(AnalyzeE2E, DoctorFailsOnDataADiagnosisCannotRestOn) {
  // The planted report (broken capture, implausible values, nothing collected)
  // fails; a healthy report passes.
  ReportWriter w;
  ReportWriter::Block b;
  auto bad = w.kernel("interrupted", 0, 0, {{"gpu__time_duration.sum", std::nan("")}});
  auto good = w.kernel("healthy", 4096, 256,
                       {{"gpu__time_duration.sum", 50000},
                        {"launch__grid_size", 4096},
                        {"launch__sm_count", 80},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
                        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30}});
  w.flush_strings(b);
  b.results.push_back(bad.SerializeAsString());
  b.results.push_back(good.SerializeAsString());
  w.add(b);
  std::string path = temp_path("doctor.ncu-rep");
  w.write(path);
  auto r = run_keet("doctor --format json " + shell_quote(path));
  EXPECT_EQ(r.rc, 1) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "keet.doctor/1");
  EXPECT_EQ(j["bad_kernels"], 1);
  EXPECT_TRUE(j["kernels"][0]["bad"].get<bool>());
  EXPECT_EQ(j["kernels"][0]["data_quality"]["outcome"], "insufficient_data");
  EXPECT_FALSE(j["kernels"][1]["bad"].get<bool>());
  EXPECT_EQ(run_keet("doctor -k 1 " + shell_quote(path)).rc, 0);
  auto text = run_keet("doctor " + shell_quote(path));
  EXPECT_NE(text.out.find("1 of 2 kernels has data a diagnosis cannot rest on"), std::string::npos) << text.out;
  EXPECT_EQ(placeholder_word(text.out), "") << text.out;
  if (auto ex = oracle_examples()) EXPECT_EQ(run_keet("doctor " + shell_quote(*ex + "/addConstDouble3.ncu-rep")).rc, 0);
}

// A finding fires when it is listed or merged into another (one finding per fact).
bool has_finding(const json& kernel, const std::string& id) {
  for (const auto& f : kernel["findings"]) {
    if (f["id"] == id) return true;
    for (const auto& m : f.value("merged", json::array()))
      if (m == id) return true;
  }
  return false;
}

// One golden case per finding rule (tests/golden/rules.json): a fixture kernel
// it must fire on and one it must not; every rule of the rule data is listed.
TEST(AnalyzeE2E, EveryRuleHasAGoldenCase) {
  auto goldens = json::parse(read_file(source_dir() + "/tests/golden/rules.json"));
  std::set<std::string> listed;
  for (const auto& c : goldens["cases"]) listed.insert(c["id"].get<std::string>());
  auto findings = json::parse(read_file(source_dir() + "/data/rules/findings.json"));
  for (const auto& r : findings["rules"]) EXPECT_TRUE(listed.count(r["id"].get<std::string>())) << r["id"];
  auto stalls = json::parse(read_file(source_dir() + "/data/rules/stalls.json"));
  for (const auto& [reason, _] : stalls["reasons"].items())
    EXPECT_TRUE(listed.count("latency.stall." + reason)) << reason;
  KEET_REQUIRE_SHARED();
  std::string root = *shared_dir() + "/fixtures/public/";
  auto kernel_of = [&](const json& where) {
    auto r = run_keet("analyze --allow-partial --top 0 --format json -k " + std::to_string(where["kernel"].get<int>()) +
                      " " + shell_quote(root + where["report"].get<std::string>()));
    EXPECT_EQ(r.rc, 0) << r.err;
    auto j = json::parse(r.out);
    return j["kernels"].at(0);
  };
  for (const auto& c : goldens["cases"]) {
    if (!c.contains("fires")) continue;
    std::string id = c["id"];
    EXPECT_TRUE(has_finding(kernel_of(c["fires"]), id)) << id << " must fire on " << c["fires"].dump();
    EXPECT_FALSE(has_finding(kernel_of(c["absent"]), id)) << id << " must not fire on " << c["absent"].dump();
  }
}

// The catalogue's spellings of a quantity (tests read the data file itself).
std::set<std::string> spellings_of(const json& catalogue, const std::string& quantity) {
  std::set<std::string> out;
  for (const auto& q : catalogue["quantities"])
    if (q["name"] == quantity) {
      for (const auto& s : q.value("spellings", json::array()))
        out.insert(s.is_string() ? s.get<std::string>() : s["metric"].get<std::string>());
      for (const auto& s : q.value("nvprof", json::array()))
        out.insert(s.is_string() ? s.get<std::string>() : s["metric"].get<std::string>());
    }
  return out;
}

bool plausible(const json& value) {
  return value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() >= 0;
}

// Whatever ncu version or tool wrote the file (2019 reports, basic-set reports,
// nvprof CSVs): when it holds a kernel's duration, issue activity or stall
// reasons under any spelling, the analysis has them.
TEST(AnalyzeE2E, EverySpellingTheReportHoldsIsRead) {
  KEET_REQUIRE_SHARED();
  auto catalogue = json::parse(read_file(source_dir() + "/data/metrics/quantities.json"));
  auto durations = spellings_of(catalogue, "duration_ns"), issue = spellings_of(catalogue, "issue_active_pct");
  for (const auto& f : fixture_reports()) {
    auto m = run_keet("metrics --allow-partial --format json " + shell_quote(f));
    auto a = run_keet("analyze --allow-partial --top 0 --format json " + shell_quote(f));
    ASSERT_EQ(a.rc, 0) << f << ": " << a.err;
    if (m.rc != 0) continue;
    auto metrics = json::parse(m.out)["kernels"];
    auto kernels = json::parse(a.out)["kernels"];
    ASSERT_EQ(metrics.size(), kernels.size()) << f;
    for (size_t i = 0; i < kernels.size(); ++i) {
      bool has_duration = false, has_issue = false, has_stall = false;
      for (const auto& [name, mv] : metrics[i]["metrics"].items()) {
        has_duration |= durations.count(name) && plausible(mv["value"]);
        has_issue |= issue.count(name) && plausible(mv["value"]);
        has_stall |= (name.find("issue_stalled_") != std::string::npos || name.starts_with("stall_")) &&
                     name.find("not_issued") == std::string::npos && plausible(mv["value"]);
      }
      const auto& k = kernels[i];
      std::string where = f + " kernel " + std::to_string(i);
      if (has_duration) EXPECT_TRUE(k["duration_ns"].is_number()) << where;
      if (has_issue) {
        auto missing = k["data_quality"]["missing"].get<std::vector<std::string>>();
        EXPECT_EQ(std::ranges::find(missing, "issue_active_pct"), missing.end()) << where;
      }
      if (has_stall) EXPECT_FALSE(k["data_quality"]["stalls"]["reasons"].empty()) << where;
    }
  }
}

TEST(AnalyzeE2E, EveryNcuWarningIsCoveredOrExplained) {
  KEET_REQUIRE_SHARED();
  std::string gaps;
  for (const auto& f : fixture_reports()) {
    auto r = run_keet("coverage --allow-partial --format json " + shell_quote(f));
    ASSERT_EQ(r.rc, 0) << f << ": " << r.err;
    const auto doc = json::parse(r.out);  // named: a range over a temporary's member dangles (GCC 12)
    for (const auto& w : doc["warnings"])
      if (w["status"] == "uncovered")
        gaps += f + " kernel " + std::to_string(w["kernel"].get<int>()) + ": " + w["rule"].get<std::string>() + "\n";
  }
  EXPECT_TRUE(gaps.empty()) << "ncu warnings without a KEET finding or documented reason:\n" << gaps;
}

// Every label (and every launch it folds in) must name a launch its report
// holds: a typo in a path or an index would silently shrink the measured set.
TEST(AnalyzeE2E, EveryLabelNamesALaunchOfItsReport) {
  KEET_REQUIRE_SHARED();
  auto ex = oracle_examples();
  auto ex24 = oracle_examples_2024();
  if (!ex || !ex24) GTEST_SKIP() << "needs both ncu-oracle sample folders (2022.3 and 2024.1)";
  auto r = run_keet("eval --format json " + shell_quote(source_dir() + "/eval/labels.json") + " --root " +
                    shell_quote(*shared_dir() + "/fixtures/public") + " --oracle-examples " +
                    shell_quote(std::filesystem::path(*ex).parent_path().string()) + " --oracle-examples-2024 " +
                    shell_quote(*ex24));
  ASSERT_TRUE(r.rc == 0 || r.rc == 1) << r.err;  // 1 would only mean a bar was missed; none is set here
  auto j = json::parse(r.out);
  std::string errors;
  for (const auto& row : j["results"])
    if (!row["error"].get<std::string>().empty())
      errors += row["report"].get<std::string>() + " kernel " + std::to_string(row["kernel"].get<int>()) + ": " +
                row["error"].get<std::string>() + "\n";
  EXPECT_TRUE(errors.empty()) << errors;
  EXPECT_EQ(j["scored"].get<int>(), j["labels"].get<int>());
  EXPECT_GT(j["launches"].get<int>(), j["scored"].get<int>());  // repeated launches are folded
}

std::string eval_command(const std::string& extra) {
  auto ex = oracle_examples();
  std::string oracle = ex ? " --oracle-examples " + shell_quote(std::filesystem::path(*ex).parent_path().string()) : "";
  if (auto ex24 = oracle_examples_2024()) oracle += " --oracle-examples-2024 " + shell_quote(*ex24);
  return "eval --format json " + extra + shell_quote(source_dir() + "/eval/labels.json") + " --root " +
         shell_quote(*shared_dir() + "/fixtures/public") + oracle;
}

// The line held at the level reached (closing note of the engine rework):
// class 99.3%, top-3 100%, limiter 100% over 583 labels; every repository at
// least 98% class and 100% top-3. The bars sit a little below, so a
// regression in the engine fails here.
TEST(AnalyzeE2E, LabelledFixturesReachTheAccuracyBar) {
  KEET_REQUIRE_SHARED();
  auto r = run_keet(eval_command(""));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_GE(j["scored"].get<int>(), 570);  // a few need NVIDIA's sample folders
  EXPECT_GE(j["overall"]["class_accuracy"].get<double>(), 0.97);
  EXPECT_GE(j["overall"]["top3_accuracy"].get<double>(), 0.97);
  EXPECT_GE(j["overall"]["limiter_accuracy"].get<double>(), 0.97);
  for (const auto& [repo, st] : j["by_repository"].items()) {
    EXPECT_GE(st["class_accuracy"].get<double>(), 0.95) << repo;
    if (st["top3_scored"].get<int>() > 0) EXPECT_GE(st["top3_accuracy"].get<double>(), 0.95) << repo;
  }
  // The first labelled set (v1) keeps its own, older bar.
  auto v1 = run_keet(eval_command("--set v1 "));
  ASSERT_EQ(v1.rc, 0) << v1.err;
  auto j1 = json::parse(v1.out);
  EXPECT_GE(j1["scored"].get<int>(), 40);
  EXPECT_GE(j1["class_accuracy"].get<double>(), 0.9);
  EXPECT_GE(j1["top3_accuracy"].get<double>(), 0.9);
}

}  // namespace
}  // namespace keet
