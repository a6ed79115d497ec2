// libFuzzer target: the cubin ELF/DWARF parser (readers/cubin.h), which reads
// untrusted bytes embedded in reports: ELF headers, section and symbol
// tables, relocations and the DWARF line program. Seeds are the cubins of the
// fixture reports (scripts/fuzz cuts them out at their ELF magic).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "readers/cubin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cubin = keet::readers::Cubin::parse({reinterpret_cast<const char*>(data), size});
  if (!cubin) return 0;
  // Every lookup the source view makes: by name, and by PC inside and around
  // each function.
  for (const auto& s : cubin->symbols()) {
    (void)cubin->symbol(s.name);
    for (uint64_t pc : {s.value, s.value + s.size / 2, s.value + s.size, s.value - 1}) (void)cubin->location(pc);
  }
  (void)cubin->location(0);
  (void)cubin->location(UINT64_MAX);
  return 0;
}
