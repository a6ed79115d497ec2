// Cubin line tables (readers/cubin) and per-line source costs
// (analysis/source_costs): NVIDIA's sample report, every fixture, cubins the
// test builds itself, and damaged cubins.
#include <cstring>
#include <random>

#include "analysis/source_costs.h"
#include "readers/cubin.h"
#include "readers/reader.h"
#include "support/cubin_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using testing::LineTableCubin;
using TestCubin = LineTableCubin;

// --------------------------------------------------------- built cubins

TEST(SourceCubin, BuiltCubinMapsPcsToLines) {
  TestCubin tc;
  auto c = readers::Cubin::parse(tc.bytes());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->warnings().empty());
  const auto* sym = c->symbol(tc.kernel);
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(sym->value, tc.kernel_pc);
  EXPECT_EQ(sym->size, tc.kernel_size);
  ASSERT_TRUE(c->has_line_info());
  for (size_t i = 0; i < tc.lines.size(); ++i) {
    auto loc = c->location(tc.kernel_pc + 32 * i + 16);
    ASSERT_TRUE(loc) << i;
    EXPECT_EQ(loc->line, static_cast<uint32_t>(tc.lines[i]));
    EXPECT_EQ(loc->file, "/src/dir/kern.cu");
  }
  EXPECT_FALSE(c->location(tc.kernel_pc - 16));
  EXPECT_FALSE(c->location(tc.kernel_pc + 32 * tc.lines.size()));
}

TEST(SourceCubin, RelocationAppliedWhenSiteHoldsOnlyTheAddend) {
  TestCubin tc;
  tc.prerelocated = false;  // an ordinary REL site: implicit addend 0
  auto c = readers::Cubin::parse(tc.bytes());
  ASSERT_TRUE(c) << c.error().message;
  auto loc = c->location(tc.kernel_pc + 40);
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc->line, 12u);
}

TEST(SourceCubin, UnknownRelocationTypeWarnsAndKeepsSymbols) {
  TestCubin tc;
  tc.prerelocated = false;
  tc.reloc_type = 77;
  auto c = readers::Cubin::parse(tc.bytes());
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->warnings().size(), 1u);
  EXPECT_NE(c->warnings()[0].find("relocation type 77"), std::string::npos);
  EXPECT_NE(c->symbol(tc.kernel), nullptr);
  EXPECT_FALSE(c->location(tc.kernel_pc));  // addresses stayed unrelocated (0-based)
}

TEST(SourceCubin, RejectsNonCudaAndNonElf) {
  TestCubin tc;
  tc.machine = 62;  // x86-64
  auto c = readers::Cubin::parse(tc.bytes());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("EM_CUDA"), std::string::npos);
  EXPECT_FALSE(readers::Cubin::parse(""));
  EXPECT_FALSE(readers::Cubin::parse("not an elf at all"));
  EXPECT_FALSE(
      readers::Cubin::parse(std::string("\x7f"
                                        "ELF",
                                        4)));
}

// Every prefix and many random corruptions of `bytes` must parse or fail
// cleanly; whatever parses must answer lookups.
void expect_no_crash_on_damage(const std::string& bytes, uint64_t probe_pc) {
  for (size_t n = 0; n < bytes.size(); n += (n < 512 ? 1 : 7)) {
    auto c = readers::Cubin::parse(bytes.substr(0, n));
    if (c) (void)c->location(probe_pc);
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 1 + i % 8; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    auto c = readers::Cubin::parse(b);
    if (c) (void)c->location(probe_pc);
  }
}

TEST(SourceCubin, DamagedBuiltCubinNeverCrashes) {
  TestCubin tc;
  expect_no_crash_on_damage(tc.bytes(), tc.kernel_pc + 8);
}

// Damage aimed at the line program only, so the ELF stays readable and the
// bytes reach libdwarf's decoder.
TEST(SourceCubin, DamagedLineProgramWarnsOrDecodes) {
  TestCubin tc;
  const std::string good = tc.bytes();
  size_t program = good.find("/src/dir") - 30;  // inside .debug_line's header
  std::mt19937 rng(99);
  int decoded = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string b = good;
    for (int k = 0; k < 1 + i % 4; ++k) b[program + rng() % 90] = static_cast<char>(rng());
    auto c = readers::Cubin::parse(b);
    ASSERT_TRUE(c) << "the ELF itself is intact: " << c.error().message;
    EXPECT_NE(c->symbol(tc.kernel), nullptr);
    decoded += c->has_line_info();
    (void)c->location(tc.kernel_pc + 8);
  }
  EXPECT_GT(decoded, 0);
}

// ---------------------------------------------------- tables from a model

model::Metric pc_list(const std::string& name, const std::vector<std::pair<uint64_t, uint64_t>>& pcs) {
  model::Metric m{name, {}, {}, ""};
  uint64_t sum = 0;
  for (auto [pc, v] : pcs) m.instances.push_back({model::Value::of_uint(pc), model::Value::of_uint(v)}), sum += v;
  m.value = model::Value::of_uint(sum);
  return m;
}

