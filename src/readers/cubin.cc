#include "readers/cubin.h"
#include "util/error.h"

#include <dwarf.h>
#include <gelf.h>
#include <libdwarf.h>
#include <libelf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

namespace keet::readers {
namespace {

constexpr int kEmCuda = 190;

// ---------------------------------------------------------------- ELF side

// One section header with its name; `scn` stays valid while the Elf lives.
struct ElfSection {
  size_t index = 0;
  std::string name;
  GElf_Shdr hdr{};
  Elf_Scn* scn = nullptr;
};

// Owns a private copy of the bytes (libelf wants a mutable buffer) and the
// libelf handle.
class ElfFile {
 public:
  explicit ElfFile(std::string_view bytes) : bytes_(bytes) {
    elf_version(EV_CURRENT);
    elf_ = elf_memory(bytes_.data(), bytes_.size());
  }
  ~ElfFile() {
    if (elf_) elf_end(elf_);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  Elf* get() const { return elf_; }

 private:
  std::string bytes_;
  Elf* elf_ = nullptr;
};

std::string elf_error() { return elf_errmsg(-1) ? elf_errmsg(-1) : "unknown libelf error"; }

Result<void> check_header(Elf* elf) {
  if (!elf || elf_kind(elf) != ELF_K_ELF) return fail(ExitCode::BadInput, "cubin: not an ELF file");
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh)) return fail(ExitCode::BadInput, "cubin: bad ELF header: " + elf_error());
  if (eh.e_machine != kEmCuda)
    return fail(ExitCode::BadInput, fmt::format("cubin: ELF machine {} is not EM_CUDA (190)", eh.e_machine));
  return {};
}

Result<std::vector<ElfSection>> list_sections(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0)
    return fail(ExitCode::BadInput, "cubin: no section name table: " + elf_error());
  std::vector<ElfSection> out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    ElfSection s;
    s.index = elf_ndxscn(scn);
    s.scn = scn;
    if (!gelf_getshdr(scn, &s.hdr)) return fail(ExitCode::BadInput, "cubin: bad section header: " + elf_error());
    const char* name = elf_strptr(elf, shstrndx, s.hdr.sh_name);
    s.name = name ? name : "";
    out.push_back(std::move(s));
  }
  return out;
}

const ElfSection* find_section(const std::vector<ElfSection>& secs, std::string_view name) {
  for (const auto& s : secs)
    if (s.name == name) return &s;
  return nullptr;
}

// Section bytes as libelf gives them (null data for SHT_NOBITS or damage).
Elf_Data* section_data(const ElfSection& s) { return elf_getdata(s.scn, nullptr); }

std::string section_bytes(const ElfSection& s) {
  Elf_Data* d = section_data(s);
  if (!d || !d->d_buf) return {};
  return std::string(static_cast<const char*>(d->d_buf), d->d_size);
}

struct SymbolTable {
  std::vector<CubinSymbol> all;   // index = ELF symbol index
  std::vector<uint16_t> section;  // per symbol: st_shndx
  std::vector<bool> is_section;   // per symbol: STT_SECTION
};

const ElfSection* section_by_index(const std::vector<ElfSection>& secs, size_t index) {
  for (const auto& s : secs)
    if (s.index == index) return &s;
  return nullptr;
}

// Where a function starts inside its section. nvcc writes section offsets.
// ncu rebases the cubin it stores to load addresses, in two ways seen in
// reports: older ncu moves the section's own STT_SECTION symbol too (the
// function's place is then its value less the section's), newer ncu moves the
// function symbols only. A kernel's code opens its own section,
// .text.<kernel>, so a kernel's rebased symbol there starts at 0; any other
// function with a value past its section's end has no known place.
std::optional<uint64_t> place_in_section(const CubinSymbol& sym, const ElfSection& sec, uint64_t section_base) {
  if (section_base != 0 && sym.value >= section_base) return sym.value - section_base;
  if (sym.value < sec.hdr.sh_size) return sym.value;
  if (sec.name.size() == 6 + sym.name.size() && sec.name.starts_with(".text.") && sec.name.ends_with(sym.name))
    return 0;
  return std::nullopt;
}

