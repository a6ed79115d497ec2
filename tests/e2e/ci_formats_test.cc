// End-to-end: keet gate's CI formats (issue 12): SARIF 2.1.0 validated
// against the official schema and located on the kernel's source line, JUnit
// validated against the Jenkins XSD with control characters in kernel names,
// Markdown through a GFM renderer, GitHub workflow commands; and pairing by
// name, --pair, --min-delta, missing and new kernels in every format.
//
// The schemas are not in the repository: scripts/fetch-schemas takes them
// from npm packages into build/test-schemas (scripts/bootstrap runs it); the
// tests that need them run it too and skip, saying why, when it fails.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
namespace fs = std::filesystem;

// A report with one kernel per (name, duration in ns), in that order.
std::string report(const std::string& file, const std::vector<std::pair<std::string, double>>& kernels) {
  ReportWriter w;
  ReportWriter::Block b;
  for (const auto& [name, ns] : kernels) {
    auto k = w.kernel(name, 64, 256, {{"gpu__time_duration.sum", ns}});
    auto* dev = k.add_metric_results();
    dev->set_name_id(w.name_id("device__attribute_display_name"));
    dev->mutable_value()->set_string_value("Test GPU");
    b.results.push_back(k.SerializeAsString());
  }
  w.flush_strings(b);
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return shell_quote(path);
}

std::string db_option(const std::string& name) {
  std::string path = temp_path(name);
  fs::remove(path);
  return " --db " + shell_quote("sqlite:" + path);
}

// build/test-schemas, fetched on first use; nullopt (with the reason) when it cannot be.
std::optional<std::string> schemas(std::string& why) {
  std::string dir = (fs::path(build_dir()) / "test-schemas").string();
  auto r = run_command(shell_quote(source_dir() + "/scripts/fetch-schemas") + " " + shell_quote(dir));
  if (r.rc != 0) {
    why = "schemas unavailable (scripts/fetch-schemas: " + r.err + ")";
    return std::nullopt;
  }
  return dir;
}

// A python3 with jsonschema (Debian python3-jsonschema), or "".
std::string jsonschema_python() {
  for (std::string py : {"python3", "/usr/bin/python3"})
    if (run_command(py + " -c 'import jsonschema' 2>/dev/null").rc == 0) return py;
  return "";
}

// Validates `doc` against the SARIF 2.1.0 schema; "" when valid, else the errors.
std::string sarif_errors(const std::string& schema_dir, const std::string& doc_path) {
  std::string script =
      "import json, sys, jsonschema\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "doc = json.load(open(sys.argv[2]))\n"
      "errors = list(jsonschema.Draft4Validator(schema).iter_errors(doc))\n"
      "for e in errors: print('/'.join(map(str, e.path)), e.message)\n"
      "sys.exit(1 if errors else 0)\n";
  std::string py_file = temp_path("validate_sarif.py");
  std::ofstream(py_file) << script;
  auto r = run_command(jsonschema_python() + " " + shell_quote(py_file) + " " +
                       shell_quote(schema_dir + "/sarif-schema-2.1.0.json") + " " + shell_quote(doc_path));
  return r.rc == 0 ? "" : r.out + r.err + " (rc " + std::to_string(r.rc) + ")";
}

#define REQUIRE_SCHEMAS(dir) \
  std::string why_;          \
  auto dir = schemas(why_);  \
  if (!dir) GTEST_SKIP() << why_;

// --- pairing: by name, never a lone kernel against a differently named one ---

