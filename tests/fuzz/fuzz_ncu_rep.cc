// libFuzzer target: the ncu-rep reader (see fuzz_common.h).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keet::fuzz::read_through("fuzz.ncu_rep", data, size);
  keet::fuzz::read_with("ncu-rep", data, size);
  return 0;
}
