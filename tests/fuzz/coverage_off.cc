// keet_asan is no fuzzer, but keet_fuzz_core is compiled with
// -fsanitize-coverage=trace-pc,trace-cmp for the fuzz targets, so its code calls
// these hooks at every branch and comparison. Empty ones here stand in for
// coverage_shim.cc's counters (which then is not linked: every symbol it
// defines is defined here) and for libasan's trace-cmp defaults, reached
// through the PLT; together those took 15% of keet_asan's time on a fixture.
#include <cstdint>

#define KEET_NO_COVERAGE extern "C" __attribute__((no_sanitize_coverage, no_sanitize("address", "undefined")))

KEET_NO_COVERAGE void __sanitizer_cov_trace_pc() {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmpf(float, float) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmpd(double, double) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmp1(uint8_t, uint8_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmp2(uint16_t, uint16_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmp4(uint32_t, uint32_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_cmp8(uint64_t, uint64_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_const_cmp1(uint8_t, uint8_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_const_cmp2(uint16_t, uint16_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_const_cmp4(uint32_t, uint32_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_const_cmp8(uint64_t, uint64_t) {}
KEET_NO_COVERAGE void __sanitizer_cov_trace_switch(uint64_t, uint64_t*) {}
