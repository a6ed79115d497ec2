// End-to-end: every JSON document keet writes conforms to its schema under
// schemas/ (docs/contracts.md), on reports built by the test writer and on the
// real fixtures; and the schemas are strict enough that a renamed, missing or
// mistyped field fails. The validator is scripts/validate-json (Debian's
// python3-jsonschema).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "support/fake_llm_server.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using json = nlohmann::json;

std::string write_text(const std::string& name, const std::string& text) {
  std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// Runs the validator on files already written; rc 0 valid, 1 invalid, 2 unusable.
ProcessResult validate_files(const std::string& schema, const std::vector<std::string>& files) {
  std::string cmd = shell_quote(source_dir() + "/scripts/validate-json") + " " +
                    shell_quote(source_dir() + "/schemas/" + schema + ".schema.json");
  for (const auto& f : files) cmd += " " + shell_quote(f);
  return run_command(cmd);
}

ProcessResult validate(const std::string& schema, const std::string& text) {
  return validate_files(schema, {write_text("contract-" + schema + ".json", text)});
}

void expect_conforms(const std::string& schema, const ProcessResult& command) {
  ASSERT_EQ(command.rc, 0) << schema << ": " << command.err;
  auto v = validate(schema, command.out);
  EXPECT_EQ(v.rc, 0) << schema << " output does not conform:\n" << v.out << v.err;
}

std::string writer_report(const std::string& name, double duration_ns) {
  std::string path = temp_path(name);
  write_file(path, scenario_and_tiny_report(duration_ns));
  return path;
}

TEST(Contracts, ValidatorIsInstalled) {
  auto r = run_command("/usr/bin/python3 -c 'import jsonschema'");
  ASSERT_EQ(r.rc, 0) << "python3-jsonschema is missing: run scripts/bootstrap (" << r.err << ")";
}

TEST(Contracts, EverySchemaIsAValidSchemaAndNamedInTheContractsDoc) {
  std::ifstream doc(source_dir() + "/docs/contracts.md");
  std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty()) << "docs/contracts.md is missing";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/schemas")) {
    std::string file = e.path().filename().string();
    ++n;
    EXPECT_NE(text.find("schemas/" + file), std::string::npos) << file << " is not described in docs/contracts.md";
    // An empty document fails every schema here (each requires fields): the schema itself loads.
    auto v = validate(file.substr(0, file.find('.')), "{}");
    EXPECT_EQ(v.rc, 1) << file << ": " << v.out << v.err;
  }
  EXPECT_GE(n, 13);
}

TEST(Contracts, WriterReportOutputsConform) {
  std::string before = shell_quote(writer_report("contract-before.ncu-rep", 120000));
  std::string after = shell_quote(writer_report("contract-after.ncu-rep", 90000));
  expect_conforms("analysis", run_keet("analyze --format json " + before));
  expect_conforms("doctor", run_keet("doctor --format json " + before));
  expect_conforms("list", run_keet("list --format json " + before));
  expect_conforms("metrics", run_keet("metrics --format json " + before));
  // Several reports (each kernel names its report) and auto-scaled units.
  expect_conforms("list", run_keet("list --format json " + before + " " + after));
  expect_conforms("list", run_keet("list --format json --print-summary per-kernel " + before + " " + after));
  expect_conforms("metrics", run_keet("metrics --format json --print-units auto " + before + " " + after));
  expect_conforms("export", run_keet("export --format json " + before));
  expect_conforms("coverage", run_keet("coverage --format json " + before));
  expect_conforms("source", run_keet("source --format json " + before));
  expect_conforms("diff", run_keet("diff --format json " + before + " " + after));
  std::string db = temp_path("contract-history.sqlite");
  std::filesystem::remove(db);
  ASSERT_EQ(run_keet("record " + before + " --tag a --db " + shell_quote(db)).rc, 0);
  ASSERT_EQ(run_keet("record " + after + " --tag b --db " + shell_quote(db)).rc, 0);
  expect_conforms("history", run_keet("history --format json --db " + shell_quote(db)));
}

TEST(Contracts, ReportFreeOutputsConform) {
  for (std::string cc : {"7.0", "8.6", "9.0"})
    expect_conforms("occupancy",
                    run_keet("occupancy --format json --cc " + cc + " --threads 256 --regs 64 --smem 16384"));
  for (std::string q : {"long_scoreboard", "memory.uncoalesced_global", "dram__throughput", "'why are my loads slow'"})
    expect_conforms("explain", run_keet("explain --format json " + q));
}