// Where each function's code sits in the file; anything outside its section
// or the file gets none.
void locate_code(SymbolTable& t, const std::vector<ElfSection>& secs, size_t file_size) {
  std::map<uint16_t, uint64_t> base;  // section index -> its STT_SECTION symbol's value
  for (size_t i = 0; i < t.all.size(); ++i)
    if (t.is_section[i]) base.emplace(t.section[i], t.all[i].value);
  for (size_t i = 0; i < t.all.size(); ++i) {
    auto& sym = t.all[i];
    const ElfSection* sec = sym.is_function ? section_by_index(secs, t.section[i]) : nullptr;
    if (!sec || sec->hdr.sh_type != SHT_PROGBITS || sec->hdr.sh_offset > file_size ||
        sec->hdr.sh_size > file_size - sec->hdr.sh_offset)
      continue;
    auto it = base.find(t.section[i]);
    auto inside = place_in_section(sym, *sec, it == base.end() ? 0 : it->second);
    if (!inside || *inside >= sec->hdr.sh_size) continue;
    uint64_t room = sec->hdr.sh_size - *inside;
    sym.code_offset = sec->hdr.sh_offset + *inside;
    sym.code_size = sym.size > 0 && sym.size <= room ? sym.size : room;
  }
}

Result<SymbolTable> read_symbols(Elf* elf, const std::vector<ElfSection>& secs) {
  SymbolTable t;
  const ElfSection* symtab = nullptr;
  for (const auto& s : secs)
    if (s.hdr.sh_type == SHT_SYMTAB) symtab = &s;
  if (!symtab) return t;
  Elf_Data* d = section_data(*symtab);
  if (!d) return fail(ExitCode::BadInput, "cubin: unreadable .symtab: " + elf_error());
  size_t count = symtab->hdr.sh_entsize ? d->d_size / symtab->hdr.sh_entsize : 0;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(d, static_cast<int>(i), &sym)) break;
    const char* name = elf_strptr(elf, symtab->hdr.sh_link, sym.st_name);
    t.all.push_back({name ? name : "", sym.st_value, sym.st_size, GELF_ST_TYPE(sym.st_info) == STT_FUNC});
    t.section.push_back(sym.st_shndx);
    t.is_section.push_back(GELF_ST_TYPE(sym.st_info) == STT_SECTION);
  }
  return t;
}

// The SM of the code from e_flags: CUDA 13's layout (EI_ABIVERSION 8 and
// later) keeps it in the second byte, older cubins in the low byte.
int sm_of(const GElf_Ehdr& eh) {
  unsigned flags = static_cast<unsigned>(eh.e_flags);
  unsigned sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  return sm >= 10 ? static_cast<int>(sm) : 0;  // sm_10 was the first
}

// --------------------------------------------------------- relocations

// The EM_CUDA relocation types that can appear against .debug_line: each is
// an absolute symbol address of `width` bytes (S + A).
struct RelocKind {
  uint32_t type;
  int width;
};
constexpr std::array<RelocKind, 2> kCudaRelocs = {{{1, 4}, {2, 8}}};  // R_CUDA_32, R_CUDA_64

const RelocKind* reloc_kind(uint32_t type) {
  for (const auto& k : kCudaRelocs)
    if (k.type == type) return &k;
  return nullptr;
}

uint64_t read_le(const std::string& buf, size_t off, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(buf[off + i]);
  return v;
}

void write_le(std::string& buf, size_t off, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) buf[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

struct Reloc {
  uint64_t offset = 0;
  uint32_t type = 0;
  size_t symbol = 0;
  std::optional<int64_t> addend;  // explicit (RELA); REL reads it in place
};

std::vector<Reloc> read_relocs(const ElfSection& rel) {
  std::vector<Reloc> out;
  Elf_Data* d = section_data(rel);
  if (!d || !rel.hdr.sh_entsize) return out;
  size_t count = d->d_size / rel.hdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    if (rel.hdr.sh_type == SHT_RELA) {
      GElf_Rela r;
      if (!gelf_getrela(d, static_cast<int>(i), &r)) break;
      out.push_back({r.r_offset, static_cast<uint32_t>(GELF_R_TYPE(r.r_info)), GELF_R_SYM(r.r_info), r.r_addend});
    } else {
      GElf_Rel r;
      if (!gelf_getrel(d, static_cast<int>(i), &r)) break;
      out.push_back({r.r_offset, static_cast<uint32_t>(GELF_R_TYPE(r.r_info)), GELF_R_SYM(r.r_info), {}});
    }
  }
  return out;
}

