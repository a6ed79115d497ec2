// End-to-end: `keet source` on reports built here and on NVIDIA's sample.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

constexpr uint64_t kStart = 0x7f0000002000;

void add_pc_list(ReportWriter& w, pb::ProfileResult& k, const std::string& name,
                 const std::vector<std::pair<uint64_t, uint64_t>>& pcs) {
  auto* m = k.add_metric_results();
  m->set_name_id(w.name_id(name));
  uint64_t sum = 0;
  for (auto [pc, v] : pcs) {
    auto* e = m->add_instances();
    e->mutable_correlation_id()->set_uint64_value(pc);
    e->mutable_element_value()->set_uint64_value(v);
    sum += v;
  }
  m->mutable_value()->set_uint64_value(sum);
}

// One kernel; with `counters`, per-PC samples and instructions (no cubin, so
// the source view falls back to SASS offsets).
std::string pc_report(const std::string& file, bool counters) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("hot", 8, 128, {{"gpu__time_duration.sum", 1000}});
  add_pc_list(w, k, "launch__function_pcs", {{0, kStart}});
  if (counters) {
    add_pc_list(w, k, "smsp__pcsamp_sample_count", {{kStart, 3}, {kStart + 0x30, 40}, {kStart + 0x50, 7}});
    add_pc_list(w, k, "inst_executed", {{kStart, 64}, {kStart + 0x30, 32}, {kStart + 0x50, 900}});
  }
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return path;
}

TEST(SourceCmd, SassFallbackJson) {
  auto r = run_keet("source --format json " + shell_quote(pc_report("pc.ncu-rep", true)));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& k = j["kernels"][0];
  EXPECT_EQ(k["level"], "sass");
  EXPECT_EQ(k["sorted_by"], "smsp__pcsamp_sample_count");
  ASSERT_EQ(k["lines"].size(), 3u);
  EXPECT_EQ(k["lines"][0]["offset"], 0x30);
  EXPECT_DOUBLE_EQ(k["lines"][0]["share"].get<double>(), 0.8);
  EXPECT_FALSE(k["notes"].empty());
}

TEST(SourceCmd, ByInstructionsAndTop) {
  auto path = pc_report("pc2.ncu-rep", true);
  auto r = run_keet("source --by instructions --top 1 " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("+0x0050"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("+0x0030"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note:"), std::string::npos);
  auto bad = run_keet("source --by no_such__metric " + shell_quote(path));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("no_such__metric"), std::string::npos);
}

TEST(SourceCmd, NoCountersIsANoteAndNoMatchIsTwo) {
  auto path = pc_report("nopc.ncu-rep", false);
  auto r = run_keet("source " + shell_quote(path));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("no per-instruction source counters"), std::string::npos) << r.out;
  auto none = run_keet("source -k nothing_like_this " + shell_quote(path));
  EXPECT_EQ(none.rc, 2);
}

TEST(SourceCmd, NvidiaSampleShowsSourceLines) {
  KEET_REQUIRE_SHARED();
  auto dir = oracle_examples();
  ASSERT_TRUE(dir);
  std::string path = shell_quote(*dir + "/addConstDouble3.ncu-rep");
  auto r = run_keet("source -k 0 " + path);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("uncoalescedGlobalAccesses.cu:30"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("d_in[index]"), std::string::npos) << r.out;
  auto j = run_keet("source -f json --top 0 -k 0 " + path);
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  const auto& k = doc["kernels"][0];
  EXPECT_EQ(k["level"], "source");
  double samples = 0;
  bool line30 = false;
  for (const auto& l : k["lines"]) {
    samples += l["samples"].get<double>();
    if (l["line"] == 30) line30 = l["samples"].get<double>() >= 862;
  }
  EXPECT_DOUBLE_EQ(samples, 4136);
  EXPECT_TRUE(line30);
}

}  // namespace
}  // namespace keet
