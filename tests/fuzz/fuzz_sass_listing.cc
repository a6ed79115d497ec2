// libFuzzer target: the SASS listing parser (readers/sass_listing.h), which
// reads the output of an outside program (nvdisasm, cuobjdump -sass) as
// untrusted bytes. Besides not crashing, what it keeps must stay within its
// bounds: every function has instructions, sorted by offset with no offset
// twice, each text printable, non-empty and at most kMaxInstructionText bytes.
// Seeds: small listings of each form, and cuobjdump's listings of the seed
// cubins when a cached cuobjdump is at hand (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "readers/sass_listing.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using keet::readers::SassListing;
  auto listing = keet::readers::parse_sass_listing({reinterpret_cast<const char*>(data), size});
  check(listing.instruction_count() <= SassListing::kMaxInstructions);
  for (const auto& f : listing.functions) {
    check(!f.instructions.empty() && f.name.size() <= SassListing::kMaxNameBytes);
    for (size_t i = 0; i < f.instructions.size(); ++i) {
      const auto& ins = f.instructions[i];
      check(!ins.text.empty() && ins.text.size() <= SassListing::kMaxInstructionText);
      for (char c : ins.text) check(c >= 0x20 && c < 0x7f);
      check(i == 0 || f.instructions[i - 1].offset < ins.offset);
      check(listing.at(f.name, ins.offset) != nullptr);
    }
    (void)listing.at(f.name, UINT64_MAX);
  }
  (void)listing.at("", 0);
  return 0;
}
