// libFuzzer target: unified diffs as an LLM writes them (keet tune). The
// input is a file's text, a NUL byte, then an answer: every diff block found
// in it is parsed, its paths checked, and its hunks applied to the text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/unified_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto nul = input.find('\0');
  std::string_view original = nul == std::string_view::npos ? std::string_view() : input.substr(0, nul);
  std::string_view answer = nul == std::string_view::npos ? input : input.substr(nul + 1);
  for (const auto& block : keet::extract_diff_blocks(answer)) {
    auto patches = keet::parse_unified_diff(block.diff);
    if (!patches) continue;
    for (const auto& p : *patches) {
      (void)keet::safe_relative_path(p.path());
      (void)keet::format_unified_diff(p);
      (void)keet::apply_patch(original, p, 20);
    }
  }
  return 0;
}