TEST(CiPairing, ARenamedKernelIsMissingPlusNewInEveryFormatNeverOk) {
  std::string db = db_option("ci_rename.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_rename_base.ncu-rep", {{"oldName", 1000}}) + " --tag main" + db).rc, 0);
  auto renamed = report("ci_rename_new.ncu-rep", {{"newName", 5000}});
  auto text = run_keet("gate " + renamed + " --baseline main" + db);
  EXPECT_EQ(text.rc, 0) << "a new kernel is listed, not failed: " << text.out;
  EXPECT_NE(text.out.find("MISSING oldName()"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("NEW newName()"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("ok "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("REGRESSION"), std::string::npos) << text.out;

  auto j = nlohmann::json::parse(run_keet("gate --format json " + renamed + " --baseline main" + db).out);
  EXPECT_EQ(j["schema"], "keet.gate/1");
  EXPECT_EQ(j["missing"], 1);
  EXPECT_EQ(j["new"], 1);
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["status"], "missing");
  EXPECT_EQ(j["kernels"][1]["status"], "new");

  auto sarif = nlohmann::json::parse(run_keet("gate --format sarif " + renamed + " --baseline main" + db).out);
  std::vector<std::string> rules;
  for (const auto& r : sarif["runs"][0]["results"]) rules.push_back(r["ruleId"]);
  EXPECT_EQ(rules, (std::vector<std::string>{"keet.kernel-missing", "keet.kernel-new"}));

  auto junit = run_keet("gate --format junit " + renamed + " --baseline main" + db).out;
  EXPECT_NE(junit.find("classname=\"keet.gate.missing\" name=\"oldName()"), std::string::npos) << junit;
  EXPECT_NE(junit.find("classname=\"keet.gate.new\" name=\"newName()"), std::string::npos) << junit;
  EXPECT_NE(junit.find("skipped=\"2\""), std::string::npos) << junit;

  auto md = run_keet("gate --format markdown " + renamed + " --baseline main" + db).out;
  EXPECT_NE(md.find("| missing | `oldName()`"), std::string::npos) << md;
  EXPECT_NE(md.find("| new | `newName()`"), std::string::npos) << md;

  auto gh = run_keet("gate --format github " + renamed + " --baseline main" + db).out;
  EXPECT_NE(gh.find("::warning title=keet gate%3A kernel missing since the baseline%3A oldName()::"), std::string::npos)
      << gh;
  EXPECT_NE(gh.find("::notice title=keet gate%3A new kernel%2C not gated%3A newName()::"), std::string::npos) << gh;

  // The gate suggests the pair that would gate the renamed kernel, and --pair does.
  EXPECT_NE(
      text.out.find("hint: the gate pairs kernels by name only; if a NEW kernel is a MISSING one renamed, gate it "
                    "with --pair BASELINE:REPORT, e.g. --pair 0:0\n"),
      std::string::npos)
      << text.out;
  auto forced = run_keet("gate " + renamed + " --baseline main --pair 0:0" + db);
  EXPECT_EQ(forced.rc, 1) << "5x slower once paired: " << forced.out;
  EXPECT_NE(forced.out.find("REGRESSION oldName() -> newName()"), std::string::npos) << forced.out;

  // keet diff with --names-only pairs as the gate does ...
  std::string old_report = report("ci_rename_a.ncu-rep", {{"oldName", 1000}});
  auto diff = run_keet("diff --names-only --format json " + old_report + " " + renamed);
  ASSERT_EQ(diff.rc, 0) << diff.err;
  auto dj = nlohmann::json::parse(diff.out);
  EXPECT_TRUE(dj["pairs"].empty()) << diff.out;
  EXPECT_EQ(dj["summary"]["missing"], 1);
  EXPECT_EQ(dj["summary"]["new"], 1);
  EXPECT_EQ(dj["suggested_pairs"], nlohmann::json::parse("[[0, 0]]"));
  auto dt = run_keet("diff --names-only " + old_report + " " + renamed).out;
  EXPECT_NE(dt.find("missing (only in before): #0 oldName()"), std::string::npos) << dt;
  EXPECT_NE(dt.find("new (only in after): #0 newName()"), std::string::npos) << dt;
  EXPECT_NE(dt.find("e.g. --pair 0:0\n"), std::string::npos) << dt;
  // ... and by default pairs the only kernel of each report, saying so.
  auto paired = nlohmann::json::parse(run_keet("diff --format json " + old_report + " " + renamed).out);
  ASSERT_EQ(paired["pairs"].size(), 1u);
  EXPECT_EQ(paired["pairs"][0]["paired_by"], "only_kernel");
  EXPECT_EQ(paired["pairs"][0]["verdict"], "slower");
}

TEST(CiPairing, SameNamedLaunchesPairInOrderAndOthersStayApart) {
  std::string db = db_option("ci_order.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_order_base.ncu-rep", {{"a", 1000}, {"b", 1000}, {"a", 3000}}) + db).rc, 0);
  // b is gone; a's second launch slowed; c is new.
  auto now = report("ci_order_now.ncu-rep", {{"c", 100}, {"a", 1000}, {"a", 6000}});
  auto j = nlohmann::json::parse(run_keet("gate --format json " + now + " --baseline latest" + db).out);
  std::vector<std::string> got;
  for (const auto& k : j["kernels"])
    got.push_back(std::string(k["status"]) + " " + std::string(k["name"]) + " " +
                  (k["before"].is_null() ? "-" : std::to_string(k["before"]["index"].get<int>())) + ":" +
                  (k["after"].is_null() ? "-" : std::to_string(k["after"]["index"].get<int>())));
  EXPECT_EQ(got, (std::vector<std::string>{"regression a() 2:2", "ok a() 0:1", "missing b() 1:-", "new c() -:0"}));
}

