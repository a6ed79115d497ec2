// A cubin with a DWARF line table, built byte by byte for tests: an EM_CUDA
// ELF whose one function `kernel` starts at `kernel_pc` and whose .debug_line
// maps each 32-byte step of its code to `lines[i]` of `directory`/`file`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace keet::testing {

struct LineTableCubin {
  uint64_t kernel_pc = 0x7f0000001000;
  uint64_t kernel_size = 0x100;
  std::string kernel = "_Z4kernPf";
  std::vector<int> lines = {10, 12, 11};  // instruction i (32 bytes each) is on lines[i]
  std::string directory = "/src/dir", file = "kern.cu";
  bool prerelocated = true;  // ncu's stored cubins hold S + A at the site
  uint16_t machine = 190;
  uint32_t reloc_type = 2;

  std::string bytes() const;
};

}  // namespace keet::testing
