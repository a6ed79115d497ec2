// ncu's --nvtx-include/--nvtx-exclude on reading commands. No fixture report
// carries NVTX state (ProfileResult field 21, written by ncu --nvtx), so the
// reports are built here with the tests' writer, in the layout of NVIDIA's
// Nvtx.proto; where ../shared has ncu 2024.1, its own filtering of the same
// files is the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using nlohmann::json;

constexpr uint64_t kThread = 4242, kDefaultDomain = 0, kLoopDomain = 7;

struct Launch {
  std::string name;
  std::vector<std::string> stack;               // default domain, bottom first
  bool in_epoch = false;                        // start/end range "Epoch" of domain "Loop" open
  std::vector<std::string> other_thread_stack;  // another thread's stack (must not count)
};

pb::ProfileResult nvtx_kernel(ReportWriter& w, const Launch& l, double ns) {
  auto k = w.kernel(l.name, 64, 256, {{"gpu__time_duration.sum", ns}});
  k.set_thread_id(kThread);
  auto* s = k.mutable_nvtx();
  s->set_default_domain(kDefaultDomain);
  auto* loop = s->add_domains();
  loop->set_id(kLoopDomain);
  loop->set_name("Loop");
  auto push = [&](uint64_t tid, const std::vector<std::string>& ranges) {
    auto* t = s->add_threads();
    t->set_tid(static_cast<uint32_t>(tid));
    auto* d = t->add_push_pop_domains();
    d->set_id(kDefaultDomain);
    for (const auto& r : ranges) d->add_stack()->set_name(r);
  };
  push(kThread, l.stack);
  if (!l.other_thread_stack.empty()) push(kThread + 1, l.other_thread_stack);
  if (l.in_epoch) {
    auto* d = s->add_start_end_domains();
    d->set_id(kLoopDomain);
    auto* r = d->add_ranges();
    r->set_id(1);
    r->set_name("Epoch");
  }
  return k;
}

// 0 setup [Init]; 1 fwd [Train, Forward] in Epoch; 2 bwd [Train, Backward] in
// Epoch; 3 reduce [Train, Backward, Reduce]; 4 eval [] (another thread is in
// Train).
std::string nvtx_report() {
  static const std::string path = [] {
    ReportWriter w;
    ReportWriter::Block b;
    std::vector<Launch> launches = {{"setup", {"Init"}},
                                    {"fwd", {"Train", "Forward"}, true},
                                    {"bwd", {"Train", "Backward"}, true},
                                    {"reduce", {"Train", "Backward", "Reduce"}},
                                    {"eval", {}, false, {"Train"}}};
    for (size_t i = 0; i < launches.size(); ++i)
      b.results.push_back(nvtx_kernel(w, launches[i], 1000.0 * (i + 1)).SerializeAsString());
    w.flush_strings(b);
    w.add(b);
    std::string p = temp_path("nvtx.ncu-rep");
    w.write(p);
    return p;
  }();
  return path;
}

