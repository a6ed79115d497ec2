// gzip-compressed bytes (one member), as torch.profiler writes .json.gz: for
// the tests' traces and the Kineto fuzz target's second pass.
#pragma once
#include <string>
#include <string_view>

namespace keet::testing {

// `level` as zlib's (1: fastest, 9: smallest); throws std::runtime_error if
// zlib fails.
std::string gzip(std::string_view bytes, int level = 6);

}  // namespace keet::testing
