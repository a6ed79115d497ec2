// Edge feedback for libFuzzer when the code is built by GCC.
//
// libkeet needs std::expected, which clang 14 cannot compile against
// libstdc++ 12, and GCC has no -fsanitize=fuzzer. GCC can emit
// -fsanitize-coverage=trace-pc (a call per basic block), which current
// libFuzzer refuses; so this file implements that call itself, hashing the
// caller's address into a table of 8-bit counters that libFuzzer does accept
// (__sanitizer_cov_8bit_counters_init). tests/fuzz/CMakeLists.txt weakens
// libFuzzer's own __sanitizer_cov_trace_pc so this one wins.
#include <cstddef>
#include <cstdint>

extern "C" __attribute__((weak)) void __sanitizer_cov_8bit_counters_init(uint8_t* start, uint8_t* stop);

namespace {

constexpr size_t kSlots = size_t{1} << 16;
uint8_t counters[kSlots];

// Runs before libFuzzer's main, which reads the registered counters.
__attribute__((constructor, no_sanitize_coverage)) void register_counters() {
  if (__sanitizer_cov_8bit_counters_init) __sanitizer_cov_8bit_counters_init(counters, counters + kSlots);
}

}  // namespace

extern "C" __attribute__((no_sanitize_coverage, no_sanitize("address", "undefined"))) void __sanitizer_cov_trace_pc() {
  auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ++counters[(pc ^ (pc >> 16)) & (kSlots - 1)];
}

// GCC's trace-cmp also reports floating-point comparisons, which libFuzzer has
// no hooks for; they carry no useful feedback for these readers.
extern "C" __attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_cmpf(float, float) {}
extern "C" __attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_cmpd(double, double) {}