TEST(CiPairing, KernelSelectionAppliesToTheBaselineToo) {
  std::string db = db_option("ci_select.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_select_base.ncu-rep", {{"gemm", 1000}, {"other", 1000}}) + db).rc, 0);
  auto now = report("ci_select_now.ncu-rep", {{"gemm", 3000}, {"other", 1000}});
  auto r = run_keet("gate -k regex:^gemm " + now + " --baseline latest" + db);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("REGRESSION gemm()"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("other"), std::string::npos) << "an unselected kernel is not 'missing': " << r.out;
}

TEST(CiPairing, GatePairIsHonouredOrRejectedLoudly) {
  std::string db = db_option("ci_pair.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_pair_base.ncu-rep", {{"before", 1000}}) + db).rc, 0);
  auto now = report("ci_pair_now.ncu-rep", {{"after", 2000}});
  auto forced = run_keet("gate " + now + " --pair 0:0 --baseline latest" + db);
  EXPECT_EQ(forced.rc, 1) << forced.out << forced.err;
  EXPECT_NE(forced.out.find("REGRESSION before() -> after()"), std::string::npos) << forced.out;
  auto missing = run_keet("gate " + now + " --pair 0:5 --baseline latest" + db);
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("--pair 0:5: the report has no kernel 5 (1 kernels)"), std::string::npos) << missing.err;
  auto base = run_keet("gate " + now + " --pair 3:0 --baseline latest" + db);
  EXPECT_EQ(base.rc, 2);
  EXPECT_NE(base.err.find("--pair 3:0: the baseline has no kernel 3"), std::string::npos) << base.err;
  EXPECT_EQ(run_keet("gate " + now + " --pair zero:one --baseline latest" + db).rc, 2);
}

// --- --min-delta: a tiny kernel's noise is not a failure ---

TEST(CiMinDelta, SmallAbsoluteSlowdownPassesLargeOneFails) {
  std::string db = db_option("ci_delta.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_delta_base.ncu-rep", {{"tiny", 1700}, {"big", 100000}}) + db).rc, 0);
  auto now = report("ci_delta_now.ncu-rep", {{"tiny", 1900}, {"big", 110000}});  // +11.8% (200 ns), +10% (10 us)
  auto plain = run_keet("gate " + now + " --baseline latest" + db);
  EXPECT_EQ(plain.rc, 1);
  EXPECT_NE(plain.out.find("FAILED: 2 regression(s)"), std::string::npos) << plain.out;
  auto delta = run_keet("gate " + now + " --min-delta 2us --baseline latest" + db);
  EXPECT_EQ(delta.rc, 1) << delta.out;
  EXPECT_NE(delta.out.find("FAILED: 1 regression(s)"), std::string::npos) << delta.out;
  EXPECT_NE(delta.out.find("REGRESSION big()"), std::string::npos) << delta.out;
  EXPECT_NE(delta.out.find("ok tiny()"), std::string::npos) << delta.out;
  EXPECT_NE(delta.out.find("min delta 2.00 us"), std::string::npos) << delta.out;
  EXPECT_EQ(run_keet("gate " + now + " --min-delta 0.02ms --baseline latest" + db).rc, 0);
  for (std::string bad : {"2", "fast", "-1us", "2 parsecs"}) {
    auto r = run_keet("gate " + now + " --min-delta " + shell_quote(bad) + " --baseline latest" + db);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("--min-delta"), std::string::npos) << r.err;
  }
  auto diff = run_keet("diff --format json --min-delta 500ns " + report("ci_delta_a.ncu-rep", {{"tiny", 1700}}) + " " +
                       report("ci_delta_b.ncu-rep", {{"tiny", 1900}}));
  ASSERT_EQ(diff.rc, 0) << diff.err;
  EXPECT_EQ(nlohmann::json::parse(diff.out)["pairs"][0]["verdict"], "unchanged") << diff.out;
}

// --- JUnit: the Jenkins XSD, with control characters in the kernel name ---

