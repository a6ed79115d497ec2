// --name-base (ncu's --print-kernel-base): which of a kernel's names every
// output prints. The test writer names its kernel `copy_kernel` (function),
// `copy_kernel()` (demangled) and `_Z11copy_kernelv` (mangled).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/report_writer.h"
#include "support/testing.h"
#include "support/timeline_writer.h"

namespace keet::name_base {
namespace {

using namespace keet::testing;

std::string report(const std::string& file, double duration_ns) {
  std::string path = temp_path(file);
  write_file(path, one_kernel_report("copy_kernel", 64, 256, scenario_metrics(duration_ns)));
  return shell_quote(path);
}

TEST(NameBase, ListAnalyzeAndDiffPrintTheChosenName) {
  auto before = report("name-base-before.ncu-rep", 20000), after = report("name-base-after.ncu-rep", 10000);
  for (const std::string command : {"list " + before, "analyze " + before, "diff " + before + " " + after}) {
    auto demangled = run_keet(command);
    ASSERT_EQ(demangled.rc, 0) << command << ": " << demangled.err;
    EXPECT_NE(demangled.out.find("copy_kernel()"), std::string::npos) << command << ":\n" << demangled.out;
    EXPECT_EQ(demangled.out.find("_Z11copy_kernelv"), std::string::npos) << command << ":\n" << demangled.out;

    auto function = run_keet(command + " --name-base function");
    ASSERT_EQ(function.rc, 0) << command << ": " << function.err;
    EXPECT_NE(function.out.find("copy_kernel"), std::string::npos) << command << ":\n" << function.out;
    EXPECT_EQ(function.out.find("copy_kernel()"), std::string::npos) << command << ":\n" << function.out;

    auto mangled = run_keet(command + " --print-kernel-base mangled");  // ncu's spelling
    ASSERT_EQ(mangled.rc, 0) << command << ": " << mangled.err;
    EXPECT_NE(mangled.out.find("_Z11copy_kernelv"), std::string::npos) << command << ":\n" << mangled.out;
    EXPECT_EQ(mangled.out.find("copy_kernel()"), std::string::npos) << command << ":\n" << mangled.out;
  }
}

TEST(NameBase, JsonKeepsEveryNameAndSelectionIgnoresTheFlag) {
  auto path = report("name-base-json.ncu-rep", 20000);
  auto doc = nlohmann::json::parse(run_keet("analyze --format json --name-base function " + path).out);
  EXPECT_EQ(doc["kernels"][0]["name"], "_Z11copy_kernelv");  // keet.analysis/1's name is the mangled one
  // -k matches the --kernel-name-base name whatever is printed.
  auto picked = run_keet("list --name-base mangled -k regex:^copy_kernel$ " + path);
  ASSERT_EQ(picked.rc, 0) << picked.err;
  EXPECT_NE(picked.out.find("_Z11copy_kernelv"), std::string::npos) << picked.out;
}

TEST(NameBase, TimelinePrintsTheFunctionNameWhenAsked) {
  TimelineWriter w;
  for (int i = 0; i < 20; ++i)
    w.kernel({"void step<float, 4>(float *, int)", "step", i * 1000, i * 1000 + 400, 0, 7, 64, 128, i * 1000 - 100});
  auto path = temp_path("name-base.sqlite");
  w.write(path);
  auto demangled = run_keet("timeline " + shell_quote(path));
  ASSERT_EQ(demangled.rc, 0) << demangled.err;
  EXPECT_NE(demangled.out.find("void step<float, 4>(float *, int)"), std::string::npos) << demangled.out;
  auto function = run_keet("timeline --name-base function " + shell_quote(path));
  ASSERT_EQ(function.rc, 0) << function.err;
  EXPECT_EQ(function.out.find("step<float, 4>"), std::string::npos) << function.out;
  EXPECT_NE(function.out.find("  step\n"), std::string::npos) << function.out;
  auto refused = run_keet("timeline --name-base short " + shell_quote(path));
  EXPECT_EQ(refused.rc, 2);
  EXPECT_NE(refused.err.find("--name-base"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace keet::name_base
