// Writes small Nsight Systems SQLite exports for tests: the tables and
// columns nsys 2022.4 (EXPORT_META_DATA) and 2023.x (META_DATA_EXPORT) write,
// only those that get rows (as the exporter does).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keet::testing {

class TimelineWriter {
 public:
  enum class Schema { Before2023, Since2023 };
  explicit TimelineWriter(Schema schema = Schema::Since2023) : schema_(schema) {}

  struct Kernel {
    std::string name;  // demangled
    std::string short_name;
    int64_t start = 0, end = 0;
    uint64_t device = 0, stream = 7;
    uint64_t grid = 1, block = 32;
    std::optional<int64_t> api_start;  // a cudaLaunchKernel call, joined by correlation id
  };
  void kernel(const Kernel& k) { kernels_.push_back(k); }
  // copyKind as ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH, 8 DtoD.
  void memcpy(int kind, int64_t start, int64_t end, uint64_t bytes) { copies_.push_back({kind, start, end, bytes}); }
  void memset(int64_t start, int64_t end, uint64_t bytes) { sets_.push_back({0, start, end, bytes}); }
  // A copy or memset issued by a runtime call (joined by correlation id),
  // with its memory kinds as ENUM_CUDA_MEM_KIND (0 pageable, 1 pinned, 2
  // device, 4 managed; -1 leaves the column NULL). A memset's kind is `dst`.
  struct Transfer {
    int kind = 1;  // copyKind (1 HtoD, 2 DtoH, 8 DtoD); unused for a memset
    int64_t start = 0, end = 0;
    uint64_t bytes = 0;
    std::string api;  // "cudaMemcpy_v3020", "cudaMemcpyAsync_v3020", "cudaMemset_v3020"
    int src = -1, dst = -1;
    int src_device = -1, dst_device = -1;
  };
  void memcpy(const Transfer& t) { transfers_.push_back({t, false}); }
  void memset(const Transfer& t) { transfers_.push_back({t, true}); }
  // A runtime call with its own end ("cudaDeviceSynchronize_v3020").
  void api_call(const std::string& name, int64_t start, int64_t end) { calls_.push_back({name, start, end}); }
  // Time the profiler held the GPU (PROFILER_OVERHEAD), named as nsys names it.
  void overhead(int64_t start, int64_t end, const std::string& name = "CUDA profiling data flush overhead") {
    overheads_.push_back({name, start, end});
  }
  // The profiled program as nsys records it (META_DATA_CAPTURE).
  void command(std::vector<std::string> argv) { command_ = std::move(argv); }
  // What nsys was asked to trace (CAPTURE_EVENT_TYPE: "Cuda", "NvtxEvents", "OSRuntime").
  void traced(std::vector<std::string> kinds) { traced_ = std::move(kinds); }
  void nvtx(const std::string& name, int64_t start, int64_t end) { ranges_.push_back({name, start, end}); }
  // A CUDA API call with no GPU activity of its own in the file (as when
  // nsys traced the API but not the GPU): "cudaLaunchKernel_v7000", "cudaMemcpy_v3020".
  void api_call(const std::string& name, int64_t start) { calls_.push_back({name, start, start + 2000}); }
  // Writes the file (replacing it); throws std::runtime_error on SQLite errors.
  void write(const std::string& path) const;

 private:
  struct Op {
    int kind;
    int64_t start, end;
    uint64_t bytes;
  };
  struct Range {
    std::string name;
    int64_t start, end;
  };
  Schema schema_;
  std::vector<Kernel> kernels_;
  std::vector<Op> copies_, sets_;
  std::vector<Range> ranges_, calls_, overheads_;
  std::vector<std::pair<Transfer, bool>> transfers_;  // (transfer, is a memset)
  std::vector<std::string> command_, traced_;
};

}  // namespace keet::testing