// A report with one kernel at tc.kernel_pc: samples and instructions on PCs
// in lines 10 (+0x00, +0x10), 12 (+0x20) and 11 (+0x40).
model::Report built_report(const TestCubin& tc, bool with_cubin) {
  model::Report r;
  model::Module mod;
  if (with_cubin) mod.binary = model::Blob(tc.bytes(), nullptr);
  mod.files.push_back({"/elsewhere/kern.cu", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nsum += a[i];\nl11\nb[i] = sum;\n"});
  r.modules[7] = mod;
  model::Kernel k;
  k.mangled = tc.kernel;
  k.source_ref = 7;
  uint64_t b = tc.kernel_pc;
  k.metrics.push_back(pc_list("launch__function_pcs", {{0, b}}));
  k.metrics.push_back(pc_list("smsp__pcsamp_sample_count", {{b, 5}, {b + 0x10, 7}, {b + 0x20, 30}, {b + 0x40, 8}}));
  k.metrics.push_back(pc_list("smsp__pcsamp_warps_issue_stalled_long_scoreboard", {{b + 0x20, 25}, {b, 1}}));
  k.metrics.push_back(pc_list("inst_executed", {{b, 100}, {b + 0x10, 100}, {b + 0x20, 50}, {b + 0x40, 10}}));
  k.metrics.push_back(pc_list("memory_type", {{b + 0x20, 4}}));                          // enum code: not summed
  k.metrics.push_back(pc_list("launch__occupancy_per_block_size", {{32, 8}, {64, 8}}));  // not PCs
  r.kernels.push_back(std::move(k));
  return r;
}

TEST(SourceCosts, BuiltReportSumsPerLine) {
  TestCubin tc;
  auto r = built_report(tc, true);
  auto t = analysis::source_table(r, r.kernels[0]);
  ASSERT_EQ(t.level, analysis::SourceLevel::Source);
  ASSERT_EQ(t.lines.size(), 3u);
  EXPECT_EQ(t.sorted_by, "smsp__pcsamp_sample_count");
  EXPECT_EQ(t.lines[0].line, 12);  // 30 samples
  EXPECT_EQ(t.lines[0].text, "b[i] = sum;");
  EXPECT_DOUBLE_EQ(t.lines[0].samples(), 30);
  EXPECT_DOUBLE_EQ(t.share(t.lines[0], "smsp__pcsamp_sample_count"), 0.6);
  EXPECT_EQ(t.lines[1].line, 10);  // 5 + 7 samples over two PCs
  EXPECT_DOUBLE_EQ(t.lines[1].samples(), 12);
  EXPECT_DOUBLE_EQ(t.lines[1].executed_instructions(), 200);
  EXPECT_EQ(t.lines[1].instructions_mapped, 2);
  EXPECT_EQ(t.lines[1].text, "sum += a[i];");
  auto stalls = t.lines[0].stalls();
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].first, "long_scoreboard");
  EXPECT_FALSE(t.has("memory_type"));
  EXPECT_FALSE(t.has("launch__occupancy_per_block_size"));
  EXPECT_FALSE(t.has("launch__function_pcs"));
}

TEST(SourceCosts, SortByOtherMetricAndHottestLines) {
  TestCubin tc;
  auto r = built_report(tc, true);
  auto t = analysis::source_table(r, r.kernels[0]);
  analysis::sort_by(t, analysis::resolve_metric("instructions"));
  EXPECT_EQ(t.lines[0].line, 10);
  auto refs = analysis::hottest_lines(t, "long_scoreboard", 5);
  ASSERT_EQ(refs.size(), 2u);  // only lines with a positive value
  EXPECT_EQ(refs[0].line, 12);
  EXPECT_NEAR(refs[0].share, 25.0 / 26.0, 1e-12);
  EXPECT_EQ(refs[0].file, "/src/dir/kern.cu");
  EXPECT_TRUE(analysis::hottest_lines(t, "no_such_metric", 3).empty());
  auto one = analysis::hottest_lines_for(r, r.kernels[0], "samples", 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].line, 12);
}

TEST(SourceCosts, SassViewWithoutCubin) {
  TestCubin tc;
  auto r = built_report(tc, false);
  auto t = analysis::source_table(r, r.kernels[0]);
  ASSERT_EQ(t.level, analysis::SourceLevel::Sass);
  ASSERT_EQ(t.lines.size(), 4u);
  EXPECT_EQ(t.lines[0].offset, 0x20u);
  EXPECT_TRUE(t.lines[0].is_sass());
  EXPECT_FALSE(t.notes.empty());
  auto refs = analysis::hottest_lines(t, "samples", 1);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].text, "SASS +0x20");
}

TEST(SourceCosts, NoSourceCountersGivesNote) {
  TestCubin tc;
  auto r = built_report(tc, true);
  auto& ms = r.kernels[0].metrics;
  ms.erase(ms.begin() + 1, ms.end());  // keep launch__function_pcs only
  auto t = analysis::source_table(r, r.kernels[0]);
  EXPECT_EQ(t.level, analysis::SourceLevel::None);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("source counters"), std::string::npos);
}