TEST(CiJunit, ValidatesAgainstTheJenkinsXsdWithControlCharactersInNames) {
  REQUIRE_SCHEMAS(dir);
  if (run_command("command -v xmllint").rc != 0) GTEST_SKIP() << "xmllint (libxml2-utils) is not installed";
  std::string evil = "k\x1b[31m\x01<&\"'>\xff";
  std::string db = db_option("ci_junit.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_junit_base.ncu-rep", {{evil, 1000}, {"gone", 10}}) + db).rc, 0);
  auto now = report("ci_junit_now.ncu-rep", {{evil, 3000}, {"fresh", 10}});
  std::string out = temp_path("ci_junit.xml");
  auto g = run_keet("gate --format junit -o " + shell_quote(out) + " " + now + " --baseline latest" + db);
  EXPECT_EQ(g.rc, 1) << g.err;
  std::string xml = read_file(out);
  EXPECT_EQ(xml.find('\x1b'), std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  auto lint =
      run_command("xmllint --noout --schema " + shell_quote(*dir + "/jenkins-junit.xsd") + " " + shell_quote(out));
  EXPECT_EQ(lint.rc, 0) << lint.err << xml;
  for (std::string attr :
       {"tests=\"3\"", "failures=\"1\"", "errors=\"0\"", "skipped=\"2\"", "timestamp=\"", "hostname=\""})
    EXPECT_NE(xml.find(attr), std::string::npos) << attr << "\n" << xml;
  EXPECT_NE(xml.find("name=\"k^[[31m^A&lt;&amp;&quot;&#39;&gt;\xef\xbf\xbd()"), std::string::npos) << xml;
  size_t cases = 0;  // every testcase names its class, itself and its time, in that order
  for (size_t at = xml.find("<testcase "); at != std::string::npos; at = xml.find("<testcase ", at + 1), ++cases) {
    std::string tag = xml.substr(at, xml.find('>', at) - at);
    EXPECT_TRUE(tag.starts_with("<testcase classname=\"keet.gate")) << tag;
    EXPECT_NE(tag.find(" name=\""), std::string::npos) << tag;
    EXPECT_NE(tag.find(" time=\"0.0000"), std::string::npos) << tag;
  }
  EXPECT_EQ(cases, 3u) << xml;
}

// --- SARIF: the official schema, the kernel's source line, stable fingerprints ---

nlohmann::json gate_sarif(const std::string& args, const std::string& out) {
  auto r = run_keet("gate --format sarif -o " + shell_quote(out) + " " + args);
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.err;
  return nlohmann::json::parse(read_file(out));
}

TEST(CiSarif, ValidReportWithoutSourceFallsBackToTheReportPath) {
  REQUIRE_SCHEMAS(dir);
  if (jsonschema_python().empty()) GTEST_SKIP() << "python3-jsonschema is not installed";
  std::string db = db_option("ci_sarif.sqlite");
  ASSERT_EQ(run_keet("record " + report("ci_sarif_base.ncu-rep", {{"k", 1000}, {"gone", 5}}) + db).rc, 0);
  std::string now_path = temp_path("ci_sarif_now.ncu-rep");
  auto now = report("ci_sarif_now.ncu-rep", {{"k", 2000}, {"fresh", 5}});
  std::string out = temp_path("ci_sarif.sarif");
  auto j = gate_sarif(now + " --baseline latest" + db, out);
  EXPECT_EQ(sarif_errors(*dir, out), "");
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["version"], KEET_VERSION);
  EXPECT_FALSE(run["tool"]["driver"]["informationUri"].get<std::string>().empty());
  ASSERT_EQ(run["tool"]["driver"]["rules"].size(), 3u);
  for (const auto& rule : run["tool"]["driver"]["rules"]) EXPECT_FALSE(rule["help"]["text"].get<std::string>().empty());
  ASSERT_EQ(run["results"].size(), 3u);
  const auto& reg = run["results"][0];
  EXPECT_EQ(reg["ruleId"], "keet.regression");
  EXPECT_EQ(reg["level"], "error");
  EXPECT_EQ(reg["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file://" + now_path);
  EXPECT_FALSE(reg["locations"][0]["physicalLocation"].contains("region"));
  EXPECT_EQ(reg["locations"][0]["logicalLocations"][0]["decoratedName"], "_Z1kv");
  // The same verdict on another run gives the same fingerprints; another kernel another one.
  auto again = gate_sarif(now + " --baseline latest" + db, temp_path("ci_sarif2.sarif"));
  std::set<std::string> prints;
  for (size_t i = 0; i < 3; ++i) {
    auto fp = run["results"][i]["partialFingerprints"]["keetKernel/v1"];
    EXPECT_EQ(fp, again["runs"][0]["results"][i]["partialFingerprints"]["keetKernel/v1"]);
    prints.insert(fp);
  }
  EXPECT_EQ(prints.size(), 3u);
}

