// keet_load_fault: keet serve under load and faults (tests/support/load_fault.h),
// on loopback only. The test suite runs the short form; scripts/bench runs
//   keet_load_fault --long
// (128 clients uploading 400 reports, 4 bodies of 1 GiB without the token, 64
// slow clients for 10 s, a PostgreSQL restart under 40 jobs, a used port),
// whose lines docs/server.md quotes. Exit 0 when every step holds, 1 if one
// does not, 2 on a bad argument.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "support/load_fault.h"

int main(int argc, char** argv) {
  keet::testing::LoadFaultPlan plan;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--long") == 0) {
      plan.clients = 128;
      plan.reports = 400;
      plan.big_bytes = size_t{1} << 30;
      plan.slow_seconds = 10;
      plan.postgres_jobs = 40;
      plan.job_wait_s = 600;
    } else if (std::strcmp(argv[i], "--short") != 0) {
      std::fprintf(stderr, "usage: keet_load_fault [--short | --long]\n");
      return 2;
    }
  }
  plan.progress = [](std::string_view line) { std::cout << line << std::endl; };
  bool all = true;
  for (const auto& c : keet::testing::run_load_fault(plan)) all = all && c.ok;
  return all ? 0 : 1;
}
