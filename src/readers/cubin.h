// Reads what KEET needs from a CUDA cubin (an ELF with machine EM_CUDA = 190)
// that a report embeds in model::Module::binary:
//   - kernel symbols (value = load PC, size) from .symtab, because ncu stores
//     the cubin rebased to runtime addresses;
//   - PC -> (file, line) from the DWARF line program in .debug_line (present
//     only when the app was built with -lineinfo or -G);
//   - where each kernel's instructions sit in the file (its .text section) and
//     the SM the code is for, which a disassembler needs (analysis/sass.h).
//
// The cubin is untrusted input. Cubin::parse never throws and never aborts:
// an unreadable ELF is an Error, and a damaged line table only adds a warning
// (the symbols stay usable, has_line_info() is false).
//
// How the line table is read (see cubin.cc): libdwarf decodes the line
// program, through our own Dwarf_Obj_Access_Interface. That interface serves
// .debug_line with its relocations applied by us (libdwarf does not know the
// EM_CUDA relocation types), and a small synthetic .debug_info with one
// compile unit per line program, because cubins built with -lineinfo carry
// .debug_line but no .debug_info, and libdwarf reaches line tables only
// through a compile unit's DW_AT_stmt_list.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::readers {

struct CubinSymbol {
  std::string name;    // mangled
  uint64_t value = 0;  // load PC in a rebased cubin
  uint64_t size = 0;   // bytes of SASS
  bool is_function = false;
  // The function's instruction bytes: [code_offset, code_offset + code_size)
  // of the bytes given to Cubin::parse; code_size 0 when the symbol's section
  // is not inside the file.
  uint64_t code_offset = 0, code_size = 0;
};

struct SourceLocation {
  std::string file;  // as the line table names it (directory joined)
  uint32_t line = 0;
};

class Cubin {
 public:
  static Result<Cubin> parse(std::string_view bytes);

  // The symbol with this exact (mangled) name, or null.
  const CubinSymbol* symbol(std::string_view mangled) const;
  const std::vector<CubinSymbol>& symbols() const { return symbols_; }

  // Source line of the instruction at `pc` (absolute, as in the report).
  std::optional<SourceLocation> location(uint64_t pc) const;
  bool has_line_info() const { return !ranges_.empty(); }
  // Source files named by the line table, in first-seen order.
  const std::vector<std::string>& files() const { return files_; }

  // The SM the code is for (86 for sm_86) from the ELF header's flags, in
  // either of the two layouts nvcc has written (EI_ABIVERSION < 8: the low
  // byte; 8 and later, CUDA 13: the second byte); 0 when unknown.
  int sm() const { return sm_; }
  // The instruction bytes of `s` (a symbol of this cubin) inside `bytes`, the
  // same bytes parse() was given; empty when the symbol has none.
  static std::string_view code(std::string_view bytes, const CubinSymbol& s);

  // Non-fatal problems met while parsing, one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // One row of the decoded line table: [begin, end) maps to files()[file]:line.
  struct LineRange {
    uint64_t begin = 0, end = 0;
    uint32_t file = 0;
    uint32_t line = 0;
  };
  const std::vector<LineRange>& ranges() const { return ranges_; }

 private:
  friend struct CubinBuilder;
  std::vector<CubinSymbol> symbols_;
  std::vector<std::string> files_;
  std::vector<LineRange> ranges_;  // sorted by begin, non-overlapping
  std::vector<std::string> warnings_;
  int sm_ = 0;
};

}  // namespace keet::readers
