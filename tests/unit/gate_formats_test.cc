// The gate's CI formats on snapshots built here: verdict rows, GitHub
// escaping, SARIF locations relative to --source-root, JUnit counts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "render/diff_gate.h"

namespace keet::render {
using namespace compare;
namespace {

KernelSnapshot snap(int index, std::string name, double ns, std::string file = "", int line = 0) {
  KernelSnapshot s;
  s.index = index;
  s.display = name + "()";
  s.mangled = "_Z" + std::to_string(name.size()) + name + "v";
  s.grid = {64, 1, 1};
  s.block = {256, 1, 1};
  s.duration_ns = ns;
  s.source = {std::move(file), line};
  return s;
}

GateResult sample(double min_delta_ns = 0) {
  std::vector<KernelSnapshot> before = {snap(0, "slow", 1000), snap(1, "tiny", 1000), snap(2, "gone", 10)};
  std::vector<KernelSnapshot> after = {snap(0, "slow", 2000, "/src/proj/kernels/slow.cu", 42), snap(1, "tiny", 1500),
                                       snap(2, "fresh", 10)};
  auto g = gate(diff(before, after, {0.05, {}, min_delta_ns}), 0.05, min_delta_ns);
  g.report = "/work/perf.ncu-rep";
  g.baseline = "baseline run #1";
  return g;
}

TEST(GateRows, RegressionsOkMissingNewInThatOrder) {
  auto g = sample();  // rows point into it
  auto rows = gate_rows(g);
  std::vector<std::string> got;
  for (const auto& r : rows) got.push_back(std::string(gate_status_name(r.status)) + " " + r.kernel().display);
  EXPECT_EQ(got, (std::vector<std::string>{"regression slow()", "regression tiny()", "missing gone()", "new fresh()"}));
  auto small = sample(1000);
  auto delta = gate_rows(small);  // tiny grew 500 ns: below --min-delta 1us
  EXPECT_EQ(delta[1].status, GateStatus::Ok);
  EXPECT_EQ(delta[1].kernel().display, "tiny()");
}

TEST(GateGithub, PropertiesAndMessagesEscapedPerGithubRules) {
  EXPECT_EQ(github_property("a%b\r\nc:d,e"), "a%25b%0D%0Ac%3Ad%2Ce");
  EXPECT_EQ(github_message("a%b\r\nc:d,e"), "a%25b%0D%0Ac:d,e");
  auto g = sample();
  g.source_root = "/src/proj";
  auto out = gate_github(g);
  EXPECT_NE(
      out.find("::error file=kernels/slow.cu,line=42,title=keet gate%3A performance regression%3A slow()::slow()"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("::error title=keet gate%3A performance regression%3A tiny()::"), std::string::npos) << out;
  EXPECT_NE(out.find("::warning title="), std::string::npos) << out;
  EXPECT_NE(out.find("::notice title="), std::string::npos) << out;
}

TEST(GateSourcePaths, RelativeUnderTheRootElseAsGiven) {
  SourceLocation in{"/src/proj/./kernels/../kernels/a.cu", 3}, out{"/elsewhere/a.cu", 3}, rel{"a.cu", 3};
  EXPECT_EQ(source_path_under(in, "/src/proj"), "kernels/a.cu");
  EXPECT_EQ(source_path_under(in, "/src/proj/"), "kernels/a.cu");
  EXPECT_EQ(source_path_under(out, "/src/proj"), "/elsewhere/a.cu");
  EXPECT_EQ(source_path_under(rel, "/src/proj"), "a.cu");
  EXPECT_EQ(source_path_under(in, ""), "/src/proj/kernels/a.cu");
  EXPECT_EQ(source_path_under({}, "/src/proj"), "");
}

TEST(GateSarif, LocationsUseTheSourceRootAndFallBackToTheReport) {
  auto g = sample();
  g.source_root = "/src/proj";
  auto j = nlohmann::json::parse(gate_sarif(g));
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///src/proj/");
  const auto& slow = run["results"][0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(slow["artifactLocation"]["uri"], "kernels/slow.cu");
  EXPECT_EQ(slow["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(slow["region"]["startLine"], 42);
  const auto& tiny = run["results"][1]["locations"][0]["physicalLocation"];
  EXPECT_EQ(tiny["artifactLocation"]["uri"], "file:///work/perf.ncu-rep");  // no source line: the report
  EXPECT_FALSE(tiny.contains("region"));
  g.source_root = "/work";
  auto under = nlohmann::json::parse(gate_sarif(g));
  const auto& report = under["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"];
  EXPECT_EQ(report["uri"], "perf.ncu-rep");
  EXPECT_EQ(report["uriBaseId"], "SRCROOT");
  g.source_root.clear();
  auto plain = nlohmann::json::parse(gate_sarif(g));
  EXPECT_EQ(plain["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "file:///src/proj/kernels/slow.cu");
  EXPECT_FALSE(plain["runs"][0].contains("originalUriBaseIds"));
}

TEST(GateSarif, FingerprintsIgnoreTimesButNotKernelsOrRules) {
  auto a = nlohmann::json::parse(gate_sarif(sample()));
  auto other = sample();
  other.diff.pairs[0].after.duration_ns = 9000;  // a different slowdown of the same kernel
  auto b = nlohmann::json::parse(gate_sarif(other));
  auto fp = [](const nlohmann::json& j, int i) {
    return j["runs"][0]["results"][i]["partialFingerprints"]["keetKernel/v1"];
  };
  EXPECT_EQ(fp(a, 0), fp(b, 0));
  EXPECT_NE(fp(a, 0), fp(a, 1));
  EXPECT_EQ(a["runs"][0]["results"][2]["ruleId"], "keet.kernel-missing");
  EXPECT_EQ(a["runs"][0]["results"][2]["ruleIndex"], 1);
  EXPECT_EQ(a["runs"][0]["tool"]["driver"]["rules"][1]["id"], "keet.kernel-missing");
}

TEST(GateJunit, CountsAndSkippedKernels) {
  auto g = sample();
  g.timestamp = "2026-12-01T07:30:45";
  g.hostname = "runner-1";
  auto xml = gate_junit(g);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("timestamp=\"2026-12-01T07:30:45\" hostname=\"runner-1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped>gone() "), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"performance-regression\" message=\"slow()"), std::string::npos) << xml;
}

}  // namespace
}  // namespace keet::render
