#include "report_writer.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

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

std::string one_kernel_report(const std::string& kernel, uint64_t grid, uint64_t block,
                              const std::vector<std::pair<std::string, double>>& metrics) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel(kernel, grid, block, metrics);
  auto* dev = k.add_metric_results();
  dev->set_name_id(w.name_id("device__attribute_display_name"));
  dev->mutable_value()->set_string_value("Test GPU");
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
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

void ReportWriter::write(const std::string& path) const {
  std::ofstream(path, std::ios::binary) << bytes();
}

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
