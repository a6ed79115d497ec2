#include "report_writer.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "cubin_writer.h"

namespace keet::testing {
namespace {

void put_u32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

uint32_t get_u32(const std::string& s, size_t at) {
  if (at + 4 > s.size()) throw std::runtime_error("short report");
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

}  // namespace

ReportWriter::ReportWriter() = default;

uint32_t ReportWriter::name_id(const std::string& name) {
  for (size_t i = 0; i < all_names_.size(); ++i)
    if (all_names_[i] == name) return static_cast<uint32_t>(i);
  all_names_.push_back(name);
  return static_cast<uint32_t>(all_names_.size() - 1);
}

void ReportWriter::flush_strings(Block& b, size_t max) {
  for (size_t n = 0; flushed_ < all_names_.size() && n < max; ++flushed_, ++n)
    b.header.mutable_string_table()->add_strings(all_names_[flushed_]);
}

pb::ProfileResult ReportWriter::kernel(const std::string& name, uint64_t grid, uint64_t block,
                                       const std::vector<std::pair<std::string, double>>& metrics) {
  pb::ProfileResult r;
  r.set_kernel_mangled_name("_Z" + std::to_string(name.size()) + name + "v");
  r.set_kernel_function_name(name);
  r.set_kernel_demangled_name(name + "()");
  r.mutable_grid_size()->set_x(grid);
  r.mutable_grid_size()->set_y(1);
  r.mutable_grid_size()->set_z(1);
  r.mutable_block_size()->set_x(block);
  r.mutable_block_size()->set_y(1);
  r.mutable_block_size()->set_z(1);
  for (const auto& [n, v] : metrics) {
    auto* m = r.add_metric_results();
    m->set_name_id(name_id(n));
    m->mutable_value()->set_double_value(v);
  }
  return r;
}

std::string launches_report(const std::vector<WrittenLaunch>& launches, const std::string& device) {
  ReportWriter w;
  ReportWriter::Block b;
  for (const auto& l : launches) {
    auto k = w.kernel(l.name, l.grid, l.block, l.metrics);
    auto* dev = k.add_metric_results();
    dev->set_name_id(w.name_id("device__attribute_display_name"));
    dev->mutable_value()->set_string_value(device);
    w.flush_strings(b);
    b.results.push_back(k.SerializeAsString());
  }
  w.add(b);
  return w.bytes();
}

std::string one_kernel_report(const std::string& kernel, uint64_t grid, uint64_t block,
                              const std::vector<std::pair<std::string, double>>& metrics) {
  return launches_report({{kernel, grid, block, metrics}});
}

std::string cut_short_report(const std::vector<std::string>& kernels, size_t cut_bytes) {
  ReportWriter w;
  for (const auto& name : kernels) {
    ReportWriter::Block b;
    b.results.push_back(w.kernel(name, 64, 256, {{"gpu__time_duration.sum", 1000}}).SerializeAsString());
    w.flush_strings(b);
    w.add(b);
  }
  std::string bytes = w.bytes();
  return bytes.substr(0, bytes.size() - std::min(cut_bytes, bytes.size()));
}

std::string scenario_and_tiny_report(double duration_ns) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("strided_copy", 8192, 256, scenario_metrics(duration_ns));
  auto tiny = w.kernel("tiny", 1, 32, {{"gpu__time_duration.sum", 1500}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  b.results.push_back(tiny.SerializeAsString());
  w.add(b);
  return w.bytes();
}

namespace {

void put_le(std::string& s, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void pad_to(std::string& s, size_t align) {
  while (s.size() % align) s.push_back('\0');
}

struct SectionHeader {
  uint32_t name = 0, type = 0;
  uint64_t flags = 0, offset = 0, size = 0;
  uint32_t link = 0, info = 0;
  uint64_t align = 1, entsize = 0;
};

void put_section_header(std::string& s, const SectionHeader& h) {
  put_le(s, h.name, 4), put_le(s, h.type, 4), put_le(s, h.flags, 8), put_le(s, 0, 8);  // sh_addr 0, as nvcc writes
  put_le(s, h.offset, 8), put_le(s, h.size, 8), put_le(s, h.link, 4), put_le(s, h.info, 4);
  put_le(s, h.align, 8), put_le(s, h.entsize, 8);
}

void put_symbol(std::string& s, uint32_t name, uint8_t info, uint16_t section, uint64_t value, uint64_t size) {
  put_le(s, name, 4), put_le(s, info, 1), put_le(s, 0, 1), put_le(s, section, 2), put_le(s, value, 8),
      put_le(s, size, 8);
}

pb::MetricResult pc_list(ReportWriter& w, const std::string& name, double total,
                         const std::vector<std::pair<uint64_t, uint64_t>>& by_key) {
  pb::MetricResult m;
  m.set_name_id(w.name_id(name));
  m.mutable_value()->set_double_value(total);
  for (auto [key, v] : by_key) {
    auto* e = m.add_instances();
    e->mutable_correlation_id()->set_uint64_value(key);
    e->mutable_element_value()->set_uint64_value(v);
  }
  return m;
}

}  // namespace

std::string tiny_cubin(const std::string& mangled, const std::string& code, uint64_t pc, int sm, bool section_rebased) {
  const std::string text_name = ".text." + mangled;
  const std::string shstr = std::string("\0.shstrtab\0.strtab\0.symtab\0", 27) + text_name + '\0';
  const std::string str = std::string("\0", 1) + mangled + '\0';
  std::string sym;
  put_symbol(sym, 0, 0, 0, 0, 0);
  put_symbol(sym, 0, 0x03, 4, section_rebased ? pc : 0, 0);  // STT_SECTION, LOCAL: .text.<mangled>
  put_symbol(sym, 1, 0x12, 4, pc, code.size());              // STT_FUNC, GLOBAL
  std::string out(64, '\0');
  size_t shstr_at = out.size();
  out += shstr;
  size_t str_at = out.size();
  out += str;
  pad_to(out, 8);
  size_t sym_at = out.size();
  out += sym;
  pad_to(out, 128);
  size_t text_at = out.size();
  out += code;
  pad_to(out, 8);
  size_t sh_at = out.size();
  put_section_header(out, {});
  put_section_header(out, {1, 3, 0, shstr_at, shstr.size()});               // .shstrtab
  put_section_header(out, {11, 3, 0, str_at, str.size()});                  // .strtab
  put_section_header(out, {19, 2, 0, sym_at, sym.size(), 2, 2, 8, 24});     // .symtab
  put_section_header(out, {27, 1, 6, text_at, code.size(), 3, 0, 128, 0});  // .text.<mangled>: PROGBITS, AX
  std::string eh;
  eh += std::string(
      "\x7f"
      "ELF",
      4);
  eh += std::string{2, 1, 1, 0x33, 7};  // 64-bit, little-endian, version 1, CUDA's OS ABI, ABI version 7
  eh.resize(16, '\0');
  put_le(eh, 2, 2), put_le(eh, 190, 2), put_le(eh, 1, 4);    // ET_EXEC, EM_CUDA
  put_le(eh, 0, 8), put_le(eh, 0, 8), put_le(eh, sh_at, 8);  // entry, phoff, shoff
  put_le(eh, (static_cast<uint64_t>(sm) << 16) | 0x500 | static_cast<uint64_t>(sm),
         4);  // e_flags as CUDA 12 writes them
  put_le(eh, 64, 2), put_le(eh, 56, 2), put_le(eh, 0, 2), put_le(eh, 64, 2), put_le(eh, 5, 2), put_le(eh, 1, 2);
  out.replace(0, 64, eh);
  return out;
}

std::string scenario_report_with_cubin(const std::string& cubin, uint64_t pc,
                                       const std::vector<std::pair<uint64_t, uint64_t>>& excess, int sm) {
  constexpr uint64_t kModule = 5;
  ReportWriter w;
  ReportWriter::Block b;
  pb::SourceData module;
  module.set_reference(kModule);
  module.set_sm_revision(static_cast<uint32_t>((sm / 10) << 16 | sm % 10));
  module.set_binary(cubin);
  b.sources.push_back(module.SerializeAsString());
  auto metrics = scenario_metrics(60000);
  std::erase_if(metrics,
                [](const auto& m) { return m.first == "derived__memory_l2_theoretical_sectors_global_excessive"; });
  auto k = w.kernel("strided_copy", 8192, 256, metrics);
  k.mutable_source()->set_reference(kModule);
  std::vector<std::pair<uint64_t, uint64_t>> by_pc;
  uint64_t total = 0;
  for (auto [offset, sectors] : excess) by_pc.emplace_back(pc + offset, sectors), total += sectors;
  *k.add_metric_results() =
      pc_list(w, "derived__memory_l2_theoretical_sectors_global_excessive", static_cast<double>(total), by_pc);
  *k.add_metric_results() = pc_list(w, "launch__function_pcs", static_cast<double>(pc), {{0, pc}});
  auto* dev = k.add_metric_results();
  dev->set_name_id(w.name_id("device__attribute_display_name"));
  dev->mutable_value()->set_string_value("Test GPU");
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
}

std::string source_lines_report(const std::string& function, const std::string& mangled, const std::string& path,
                                const std::vector<LineLoad>& load, bool line_table) {
  constexpr uint64_t kModule = 3;
  LineTableCubin cubin;
  cubin.kernel = mangled;
  cubin.kernel_size = 32 * load.size();
  cubin.lines.clear();
  for (const auto& l : load) cubin.lines.push_back(l.line);
  auto slash = path.find_last_of('/');
  cubin.directory = slash == std::string::npos ? "" : path.substr(0, slash);
  cubin.file = slash == std::string::npos ? path : path.substr(slash + 1);
  const uint64_t pc = cubin.kernel_pc;

  ReportWriter w;
  ReportWriter::Block b;
  pb::SourceData module;
  module.set_reference(kModule);
  module.set_sm_revision(9 << 16);
  module.set_binary(line_table ? cubin.bytes()
                               : tiny_cubin(mangled, std::string(cubin.kernel_size, '\0'), pc, 90, false));
  b.sources.push_back(module.SerializeAsString());
  auto metrics = scenario_metrics(60000);
  std::erase_if(metrics,
                [](const auto& m) { return m.first == "derived__memory_l2_theoretical_sectors_global_excessive"; });
  auto k = w.kernel(function, 8192, 256, metrics);
  k.set_kernel_mangled_name(mangled);
  k.mutable_source()->set_reference(kModule);
  std::vector<std::pair<uint64_t, uint64_t>> samples, stalled, selected, executed, excess;
  uint64_t sums[5] = {};
  for (size_t i = 0; i < load.size(); ++i) {
    const auto& l = load[i];
    uint64_t at = pc + 32 * i;
    auto put = [&](auto& list, uint64_t v, uint64_t& sum) {
      if (v) list.emplace_back(at, v), sum += v;
    };
    put(samples, l.samples, sums[0]);
    put(stalled, l.long_scoreboard, sums[1]);
    put(selected, l.samples - l.long_scoreboard, sums[2]);
    put(executed, l.instructions, sums[3]);
    put(excess, l.excess_sectors, sums[4]);
  }
  *k.add_metric_results() = pc_list(w, "launch__function_pcs", static_cast<double>(pc), {{0, pc}});
  *k.add_metric_results() = pc_list(w, "smsp__pcsamp_sample_count", static_cast<double>(sums[0]), samples);
  *k.add_metric_results() =
      pc_list(w, "smsp__pcsamp_warps_issue_stalled_long_scoreboard", static_cast<double>(sums[1]), stalled);
  *k.add_metric_results() =
      pc_list(w, "smsp__pcsamp_warps_issue_stalled_selected", static_cast<double>(sums[2]), selected);
  *k.add_metric_results() = pc_list(w, "inst_executed", static_cast<double>(sums[3]), executed);
  *k.add_metric_results() =
      pc_list(w, "derived__memory_l2_theoretical_sectors_global_excessive", static_cast<double>(sums[4]), excess);
  auto* dev = k.add_metric_results();
  dev->set_name_id(w.name_id("device__attribute_display_name"));
  dev->mutable_value()->set_string_value("Test GPU");
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
}

int line_holding(const std::string& path, std::string_view text) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

std::string transpose_example_report(const std::string& source, bool lineinfo) {
  int x = line_holding(source, "int x ="), y = line_holding(source, "int y ="),
      move = line_holding(source, "out[x * N + y]");
  if (!x || !y || !move) throw std::runtime_error(source + " is not KEET's transpose example");
  std::vector<LineLoad> load = {
      {x, 60, 0, 4096, 0}, {y, 40, 0, 4096, 0}, {move, 300, 250, 4096, 0}, {move, 600, 550, 4096, 3'000'000}};
  return source_lines_report("transposeNaive", "_Z14transposeNaivePKfPf",
                             "/home/ci/keet/examples/transpose/transpose.cu", load, lineinfo);
}

std::vector<std::pair<std::string, double>> scenario_metrics(double duration_ns) {
  return {{"gpu__time_duration.sum", duration_ns},
          {"device__attribute_compute_capability_major", 9},
          {"device__attribute_compute_capability_minor", 0},
          {"launch__sm_count", 132},
          {"launch__grid_size", 8192},
          {"launch__block_size", 256},
          {"launch__waves_per_multiprocessor", 7.76},
          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 12},
          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 81},
          {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 81},
          {"derived__memory_l2_theoretical_sectors_global_excessive", 6000000},
          {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 8000000},
          {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1000000},
          {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 250000},
          {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 250000},
          {"smsp__issue_active.avg.pct_of_peak_sustained_active", 9}};
}

std::string ReportWriter::bytes() const {
  std::string out("NVR\0", 4);
  pb::FileHeader fh;
  fh.set_version(version);
  std::string fhs = fh.SerializeAsString();
  put_u32(out, static_cast<uint32_t>(fhs.size()));
  out += fhs;
  for (const auto& b : blocks_) {
    std::string payload;
    for (const auto* list : {&b.sources, &b.results, &b.ranges})
      for (const auto& item : *list) {
        put_u32(payload, static_cast<uint32_t>(item.size()));
        payload += item;
      }
    payload += b.extra_payload;
    pb::BlockHeader h = b.header;
    if (!h.has_num_sources() && !b.sources.empty()) h.set_num_sources(b.sources.size());
    if (!h.has_num_results() && !b.results.empty()) h.set_num_results(b.results.size());
    if (!h.has_num_range_results() && !b.ranges.empty()) h.set_num_range_results(b.ranges.size());
    if (b.set_payload_size) h.set_payload_size(payload.size());
    std::string hs = h.SerializeAsString();
    put_u32(out, static_cast<uint32_t>(hs.size()));
    out += hs + payload;
  }
  return out;
}

void ReportWriter::write(const std::string& path) const { std::ofstream(path, std::ios::binary) << bytes(); }

RawReport RawReport::parse(const std::string& s) {
  RawReport r;
  size_t at = 4;
  uint32_t n = get_u32(s, at);
  r.file_header = s.substr(at + 4, n);
  at += 4 + n;
  while (at < s.size()) {
    Block b;
    n = get_u32(s, at);
    b.header = s.substr(at + 4, n);
    at += 4 + n;
    pb::BlockHeader h;
    h.ParsePartialFromString(b.header);
    size_t items = h.num_sources() + h.num_results() + h.num_range_results();
    for (size_t i = 0; i < items; ++i) {
      n = get_u32(s, at);
      b.items.push_back(s.substr(at + 4, n));
      at += 4 + n;
    }
    r.blocks.push_back(std::move(b));
  }
  return r;
}

std::string RawReport::bytes() const {
  std::string out("NVR\0", 4);
  put_u32(out, static_cast<uint32_t>(file_header.size()));
  out += file_header;
  for (const auto& b : blocks) {
    put_u32(out, static_cast<uint32_t>(b.header.size()));
    out += b.header;
    for (const auto& item : b.items) {
      put_u32(out, static_cast<uint32_t>(item.size()));
      out += item;
    }
  }
  return out;
}

namespace {
void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  out += static_cast<char>(v);
}
}  // namespace

void add_unknown_varint(std::string& unknown, uint32_t field, uint64_t value) {
  put_varint(unknown, uint64_t{field} << 3);
  put_varint(unknown, value);
}

void add_unknown_fixed64(std::string& unknown, uint32_t field, uint64_t value) {
  put_varint(unknown, (uint64_t{field} << 3) | 1);
  for (int i = 0; i < 8; ++i) unknown += static_cast<char>(value >> (8 * i));
}

void add_unknown_delimited(std::string& unknown, uint32_t field, const std::string& bytes) {
  put_varint(unknown, (uint64_t{field} << 3) | 2);
  put_varint(unknown, bytes.size());
  unknown += bytes;
}

}  // namespace keet::testing