TEST(Contracts, LlmOutputsConform) {
  FakeLlmServer server;
  // The narrative of analyze --llm (a structured answer with a suggestion), then ask's reply.
  json narrative = {
      {"summary", "DRAM throughput is 81% of peak; the kernel is memory-bound."},
      {"reasoning", "The engine classifies the kernel as memory-bound."},
      {"suggestions", json::array({{{"text", "Coalesce the loads."}, {"finding", "memory.dram_bandwidth"}}})},
      {"questions", json::array()},
      {"confidence", 0.8}};
  server.script({200, openai_text_reply(narrative.dump())});
  server.script({200, openai_text_reply("DRAM throughput is 81% of peak.")});
  std::string env = "XDG_CACHE_HOME=" + shell_quote(temp_path("contract-cache")) +
                    " XDG_CONFIG_HOME=/nonexistent OPENAI_API_KEY=sk-test OPENAI_BASE_URL=" + server.url() + "/v1 ";
  std::string rep = shell_quote(writer_report("contract-llm.ncu-rep", 120000));
  std::string keet = env + keet_binary() + " ";
  auto analyzed = run_command(keet + "analyze -k 0 --no-cache --format json --llm openai:m " + rep);
  expect_conforms("analysis", analyzed);
  EXPECT_EQ(json::parse(analyzed.out)["kernels"][0]["llm"]["status"], "verified") << analyzed.out;
  std::string transcript = temp_path("contract-transcript.json");
  expect_conforms("ask", run_command(keet + "ask " + rep + " why --no-cache --format json --llm openai:m --save " +
                                     shell_quote(transcript)));
  auto v = validate_files("chat", {transcript});
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

// Each mutation is a contract break a consumer would notice: the schema must see it too.
TEST(Contracts, MutatedOutputFails) {
  auto r = run_keet("analyze --format json " + shell_quote(writer_report("contract-mut.ncu-rep", 120000)));
  ASSERT_EQ(r.rc, 0) << r.err;
  json good = json::parse(r.out);
  ASSERT_FALSE(good["kernels"][0]["findings"].empty()) << "the writer report must give a finding";
  ASSERT_EQ(validate("analysis", good.dump()).rc, 0);
  std::vector<std::pair<std::string, std::function<void(json&)>>> mutations = {
      {"renamed class",
       [](json& j) {
         auto& b = j["kernels"][0]["bottleneck"];
         b["kind"] = b["class"];
         b.erase("class");
       }},
      {"missing severity", [](json& j) { j["kernels"][0]["findings"][0].erase("severity"); }},
      {"unknown severity", [](json& j) { j["kernels"][0]["findings"][0]["severity"] = "critical"; }},
      {"unknown class", [](json& j) { j["kernels"][0]["bottleneck"]["class"] = "io"; }},
      {"unknown outcome", [](json& j) { j["kernels"][0]["data_quality"]["outcome"] = "fine"; }},
      {"speedup as text", [](json& j) { j["kernels"][0]["findings"][0]["estimated_speedup"] = "1.5x"; }},
      {"relieves not a list", [](json& j) { j["kernels"][0]["findings"][0]["relieves"] = "dram"; }},
      {"missing limiter", [](json& j) { j["kernels"][0].erase("limiter"); }},
      {"undocumented field", [](json& j) { j["kernels"][0]["hotness"] = 1; }},
      {"other version", [](json& j) { j["schema"] = "keet.analysis/2"; }},
  };
  for (const auto& [what, mutate] : mutations) {
    json bad = good;
    mutate(bad);
    auto v = validate("analysis", bad.dump());
    EXPECT_EQ(v.rc, 1) << what << " was accepted";
    EXPECT_NE(v.out.find(": /"), std::string::npos) << what << ": the violation names no place: " << v.out;
  }
  // keet.diff/1: a renamed verdict, or a verdict outside its set.
  std::string rep = shell_quote(temp_path("contract-mut.ncu-rep"));
  auto d = run_keet("diff --format json " + rep + " " + rep);
  ASSERT_EQ(d.rc, 0) << d.err;
  json diff = json::parse(d.out);
  ASSERT_FALSE(diff["pairs"].empty());
  json renamed = diff, odd = diff;
  renamed["pairs"][0]["result"] = renamed["pairs"][0]["verdict"];
  renamed["pairs"][0].erase("verdict");
  odd["pairs"][0]["verdict"] = "better";
  EXPECT_EQ(validate("diff", renamed.dump()).rc, 1);
  EXPECT_EQ(validate("diff", odd.dump()).rc, 1);
}

// One validator run per command over every fixture's output.
void expect_fixture_outputs_conform(const std::string& schema,
                                    const std::function<std::string(const std::string&)>& args) {
  std::vector<std::string> files;
  auto reports = fixture_reports();
  for (size_t i = 0; i < reports.size(); ++i) {
    auto r = run_keet(args(shell_quote(reports[i])));
    if (r.out.empty()) {  // an unreadable fixture: exit 2 and one line, covered by the reader tests
      EXPECT_EQ(r.rc, 2) << schema << " on " << reports[i] << ": " << r.err;
      continue;
    }
    files.push_back(write_text(fmt::format("contract-fixture-{}-{}.json", schema, i), r.out));
  }
  ASSERT_GT(files.size(), reports.size() / 2) << schema << ": most fixtures must give output";
  auto v = validate_files(schema, files);
  EXPECT_EQ(v.rc, 0) << schema << " on the fixtures:\n" << v.out << v.err;
  for (const auto& f : files) std::filesystem::remove(f);
}

// One case per schema (its ctest name ends in /"schema"), so the sanitize
// stage can leave out a sweep another sanitized test already makes
// (.ci/run SANITIZE_EXCLUDE).
std::string fixture_sweep_command(const std::string& schema, const std::string& report) {
  // Each report against itself in diff: every kernel pairs, so every pair field is written.
  if (schema == "diff") return "diff --format json " + report + " " + report;
  return (schema == "analysis" ? "analyze" : schema) + " --format json " + report;
}

class FixtureOutputs : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureOutputs, Conform) {
  KEET_REQUIRE_SHARED();
  ASSERT_FALSE(fixture_reports().empty());
  expect_fixture_outputs_conform(GetParam(), [](const std::string& r) { return fixture_sweep_command(GetParam(), r); });
}

INSTANTIATE_TEST_SUITE_P(Contracts, FixtureOutputs,
                         ::testing::Values("analysis", "doctor", "list", "metrics", "export", "coverage", "source",
                                           "diff"));

}  // namespace
}  // namespace keet
