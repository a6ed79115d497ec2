// Tests on eight bytes at once, for the scans that copy long runs of plain
// text (the JSON writer's escaping check, the terminal filter): most bytes
// need nothing, and one test per word instead of one per byte halves the
// cost of writing a large document.
#pragma once
#include <cstdint>
#include <cstring>

namespace keet::bytes {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

inline uint64_t load(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
// Nonzero when some byte of `w` is zero.
constexpr uint64_t any_zero(uint64_t w) { return (w - kOnes) & ~w & kHighs; }
// Nonzero when some byte of `w` equals `b`.
constexpr uint64_t any_equal(uint64_t w, unsigned char b) { return any_zero(w ^ (kOnes * b)); }
// Nonzero when some byte of `w` is below `n` (n <= 128).
constexpr uint64_t any_below(uint64_t w, unsigned char n) { return (w - kOnes * n) & ~w & kHighs; }
// Nonzero when some byte of `w` has its top bit set (not ASCII).
constexpr uint64_t any_high(uint64_t w) { return w & kHighs; }

// Exact per-byte masks: 0x80 in each byte that passes, 0 elsewhere (no
// borrow runs between bytes, so they can be combined with & and ~).
constexpr uint64_t kLows = 0x7F7F7F7F7F7F7F7Full;
constexpr uint64_t zero_mask(uint64_t w) { return ~(((w & kLows) + kLows) | w) & kHighs; }
constexpr uint64_t equal_mask(uint64_t w, unsigned char b) { return zero_mask(w ^ (kOnes * b)); }
// Bytes below `n` (1 <= n <= 128).
constexpr uint64_t below_mask(uint64_t w, unsigned char n) {
  return ~(((w & kLows) + kOnes * static_cast<unsigned char>(0x80 - n)) | w) & kHighs;
}

}  // namespace keet::bytes
