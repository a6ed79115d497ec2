// Reads a SASS listing: the text nvdisasm or `cuobjdump -sass` prints for a
// cubin or for raw instruction bytes (nvdisasm -b SM86), as offset ->
// instruction per function.
//
// The text comes from an outside program and is treated as untrusted bytes:
// parse_sass_listing never throws, skips every line it does not recognise,
// and bounds what it keeps (instruction text, name length, instruction
// count), so garbage, a binary file or a huge listing costs at most linear
// time and bounded memory.
//
// The lines it reads (anything else is skipped):
//   /*0090*/                   LDG.E.64 R2, [R2.64] ;        an instruction
//   /*0090*/  ... ;  /* 0x0000000402027981 */                cuobjdump: its encoding after it
//   Function : _Z4axpyPKdPddi                                cuobjdump: a function starts
//   .text._Z4axpyPKdPddi:                                    nvdisasm on a cubin: a function starts
// Instructions before any function line (nvdisasm -b) belong to the function
// named "".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keet::readers {

struct SassInstruction {
  uint64_t offset = 0;  // bytes from the start of the function
  std::string text;     // "LDG.E.64 R2, [R2.64]": predicate, opcode, operands; no ';', no encoding
};

struct SassFunction {
  std::string name;                           // mangled; "" for a listing of raw code
  std::vector<SassInstruction> instructions;  // sorted by offset, one per offset
};

struct SassListing {
  // What one listing may hold: more than any kernel has, far less than memory.
  static constexpr size_t kMaxInstructionText = 200;    // bytes; longer text is cut
  static constexpr size_t kMaxNameBytes = 4096;         // longer function names are skipped
  static constexpr size_t kMaxInstructions = 4u << 20;  // over all functions; the rest is dropped
  static constexpr size_t kMaxLineBytes = 64 * 1024;    // longer lines are skipped

  std::vector<SassFunction> functions;
  bool truncated = false;  // kMaxInstructions was reached

  // The function of this name; with no such name, the listing's unnamed
  // function when it is its only one (nvdisasm -b: one kernel's raw code).
  const SassFunction* function(std::string_view name) const;
  // The instruction at `offset` of function `name`, or null.
  const SassInstruction* at(std::string_view name, uint64_t offset) const;
  size_t instruction_count() const;
};

SassListing parse_sass_listing(std::string_view text);

}  // namespace keet::readers