// ncu rebases the cubin it stores and, while doing so, already writes the
// relocated address into .debug_line: the bytes at a REL site then hold
// S + A rather than the implicit addend A (seen in every sample report), and
// adding S again would double the address. A REL site whose value lies just
// above its symbol (within 4 GiB: addends are offsets inside one kernel) is
// taken as already applied. For an unrebased cubin S is 0, so both readings
// agree.
bool already_applied(uint64_t in_place, uint64_t symbol_value) {
  return symbol_value != 0 && in_place >= symbol_value && in_place - symbol_value < (uint64_t{1} << 32);
}

// Applies one relocation; returns a warning when it cannot.
std::optional<std::string> apply_reloc(std::string& buf, const Reloc& r, const SymbolTable& syms) {
  const RelocKind* kind = reloc_kind(r.type);
  if (!kind) return fmt::format("unsupported relocation type {} in .debug_line", r.type);
  if (r.symbol >= syms.all.size()) return fmt::format("relocation names missing symbol {}", r.symbol);
  if (r.offset > buf.size() || buf.size() - r.offset < static_cast<size_t>(kind->width))
    return fmt::format("relocation offset {:#x} outside .debug_line", r.offset);
  uint64_t target = syms.all[r.symbol].value;
  uint64_t in_place = read_le(buf, r.offset, kind->width);
  if (r.addend) {
    write_le(buf, r.offset, kind->width, target + static_cast<uint64_t>(*r.addend));
  } else if (!already_applied(in_place, target)) {
    write_le(buf, r.offset, kind->width, target + in_place);
  }
  return std::nullopt;
}

// `target`'s bytes with every .rel/.rela section that applies to it applied.
std::string relocated(const ElfSection& target, const std::vector<ElfSection>& secs, const SymbolTable& syms,
                      std::vector<std::string>& warnings) {
  std::string buf = section_bytes(target);
  for (const auto& s : secs) {
    if ((s.hdr.sh_type != SHT_REL && s.hdr.sh_type != SHT_RELA) || s.hdr.sh_info != target.index) continue;
    for (const auto& r : read_relocs(s))
      if (auto w = apply_reloc(buf, r, syms)) warnings.push_back("cubin: " + *w);
  }
  return buf;
}

// ------------------------------------------------- libdwarf object access

// The sections we serve to libdwarf. Index 0 is the null section, as in ELF.
struct DwarfSections {
  std::vector<std::pair<std::string, std::string>> list{{"", ""}};  // name, bytes
  void add(std::string name, std::string bytes) { list.emplace_back(std::move(name), std::move(bytes)); }
};

int get_section_info(void* obj, Dwarf_Half index, Dwarf_Obj_Access_Section* out, int* /*error*/) {
  auto* s = static_cast<DwarfSections*>(obj);
  if (index >= s->list.size()) return DW_DLV_NO_ENTRY;
  *out = {};
  out->type = index == 0 ? SHT_NULL : SHT_PROGBITS;
  out->size = s->list[index].second.size();
  out->name = s->list[index].first.c_str();
  return DW_DLV_OK;
}
Dwarf_Endianness get_byte_order(void*) { return DW_OBJECT_LSB; }
Dwarf_Small get_length_size(void*) { return 4; }
Dwarf_Small get_pointer_size(void*) { return 8; }
Dwarf_Unsigned get_section_count(void* obj) { return static_cast<DwarfSections*>(obj)->list.size(); }
int load_section(void* obj, Dwarf_Half index, Dwarf_Small** data, int* /*error*/) {
  auto* s = static_cast<DwarfSections*>(obj);
  if (index == 0 || index >= s->list.size() || s->list[index].second.empty()) return DW_DLV_NO_ENTRY;
  *data = reinterpret_cast<Dwarf_Small*>(s->list[index].second.data());
  return DW_DLV_OK;
}

const Dwarf_Obj_Access_Methods kMethods = {get_section_info,  get_byte_order, get_length_size, get_pointer_size,
                                           get_section_count, load_section,   nullptr};

// Offsets of the line programs in .debug_line (each starts with unit_length).
// Only headers are walked here; libdwarf decodes the programs themselves.
std::vector<uint64_t> line_program_offsets(const std::string& line) {
  std::vector<uint64_t> out;
  uint64_t off = 0;
  while (off + 4 <= line.size()) {
    uint64_t len = read_le(line, off, 4), header = 4;
    if (len == 0xffffffff) {
      if (off + 12 > line.size()) break;
      len = read_le(line, off + 4, 8), header = 12;
    }
    if (len == 0 || len > line.size() - off - header) break;
    out.push_back(off);
    off += header + len;
  }
  return out;
}

