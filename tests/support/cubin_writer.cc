#include "support/cubin_writer.h"

namespace keet::testing {
namespace {

void put(std::string& s, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_uleb(std::string& s, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s.push_back(static_cast<char>(v ? b | 0x80 : b));
  } while (v);
}
void put_sleb(std::string& s, int64_t v) {
  for (bool more = true; more;) {
    uint8_t b = v & 0x7f;
    v >>= 7;
    more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
    s.push_back(static_cast<char>(more ? b | 0x80 : b));
  }
}

// A DWARF 2 line program for one kernel: `lines[i]` covers 32 bytes starting
// at 32*i. The set_address operand (at *site) holds `address_in_place`.
std::string line_program(const LineTableCubin& tc, uint64_t address_in_place, size_t* site) {
  const auto& lines = tc.lines;
  std::string hdr;
  put(hdr, 1, 1), put(hdr, 1, 1), put(hdr, static_cast<uint8_t>(-5), 1), put(hdr, 14, 1), put(hdr, 10, 1);
  for (int len : {0, 1, 1, 1, 1, 0, 0, 0, 1}) put(hdr, len, 1);
  hdr += tc.directory + std::string("\0\0", 2);
  hdr += tc.file + std::string("\0", 1);
  put_uleb(hdr, 1), put_uleb(hdr, 0), put_uleb(hdr, 0);
  hdr.push_back('\0');
  std::string prog{0, 9, 2};  // DW_LNE_set_address
  size_t addr_at = prog.size();
  put(prog, address_in_place, 8);
  int line = 1;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) prog.push_back(2), put_uleb(prog, 32);                         // advance_pc
    prog.push_back(3), put_sleb(prog, lines[i] - line), line = lines[i];  // advance_line
    prog.push_back(1);                                                    // copy
  }
  prog.push_back(2), put_uleb(prog, 32);
  prog += std::string{0, 1, 1};  // end_sequence
  std::string out;
  put(out, 2 + 4 + hdr.size() + prog.size(), 4);
  put(out, 2, 2);
  put(out, hdr.size(), 4);
  *site = out.size() + hdr.size() + addr_at;
  return out + hdr + prog;
}

}  // namespace

std::string LineTableCubin::bytes() const {
  size_t site = 0;
  std::string line = line_program(*this, prerelocated ? kernel_pc : 0, &site);
  std::string shstr("\0.shstrtab\0.strtab\0.symtab\0.debug_line\0.rel.debug_line\0", 55);
  std::string str = std::string("\0", 1) + kernel + '\0';
  std::string sym(24, '\0');  // null symbol
  put(sym, 1, 4), put(sym, 0x12, 1), put(sym, 0, 1), put(sym, 1, 2), put(sym, kernel_pc, 8), put(sym, kernel_size, 8);
  std::string rel;
  put(rel, site, 8), put(rel, (uint64_t{1} << 32) | reloc_type, 8);
  struct Sec {
    uint32_t name, type;
    std::string data;
    uint32_t link, info;
    uint64_t entsize;
  };
  std::vector<Sec> secs = {{0, 0, "", 0, 0, 0},    {1, 3, shstr, 0, 0, 0}, {11, 3, str, 0, 0, 0},
                           {19, 2, sym, 2, 1, 24}, {27, 1, line, 0, 0, 0}, {39, 9, rel, 3, 4, 16}};
  std::string body;
  std::vector<uint64_t> offsets;
  for (const auto& s : secs) offsets.push_back(64 + body.size()), body += s.data;
  while (body.size() % 8) body.push_back('\0');
  std::string out(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  out.resize(16, '\0');
  put(out, 2, 2), put(out, machine, 2), put(out, 1, 4), put(out, 0, 8), put(out, 0, 8);
  put(out, 64 + body.size(), 8), put(out, 0, 4), put(out, 64, 2), put(out, 0, 2), put(out, 0, 2);
  put(out, 64, 2), put(out, secs.size(), 2), put(out, 1, 2);
  out += body;
  for (size_t i = 0; i < secs.size(); ++i) {
    const auto& s = secs[i];
    put(out, s.name, 4), put(out, s.type, 4), put(out, 0, 8), put(out, 0, 8);
    put(out, i ? offsets[i] : 0, 8), put(out, s.data.size(), 8), put(out, s.link, 4), put(out, s.info, 4);
    put(out, 1, 8), put(out, s.entsize, 8);
  }
  return out;
}

}  // namespace keet::testing
