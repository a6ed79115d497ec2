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
  std::vector<Range> ranges_, calls_;
};

}  // namespace keet::testing
