// A small .ncu-rep writer for tests and benchmarks: builds reports with exactly
// the structure a test needs (block layout, string tables, unknown fields,
// truncation) from KEET's own protobuf schema.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ncu_report.pb.h"

namespace keet::testing {

class ReportWriter {
 public:
  ReportWriter();
  // A block: header fields plus payload items, each already serialized.
  struct Block {
    pb::BlockHeader header;
    std::vector<std::string> sources;
    std::vector<std::string> results;
    std::vector<std::string> ranges;
    std::string extra_payload;  // bytes appended to the payload (unknown items)
    bool set_payload_size = true;
  };
  void add(Block b) { blocks_.push_back(std::move(b)); }
  // Interns a metric name in the pending string table; returns its NameId.
  uint32_t name_id(const std::string& name);
  // Moves the pending strings (at most `max` of them, oldest first) into
  // `b`'s string table (append semantics).
  void flush_strings(Block& b, size_t max = SIZE_MAX);
  std::string bytes() const;
  void write(const std::string& path) const;

  // Convenience: a kernel result with scalar metrics, names interned here.
  pb::ProfileResult kernel(const std::string& name, uint64_t grid, uint64_t block,
                           const std::vector<std::pair<std::string, double>>& metrics);

  uint32_t version = 7;

 private:
  std::vector<Block> blocks_;
  std::vector<std::string> all_names_;
  size_t flushed_ = 0;
};

// One launch of a written report: its kernel's name, launch shape and scalar metrics.
struct WrittenLaunch {
  std::string name;
  uint64_t grid = 4096, block = 256;
  std::vector<std::pair<std::string, double>> metrics;
};
// A whole report of these launches, in this order, each on the device `device`
// names (device__attribute_display_name).
std::string launches_report(const std::vector<WrittenLaunch>& launches, const std::string& device = "Test GPU");

// A whole report of one kernel with scalar `metrics`, on a device named
// "Test GPU" (the set-up most end-to-end tests need).
std::string one_kernel_report(const std::string& kernel, uint64_t grid, uint64_t block,
                              const std::vector<std::pair<std::string, double>>& metrics);

// One block per kernel (64x256, 1000 ns each) with the last `cut_bytes`
// bytes gone: a truncated report whose last block is cut short and whose
// other kernels read whole.
std::string cut_short_report(const std::vector<std::string>& kernels, size_t cut_bytes);

// Two kernels: the scenario kernel (strided_copy, `duration_ns`) and a 1.5 us
// "tiny" one, with no device name.
std::string scenario_and_tiny_report(double duration_ns);

// The metrics of the tests' memory-bound scenario kernel (sm_90, 81% DRAM,
// uncoalesced global loads, 9% issue activity), taking `duration_ns`.
std::vector<std::pair<std::string, double>> scenario_metrics(double duration_ns);

// A minimal cubin as ncu stores one: an EM_CUDA ELF (the SM in e_flags' low
// byte, as before CUDA 13) whose one function `mangled` has `code` as its
// .text section, rebased to the load address `pc`: its own symbol holds `pc`,
// and so does its section's symbol when `section_rebased` (older ncu; newer
// ncu leaves that one at 0).
std::string tiny_cubin(const std::string& mangled, const std::string& code, uint64_t pc, int sm,
                       bool section_rebased = true);

// The scenario kernel (strided_copy, mangled _Z12strided_copyv) starting at
// `pc`, with its excess global sectors per PC (`excess`: offset from `pc`,
// sectors) and its module embedding `cubin` for SM `sm` (86: sm_86).
std::string scenario_report_with_cubin(const std::string& cubin, uint64_t pc,
                                       const std::vector<std::pair<uint64_t, uint64_t>>& excess, int sm);

// One instruction of source_lines_report's kernel: the source line it is on,
// its PC samples (`long_scoreboard` of them stalled there, the rest
// "selected"), its executed instructions and its excess global sectors.
struct LineLoad {
  int line = 0;
  uint64_t samples = 0, long_scoreboard = 0, instructions = 0, excess_sectors = 0;
};
// The memory-bound scenario kernel as `function` (mangled `mangled`), its
// embedded cubin (tests/support/cubin_writer.h) mapping instruction i, 32
// bytes each, to line load[i].line of `path`, with the per-PC source counters
// of `load`: a report `keet source` and `keet lsp` place on source lines.
// Without `line_table`, its cubin has none (a build without -lineinfo): the
// same counters, on SASS instructions only.
std::string source_lines_report(const std::string& function, const std::string& mangled, const std::string& path,
                                const std::vector<LineLoad>& load, bool line_table = true);

// KEET's example examples/transpose/transpose.cu (at `source`) as profiled on
// another machine (its line table names /home/ci/keet/examples/transpose/...):
// transposeNaive's stall samples, 90% on the line that moves the element
// (whose store has the excess sectors), 6% on "int x =", 4% on "int y =".
// The Language Server's tests (e2e and Neovim) place it on that source.
// Without `lineinfo`, its cubin has no line table: no line can be marked, and
// the kernel is found by its name.
std::string transpose_example_report(const std::string& source, bool lineinfo = true);
// The 1-based line of the file at `path` holding `text`; 0 when none does.
int line_holding(const std::string& path, std::string_view text);

// Splits a real report into its raw framed parts so tests can re-assemble or
// replicate them (e.g. the 20,000-kernel benchmark report).
struct RawReport {
  std::string file_header;  // serialized FileHeader
  struct Block {
    std::string header;
    std::vector<std::string> items;  // payload items in order
  };
  std::vector<Block> blocks;
  static RawReport parse(const std::string& bytes);
  std::string bytes() const;
};

// Unknown fields for a message's mutable_unknown_fields() (lite messages keep
// them as raw wire bytes): a varint, a fixed64 or a length-delimited field.
void add_unknown_varint(std::string& unknown, uint32_t field, uint64_t value);
void add_unknown_fixed64(std::string& unknown, uint32_t field, uint64_t value);
void add_unknown_delimited(std::string& unknown, uint32_t field, const std::string& bytes);

}  // namespace keet::testing