// One DWARF 4 compile unit per line program: a single DW_TAG_compile_unit DIE
// whose only attribute is DW_AT_stmt_list (DW_FORM_sec_offset).
std::string synthetic_debug_info(const std::vector<uint64_t>& programs) {
  std::string out;
  for (uint64_t off : programs) {
    std::string cu(12 + 4, '\0');
    write_le(cu, 0, 4, 12);  // unit_length: version(2)+abbrev(4)+addr(1)+code(1)+stmt_list(4)
    write_le(cu, 4, 2, 4);   // version
    write_le(cu, 6, 4, 0);   // debug_abbrev_offset
    cu[10] = 8;              // address_size
    cu[11] = 1;              // abbrev code 1
    write_le(cu, 12, 4, off);
    out += cu;
  }
  return out;
}

std::string synthetic_debug_abbrev() {
  // code 1, DW_TAG_compile_unit, no children, (DW_AT_stmt_list, DW_FORM_sec_offset), end; end of table
  return std::string{1, DW_TAG_compile_unit, DW_CHILDREN_no, DW_AT_stmt_list, DW_FORM_sec_offset, 0, 0, 0};
}

std::string dwarf_message(Dwarf_Debug dbg, Dwarf_Error err) {
  std::string msg = err ? dwarf_errmsg(err) : "no line table";
  if (err) dwarf_dealloc_error(dbg, err);
  return msg;
}

struct LineRow {
  uint64_t addr = 0;
  std::string file;
  uint32_t line = 0;
  bool end_sequence = false;
};

// Reads one row; false on a libdwarf error (the row is then skipped).
bool read_row(Dwarf_Debug dbg, Dwarf_Line l, LineRow& row) {
  Dwarf_Error err = nullptr;
  Dwarf_Addr addr = 0;
  Dwarf_Unsigned lineno = 0;
  Dwarf_Bool end = 0;
  char* src = nullptr;
  if (dwarf_lineaddr(l, &addr, &err) != DW_DLV_OK || dwarf_lineno(l, &lineno, &err) != DW_DLV_OK ||
      dwarf_lineendsequence(l, &end, &err) != DW_DLV_OK) {
    dwarf_message(dbg, err);
    return false;
  }
  if (dwarf_linesrc(l, &src, &err) == DW_DLV_OK) {
    row.file = src;
    dwarf_dealloc(dbg, src, DW_DLA_STRING);
  } else {
    dwarf_message(dbg, err);
  }
  row.addr = addr, row.line = static_cast<uint32_t>(lineno), row.end_sequence = end;
  return true;
}

// Rows of the line table of the current CU's DIE.
Result<std::vector<LineRow>> cu_rows(Dwarf_Debug dbg, Dwarf_Die die) {
  Dwarf_Error err = nullptr;
  Dwarf_Unsigned version = 0;
  Dwarf_Small tables = 0;
  Dwarf_Line_Context ctx = nullptr;
  if (dwarf_srclines_b(die, &version, &tables, &ctx, &err) != DW_DLV_OK)
    return fail(ExitCode::BadInput, dwarf_message(dbg, err));
  Dwarf_Line* lines = nullptr;
  Dwarf_Signed count = 0;
  std::vector<LineRow> rows;
  if (dwarf_srclines_from_linecontext(ctx, &lines, &count, &err) != DW_DLV_OK) {
    dwarf_srclines_dealloc_b(ctx);
    return fail(ExitCode::BadInput, dwarf_message(dbg, err));
  }
  for (Dwarf_Signed i = 0; i < count; ++i)
    if (LineRow row; read_row(dbg, lines[i], row)) rows.push_back(std::move(row));
  dwarf_srclines_dealloc_b(ctx);
  return rows;
}

// Walks the synthetic CUs and collects every line row.
Result<std::vector<LineRow>> all_rows(Dwarf_Debug dbg) {
  std::vector<LineRow> rows;
  for (;;) {
    Dwarf_Error err = nullptr;
    Dwarf_Unsigned length = 0, type_offset = 0, next = 0;
    Dwarf_Half version = 0, addr_size = 0, offset_size = 0, ext_size = 0, unit_type = 0;
    Dwarf_Off abbrev = 0;
    Dwarf_Sig8 signature{};
    int rc = dwarf_next_cu_header_d(dbg, true, &length, &version, &abbrev, &addr_size, &offset_size, &ext_size,
                                    &signature, &type_offset, &next, &unit_type, &err);
    if (rc == DW_DLV_NO_ENTRY) break;
    if (rc != DW_DLV_OK) return fail(ExitCode::BadInput, dwarf_message(dbg, err));
    Dwarf_Die die = nullptr;
    if (dwarf_siblingof_b(dbg, nullptr, true, &die, &err) != DW_DLV_OK)
      return fail(ExitCode::BadInput, dwarf_message(dbg, err));
    auto cu = cu_rows(dbg, die);
    dwarf_dealloc_die(die);
    if (!cu) return std::unexpected(cu.error());
    rows.insert(rows.end(), cu->begin(), cu->end());
  }
  return rows;
}

