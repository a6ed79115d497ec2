// Small PyTorch profiler (Kineto) traces written by the tests: the events
// torch.profiler writes (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
// user_annotation), times in microseconds as Kineto writes them.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "support/gzip.h"

namespace keet::testing {

class KinetoWriter {
 public:
  // One GPU on device 0 named `gpu` ("" writes no deviceProperties).
  explicit KinetoWriter(std::string gpu = "NVIDIA H100 80GB HBM3");
  void kernel(std::string_view name, double ts, double dur, int64_t corr, int stream = 7, int device = 0);
  void runtime(std::string_view name, double ts, double dur, int64_t corr = -1, std::string_view cat = "cuda_runtime");
  // name as Kineto writes it: "Memcpy HtoD (Pageable -> Device)"
  void memcpy(std::string_view name, double ts, double dur, uint64_t bytes, int64_t corr, int stream = 7);
  void memset(double ts, double dur, uint64_t bytes, int64_t corr, int stream = 7);
  void annotation(std::string_view name, double ts, double dur);
  void rank(int rank, int world_size);
  // A launch and its kernel: cudaLaunchKernel at `call`, the kernel at `ts`.
  void launch(std::string_view name, double call, double ts, double dur, int stream = 7);
  std::string json() const;
  nlohmann::json& events() { return events_; }

 private:
  nlohmann::json trace_, events_ = nlohmann::json::array();
  int64_t next_corr_ = 100000;
};

}  // namespace keet::testing