std::string plain_report() {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(w.kernel("plain", 64, 256, {{"gpu__time_duration.sum", 1000}}).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  std::string p = temp_path("no_nvtx.ncu-rep");
  w.write(p);
  return p;
}

std::vector<int> listed(const std::string& filters) {
  auto r = run_keet("list --format json " + filters + " " + shell_quote(nvtx_report()));
  std::vector<int> out;
  if (r.rc == 2 && r.err.find("no kernel matches") != std::string::npos)
    return out;  // as -k: an empty selection is exit 2
  EXPECT_EQ(r.rc, 0) << filters << ": " << r.err;
  if (r.rc != 0) return out;
  const auto doc = json::parse(r.out);  // named: a range over a temporary's member dangles (GCC 12)
  for (const auto& k : doc["kernels"]) out.push_back(k["index"].get<int>());
  return out;
}

using V = std::vector<int>;

TEST(NvtxFilter, PushPopExpressionsAsNcu) {
  EXPECT_EQ(listed("--nvtx-include Train/"), (V{1, 2, 3}));  // anywhere on the launching thread's stack
  EXPECT_EQ(listed("--nvtx-include Train/Backward/"), (V{2, 3}));
  EXPECT_EQ(listed("--nvtx-include 'Train/*/Reduce'"), (V{3}));
  EXPECT_EQ(listed("--nvtx-include 'Backward]'"), (V{2}));        // at the top of the stack
  EXPECT_EQ(listed("--nvtx-include '[Backward/'"), (V{}));        // never at the bottom
  EXPECT_EQ(listed("--nvtx-include '[Train/Forward]'"), (V{1}));  // the whole stack
  EXPECT_EQ(listed("--nvtx-exclude Train/"), (V{0, 4}));
  EXPECT_EQ(listed("--nvtx-include Train/ --nvtx-exclude Reduce/"), (V{1, 2}));
  EXPECT_EQ(listed("--nvtx-include Train/ --nvtx-include Backward/"), (V{2, 3}));  // every include must match
}

TEST(NvtxFilter, StartEndRangesAndDomains) {
  EXPECT_EQ(listed("--nvtx-include Loop@Epoch"), (V{1, 2}));
  EXPECT_EQ(listed("--nvtx-include Epoch"), (V{}));  // the default domain has no such range
  EXPECT_EQ(listed("--nvtx-exclude Loop@Epoch"), (V{0, 3, 4}));
  EXPECT_EQ(listed("--nvtx-include Loop@Train/"), (V{}));  // Train was pushed in the default domain
}

TEST(NvtxFilter, CountsBeforeSkipAndCountAndWorksOnEveryReadingCommand) {
  EXPECT_EQ(listed("--nvtx-include Train/ -s 1 -c 1"), (V{2}));
  auto r = nvtx_report();
  auto metrics = run_keet("metrics --format json --nvtx-include Backward] " + shell_quote(r));
  ASSERT_EQ(metrics.rc, 0) << metrics.err;
  auto m = json::parse(metrics.out)["kernels"];
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["index"], 2);
  auto csv = run_keet("export --format csv --nvtx-include Loop@Epoch " + shell_quote(r));
  ASSERT_EQ(csv.rc, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 4) << csv.out;  // header, units, two kernels
  auto analysis = run_keet("analyze --format json --nvtx-exclude Train/ " + shell_quote(r));
  ASSERT_EQ(analysis.rc, 0) << analysis.err;
  EXPECT_EQ(json::parse(analysis.out)["kernels"].size(), 2u);
}

TEST(NvtxFilter, AReportWithoutNvtxDataIsAClearError) {
  auto plain = shell_quote(plain_report());
  for (std::string cmd : {"list", "metrics", "export --format csv", "analyze", "analyze --format json"})
    for (std::string flag : {"--nvtx-include Train/", "--nvtx-exclude Train/"}) {
      auto r = run_keet(cmd + " " + flag + " " + plain);
      EXPECT_EQ(r.rc, 2) << cmd << " " << flag;
      EXPECT_NE(r.err.find("holds no NVTX data (profile with ncu --nvtx)"), std::string::npos) << cmd << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  auto bad = run_keet("list --nvtx-include '[' " + shell_quote(nvtx_report()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("NVTX filter '['"), std::string::npos) << bad.err;
}

// The same files through ncu 2024.1's own filter, when ../shared has it.
TEST(NvtxFilter, SameKernelsAsNcu2024) {
  KEET_REQUIRE_SHARED();
  std::string ncu = *shared_dir() + "/tools/ncu-oracle-2024.1";
  auto ids_of = [&](const std::string& filter) {
    auto o = run_command(shell_quote(ncu) + " --import " + shell_quote(nvtx_report()) + " " + filter +
                         " --page raw --csv --metrics gpu__time_duration.sum");
    std::vector<int> ids;
    std::istringstream in(o.out);
    std::string line;
    for (int row = 0; std::getline(in, line); ++row)
      if (row >= 2 && line.size() > 2) ids.push_back(std::stoi(line.substr(1)));  // "ID" is the first column
    return std::pair{o.rc, ids};
  };
  auto [rc, all] = ids_of("");
  if (rc != 0 || all != V{0, 1, 2, 3, 4}) GTEST_SKIP() << "ncu 2024.1 does not open the writer's NVTX report";
  for (std::string filter : {"--nvtx-include Train/", "--nvtx-include Train/Backward/", "--nvtx-include 'Backward]'",
                             "--nvtx-include '[Train/Forward]'", "--nvtx-exclude Train/", "--nvtx-include Loop@Epoch",
                             "--nvtx-include 'Train/*/Reduce'", "--nvtx-include Train/ --nvtx-include Backward/"}) {
    auto [frc, ids] = ids_of(filter);
    ASSERT_EQ(frc, 0) << filter;
    EXPECT_EQ(listed(filter), ids) << filter;
  }
}

}  // namespace
}  // namespace keet