Result<std::vector<LineRow>> decode_lines(DwarfSections& sections) {
  Dwarf_Obj_Access_Interface iface{&sections, &kMethods};
  Dwarf_Debug dbg = nullptr;
  Dwarf_Error err = nullptr;
  int rc = dwarf_object_init_b(&iface, nullptr, nullptr, DW_GROUPNUMBER_ANY, &dbg, &err);
  if (rc != DW_DLV_OK) return fail(ExitCode::BadInput, dwarf_message(nullptr, err));
  auto rows = all_rows(dbg);
  dwarf_object_finish(dbg, &err);
  return rows;
}

}  // namespace

// ------------------------------------------------------------ assembling

// Turns sections and rows into a Cubin; a friend so it can fill the fields.
struct CubinBuilder {
  Cubin c;
  std::map<std::string, uint32_t> file_ids;

  uint32_t file_id(const std::string& f) {
    auto [it, added] = file_ids.emplace(f, static_cast<uint32_t>(c.files_.size()));
    if (added) c.files_.push_back(f);
    return it->second;
  }

  // Each row covers [its address, the next row's address) within a sequence.
  void add_rows(const std::vector<LineRow>& rows) {
    for (size_t i = 0; i + 1 < rows.size(); ++i) {
      const auto& r = rows[i];
      if (r.end_sequence || r.line == 0 || rows[i + 1].addr <= r.addr) continue;
      c.ranges_.push_back({r.addr, rows[i + 1].addr, file_id(r.file), r.line});
    }
    std::sort(c.ranges_.begin(), c.ranges_.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  }

  void add_line_info(const std::vector<ElfSection>& secs, const SymbolTable& syms) {
    const ElfSection* line = find_section(secs, ".debug_line");
    if (!line) return;
    DwarfSections ds;
    std::string bytes = relocated(*line, secs, syms, c.warnings_);
    auto programs = line_program_offsets(bytes);
    ds.add(".debug_line", std::move(bytes));
    for (const char* extra : {".debug_line_str", ".debug_str"})
      if (const ElfSection* s = find_section(secs, extra)) ds.add(extra, section_bytes(*s));
    ds.add(".debug_info", synthetic_debug_info(programs));
    ds.add(".debug_abbrev", synthetic_debug_abbrev());
    auto rows = decode_lines(ds);
    if (!rows) {
      c.warnings_.push_back("cubin: unreadable line table (.debug_line): " + rows.error().message);
      return;
    }
    add_rows(*rows);
  }
};

Result<Cubin> Cubin::parse(std::string_view bytes) {
  ElfFile elf(bytes);
  KEET_TRY_VOID(check_header(elf.get()));
  KEET_TRY(secs, list_sections(elf.get()));
  KEET_TRY(syms, read_symbols(elf.get(), *secs));
  locate_code(*syms, *secs, bytes.size());
  CubinBuilder b;
  if (GElf_Ehdr eh; gelf_getehdr(elf.get(), &eh)) b.c.sm_ = sm_of(eh);
  for (const auto& s : syms->all)
    if (s.is_function && !s.name.empty()) b.c.symbols_.push_back(s);
  b.add_line_info(*secs, *syms);
  return std::move(b.c);
}

std::string_view Cubin::code(std::string_view bytes, const CubinSymbol& s) {
  if (s.code_size == 0 || s.code_offset > bytes.size() || s.code_size > bytes.size() - s.code_offset) return {};
  return bytes.substr(s.code_offset, s.code_size);
}

const CubinSymbol* Cubin::symbol(std::string_view mangled) const {
  for (const auto& s : symbols_)
    if (s.name == mangled) return &s;
  return nullptr;
}

std::optional<SourceLocation> Cubin::location(uint64_t pc) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), pc, [](uint64_t v, const LineRange& r) { return v < r.begin; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (pc >= it->end) return std::nullopt;
  return SourceLocation{files_[it->file], it->line};
}

}  // namespace keet::readers
