// libFuzzer target: the zstd-compressed report reader (.ncu-repz, see fuzz_common.h).
// Seeds are the binary fixtures compressed by scripts/fuzz.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keet::fuzz::read_through("fuzz.ncu_repz", data, size);
  keet::fuzz::read_with("ncu-repz", data, size);
  return 0;
}
