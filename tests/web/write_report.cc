// Writes the tests' memory-bound scenario report (tests/support/report_writer)
// to argv[1]: the browser test's upload when ../shared has no fixture.
#include <iostream>

#include "support/report_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: keet_write_test_report FILE\n";
    return 2;
  }
  keet::testing::ReportWriter w;
  keet::testing::ReportWriter::Block b;
  auto k = w.kernel("strided_copy", 8192, 256, keet::testing::scenario_metrics(120000));
  auto* dev = k.add_metric_results();
  dev->set_name_id(w.name_id("device__attribute_display_name"));
  dev->mutable_value()->set_string_value("Test GPU");
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  w.write(argv[1]);
  return 0;
}