// NVIDIA's sample pair was profiled from a -lineinfo build: the result sits on
// the kernel's line in uncoalescedGlobalAccesses.cu, relative to --source-root.
TEST(CiSarif, NvidiaSampleResultLandsOnTheKernelsSourceLine) {
  KEET_REQUIRE_SHARED();
  REQUIRE_SCHEMAS(dir);
  if (jsonschema_python().empty()) GTEST_SKIP() << "python3-jsonschema is not installed";
  auto examples = oracle_examples();
  if (!examples) GTEST_SKIP() << "ncu-oracle examples unavailable";
  std::string db = db_option("ci_nvidia.sqlite");
  ASSERT_EQ(run_keet("record " + shell_quote(*examples + "/addConstDouble.ncu-rep") + db).rc, 0);
  auto src = run_keet("source --format json --top 1 " + shell_quote(*examples + "/addConstDouble3.ncu-rep"));
  ASSERT_EQ(src.rc, 0) << src.err;
  std::string file = nlohmann::json::parse(src.out)["kernels"][0]["lines"][0]["file"];
  ASSERT_FALSE(file.empty());
  std::string root = fs::path(file).parent_path().parent_path().string();
  std::string out = temp_path("ci_nvidia.sarif");
  auto j = gate_sarif(shell_quote(*examples + "/addConstDouble3.ncu-rep") + " --pair 0:0 --baseline latest" +
                          " --source-root " + shell_quote(root) + db,
                      out);
  EXPECT_EQ(sarif_errors(*dir, out), "");
  const auto& run = j["runs"][0];
  ASSERT_FALSE(run["results"].empty()) << j.dump(2);
  const auto& loc = run["results"][0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(loc["artifactLocation"]["uri"], fs::path(file).lexically_relative(root).string());
  EXPECT_GT(loc["region"]["startLine"].get<int>(), 0);
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file://" + root + "/");
  // The findings the slower kernel introduced point at the lines where its time goes.
  const auto& related = run["results"][0]["relatedLocations"];
  ASSERT_FALSE(related.empty()) << run["results"][0].dump(2);
  bool uncoalesced = false;
  for (const auto& r : related) {
    EXPECT_EQ(r["physicalLocation"]["artifactLocation"]["uriBaseId"], "SRCROOT");
    uncoalesced |=
        r["message"]["text"].get<std::string>().starts_with("finding introduced: memory.uncoalesced_global") &&
        r["physicalLocation"]["region"]["startLine"] == 30;  // d_in[index] (keet source shows it)
  }
  EXPECT_TRUE(uncoalesced) << related.dump(2);
  // In GitHub Actions the checkout ($GITHUB_WORKSPACE) is the default root.
  auto gh = run_command("GITHUB_WORKSPACE=" + shell_quote(root) + " " + keet_binary() + " gate --format github " +
                        shell_quote(*examples + "/addConstDouble3.ncu-rep") + " --pair 0:0 --baseline latest" + db);
  EXPECT_NE(gh.out.find("::error file=" + fs::path(file).lexically_relative(root).string() +
                        ",line=" + std::to_string(loc["region"]["startLine"].get<int>()) + ","),
            std::string::npos)
      << gh.out;
}

// Real reports of many ncu versions and GPUs: each gated against itself with
// its first two kernels crossed (--pair 0:1 --pair 1:0), so one of them is a
// regression unless they take the same time, and the rest pair by name. Both logs must pass their schemas.
TEST(CiSchemas, FixtureReportsGiveValidSarifAndJunit) {
  KEET_REQUIRE_SHARED();
  REQUIRE_SCHEMAS(dir);
  if (jsonschema_python().empty()) GTEST_SKIP() << "python3-jsonschema is not installed";
  if (run_command("command -v xmllint").rc != 0) GTEST_SKIP() << "xmllint (libxml2-utils) is not installed";
  auto reports = fixture_reports();
  std::erase_if(reports, [](const std::string& r) { return fs::file_size(r) > (8u << 20); });  // keep it quick
  constexpr size_t kChecked = 6;
  int validated = 0;
  for (size_t i = 0; i < reports.size() && validated < int(kChecked);
       i += std::max<size_t>(1, reports.size() / kChecked)) {
    std::string rep = shell_quote(reports[i]), db = db_option("ci_fixture.sqlite");
    if (run_keet("record " + rep + db).rc != 0) continue;
    std::string args = rep + " --pair 0:1 --pair 1:0 --max-slowdown 0.1% --baseline latest" + db;
    std::string sarif = temp_path("ci_fixture.sarif"), junit = temp_path("ci_fixture.xml");
    auto s = run_keet("gate --format sarif -o " + shell_quote(sarif) + " " + args);
    if (s.rc == 2) continue;                                             // fewer than two kernels
    EXPECT_TRUE(s.rc == 0 || s.rc == 1) << reports[i] << ": " << s.err;  // 0 when the two take the same time
    EXPECT_EQ(sarif_errors(*dir, sarif), "") << reports[i];
    auto j = run_keet("gate --format junit -o " + shell_quote(junit) + " " + args);
    EXPECT_EQ(j.rc, s.rc) << reports[i] << ": " << j.err;
    auto lint =
        run_command("xmllint --noout --schema " + shell_quote(*dir + "/jenkins-junit.xsd") + " " + shell_quote(junit));
    EXPECT_EQ(lint.rc, 0) << reports[i] << ": " << lint.err;
    ++validated;
  }
  EXPECT_GE(validated, 3) << "too few fixture reports with two kernels";
}

// --- Markdown for the step summary, GitHub workflow commands ---

TEST(CiMarkdown, TableSurvivesAGfmRendererWithPipesInNames) {
  std::string db = db_option("ci_md.sqlite");
  std::string pipe = "op|<b>x</b>";
  ASSERT_EQ(run_keet("record " + report("ci_md_base.ncu-rep", {{pipe, 1000}, {"b", 10}}) + db).rc, 0);
  auto now = report("ci_md_now.ncu-rep", {{pipe, 2000}, {"b", 10}, {"n", 1}});
  auto md = run_keet("gate --format markdown " + now + " --baseline latest" + db);
  EXPECT_EQ(md.rc, 1);
  EXPECT_NE(md.out.find("## keet gate: FAILED, 1 regression(s)"), std::string::npos) << md.out;
  if (run_command("command -v cmark-gfm").rc != 0) GTEST_SKIP() << "cmark-gfm is not installed";
  std::string path = temp_path("ci_gate.md");
  std::ofstream(path) << md.out;
  auto html = run_command("cmark-gfm -e table " + shell_quote(path));
  ASSERT_EQ(html.rc, 0) << html.err;
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = html.out.find(s); at != std::string::npos; at = html.out.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<tr>"), 4u) << html.out;     // header + 3 kernels
  EXPECT_EQ(count("<td"), 3u * 7) << html.out;  // every row keeps its 7 cells
  EXPECT_NE(html.out.find("<code>op|&lt;b&gt;x&lt;/b&gt;()</code>"), std::string::npos) << html.out;
  EXPECT_EQ(html.out.find("<b>"), std::string::npos) << html.out;
  EXPECT_EQ(html.out.find("raw HTML omitted"), std::string::npos) << html.out;
}

TEST(CiGithub, WorkflowCommandPropertiesAreEscaped) {
  std::string db = db_option("ci_gh.sqlite");
  std::string name = "k%,:\nx";
  ASSERT_EQ(run_keet("record " + report("ci_gh_base.ncu-rep", {{name, 1000}}) + db).rc, 0);
  auto gh = run_keet("gate --format github " + report("ci_gh_now.ncu-rep", {{name, 5000}}) + " --baseline latest" + db);
  EXPECT_EQ(gh.rc, 1);
  EXPECT_NE(gh.out.find("::error title=keet gate%3A performance regression%3A k%25%2C%3A%0Ax()::k%25,:%0Ax() ("),
            std::string::npos)
      << gh.out;
  for (size_t at = 0; at < gh.out.size();) {  // every line is a command or a plain "keet gate:" line
    size_t end = gh.out.find('\n', at);
    std::string line = gh.out.substr(at, end - at);
    EXPECT_TRUE(line.starts_with("::error ") || line.starts_with("keet gate: ")) << line;
    at = end == std::string::npos ? gh.out.size() : end + 1;
  }
}

}  // namespace
}  // namespace keet