TEST(SourceCosts, BrokenCubinFallsBackToSass) {
  TestCubin tc;
  auto r = built_report(tc, true);
  r.modules[7].binary = model::Blob(r.modules[7].binary.view().substr(0, 40), nullptr);  // cut inside the ELF header
  auto t = analysis::source_table(r, r.kernels[0]);
  EXPECT_EQ(t.level, analysis::SourceLevel::Sass);
  EXPECT_EQ(t.lines.size(), 4u);
}

// ------------------------------------------------------ NVIDIA's sample

std::optional<model::Report> sample_report() {
  auto dir = testing::oracle_examples();
  if (!dir) return std::nullopt;
  auto r = readers::load_file(*dir + "/addConstDouble3.ncu-rep");
  if (!r) return std::nullopt;
  return std::move(*r);
}

TEST(SourceCubin, SampleLineTableMatchesReadelf) {
  KEET_REQUIRE_SHARED();
  auto r = sample_report();
  ASSERT_TRUE(r);
  const auto* mod = r->module_for(r->kernels[0]);
  ASSERT_NE(mod, nullptr);
  auto c = readers::Cubin::parse(mod->binary.view());
  ASSERT_TRUE(c) << c.error().message;
  const auto* sym = c->symbol("_Z15addConstDouble3iP7double3dS0_");
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(sym->value, 0x7f3d64fb1b00u);
  EXPECT_EQ(sym->size, 512u);
  const auto* other = c->symbol("_Z14addConstDoubleiPddS_");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->value, 0x7f3d64fb1100u);
  EXPECT_EQ(other->size, 384u);
  const std::vector<std::pair<uint64_t, uint32_t>> expected = {
      {0x7f3d64fb1b00, 25}, {0x7f3d64fb1b10, 27}, {0x7f3d64fb1b40, 28}, {0x7f3d64fb1b60, 30},
      {0x7f3d64fb1b90, 30}, {0x7f3d64fb1bc0, 34}, {0x7f3d64fb1bd0, 31}, {0x7f3d64fb1c30, 36}};
  for (auto [pc, line] : expected) {
    auto loc = c->location(pc);
    ASSERT_TRUE(loc) << std::hex << pc;
    EXPECT_EQ(loc->line, line) << std::hex << pc;
    EXPECT_TRUE(loc->file.ends_with("uncoalescedGlobalAccesses.cu")) << loc->file;
  }
  EXPECT_FALSE(c->location(0x7f3d64fb1d00));  // end of the sequence
}

TEST(SourceCosts, SampleHottestLineIsTheLoad) {
  KEET_REQUIRE_SHARED();
  auto r = sample_report();
  ASSERT_TRUE(r);
  auto t = analysis::source_table(*r, r->kernels[0]);
  ASSERT_EQ(t.level, analysis::SourceLevel::Source);
  EXPECT_EQ(t.kernel_start, 0x7f3d64fb1b00u);
  // Totals equal the report's own scalars (sum of the per-PC lists).
  EXPECT_DOUBLE_EQ(t.totals.at("smsp__pcsamp_sample_count"), 4136);
  EXPECT_DOUBLE_EQ(t.totals.at("inst_executed"), 655360);
  EXPECT_DOUBLE_EQ(t.totals.at("derived__memory_l2_theoretical_sectors_global_excessive"), 3145728);
  double all = 0;
  for (const auto& row : t.lines) all += row.samples();
  EXPECT_DOUBLE_EQ(all, 4136);
  const analysis::SourceLineCost* line30 = nullptr;
  for (const auto& row : t.lines)
    if (row.line == 30) line30 = &row;
  ASSERT_NE(line30, nullptr);
  EXPECT_GE(line30->samples(), 862);  // the LDG at 0x...1b90 alone has 862
  EXPECT_NE(line30->text.find("d_in[index]"), std::string::npos) << line30->text;
  EXPECT_FALSE(line30->stalls().empty());
}

TEST(SourceCubin, SampleCubinDamageNeverCrashes) {
  KEET_REQUIRE_SHARED();
  auto r = sample_report();
  ASSERT_TRUE(r);
  expect_no_crash_on_damage(std::string(r->module_for(r->kernels[0])->binary.view()), 0x7f3d64fb1b90);
}

// Every fixture with source counters: the table builds, its rows add up to
// the per-PC totals, and line rows carry a positive line number.
TEST(SourceCosts, AllFixturesBuildTables) {
  KEET_REQUIRE_SHARED();
  readers::ReadOptions opt;
  opt.allow_partial = true;
  int tables = 0;
  for (const auto& path : testing::fixture_reports()) {
    auto r = readers::load_file(path, opt);
    if (!r) continue;
    for (const auto& k : r->kernels) {
      auto t = analysis::source_table(*r, k);
      if (t.level == analysis::SourceLevel::None) continue;
      ++tables;
      double sum = 0;
      for (const auto& row : t.lines) sum += row.value(t.sorted_by);
      EXPECT_NEAR(sum, t.totals[t.sorted_by], 1e-6 * (1 + sum)) << path;
    }
  }
  EXPECT_GT(tables, 0);
}

}  // namespace
}  // namespace keet
