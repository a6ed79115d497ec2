// keet export --format csv reads a report once when its selected kernels fit
// in memory and twice when they do not; both paths give the same bytes, the
// same messages and the same exit code, on every fixture report (clean,
// damaged or partial) and with the options that change the column set.
#include <gtest/gtest.h>

#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

ProcessResult export_with(const std::string& hold, const std::string& args) {
  return run_command("KEET_EXPORT_HOLD_METRICS=" + hold + " " + keet_binary() + " export --format csv " + args);
}

void expect_same(const std::string& args) {
  auto one = export_with("100000000", args);
  auto two = export_with("0", args);  // always two passes
  EXPECT_EQ(one.rc, two.rc) << args;
  EXPECT_EQ(one.err, two.err) << args;
  EXPECT_TRUE(one.out == two.out) << args << ": " << one.out.size() << " bytes in one pass, " << two.out.size()
                                  << " in two";
}

TEST(ExportOnePass, SameBytesAsTwoPassesOnEveryFixture) {
  auto reports = fixture_reports();
  if (reports.empty()) GTEST_SKIP() << "../shared/fixtures is absent";
  for (const auto& r : reports) expect_same(shell_quote(r) + " --allow-partial");
}

TEST(ExportOnePass, SameBytesWithFiltersAndUnits) {
  auto reports = fixture_reports();
  if (reports.empty()) GTEST_SKIP() << "../shared/fixtures is absent";
  // A few reports with several kernels, each with the options that pick kernels and columns.
  for (size_t i = 0; i < reports.size(); i += 9) {
    std::string r = shell_quote(reports[i]);
    for (const std::string& opts : {"-c 1", "-s 1 -c 2", "--print-units auto", "--metrics regex:^sm__", "-k regex:.",
                                    "-k no_such_kernel_anywhere"})
      expect_same(r + " " + opts);
  }
}

// Past the limit the read stops and the two passes run: the bytes are the
// same as a single pass over the whole report.
TEST(ExportOnePass, ReportPastTheLimitFallsBackToTwoPasses) {
  auto reports = fixture_reports();
  if (reports.empty()) GTEST_SKIP() << "../shared/fixtures is absent";
  std::string r = shell_quote(reports.front());
  auto whole = export_with("100000000", r);
  auto cut = export_with("50", r);  // past the limit within the first kernel or two
  EXPECT_EQ(whole.rc, cut.rc);
  EXPECT_TRUE(whole.out == cut.out);
}

}  // namespace
}  // namespace keet
