// libFuzzer target: the ncu-csv reader (see fuzz_common.h).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keet::fuzz::read_through("fuzz.ncu_csv", data, size);
  keet::fuzz::read_with("ncu-csv", data, size);
  return 0;
}
