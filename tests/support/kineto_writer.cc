#include "support/kineto_writer.h"

namespace keet::testing {

using Json = nlohmann::json;  // not `json`: KinetoWriter::json() would hide it

KinetoWriter::KinetoWriter(std::string gpu) {
  trace_["schemaVersion"] = 1;
  if (!gpu.empty()) trace_["deviceProperties"] = Json::array({{{"id", 0}, {"name", gpu}, {"computeMajor", 9}}});
}

void KinetoWriter::kernel(std::string_view name, double ts, double dur, int64_t corr, int stream, int device) {
  events_.push_back({{"ph", "X"},
                     {"cat", "kernel"},
                     {"name", name},
                     {"pid", device},
                     {"tid", stream},
                     {"ts", ts},
                     {"dur", dur},
                     {"args",
                      {{"device", device},
                       {"stream", stream},
                       {"correlation", corr},
                       {"grid", {128, 1, 1}},
                       {"block", {256, 1, 1}}}}});
}

void KinetoWriter::runtime(std::string_view name, double ts, double dur, int64_t corr, std::string_view cat) {
  Json args = Json::object();
  if (corr >= 0) args["correlation"] = corr;
  events_.push_back({{"ph", "X"},
                     {"cat", cat},
                     {"name", name},
                     {"pid", 4242},
                     {"tid", 4242},
                     {"ts", ts},
                     {"dur", dur},
                     {"args", args}});
}

void KinetoWriter::memcpy(std::string_view name, double ts, double dur, uint64_t bytes, int64_t corr, int stream) {
  events_.push_back({{"ph", "X"},
                     {"cat", "gpu_memcpy"},
                     {"name", name},
                     {"pid", 0},
                     {"tid", stream},
                     {"ts", ts},
                     {"dur", dur},
                     {"args", {{"device", 0}, {"stream", stream}, {"correlation", corr}, {"bytes", bytes}}}});
}

void KinetoWriter::memset(double ts, double dur, uint64_t bytes, int64_t corr, int stream) {
  events_.push_back({{"ph", "X"},
                     {"cat", "gpu_memset"},
                     {"name", "Memset (Device)"},
                     {"pid", 0},
                     {"tid", stream},
                     {"ts", ts},
                     {"dur", dur},
                     {"args", {{"device", 0}, {"stream", stream}, {"correlation", corr}, {"bytes", bytes}}}});
}

void KinetoWriter::annotation(std::string_view name, double ts, double dur) {
  events_.push_back({{"ph", "X"},
                     {"cat", "user_annotation"},
                     {"name", name},
                     {"pid", 4242},
                     {"tid", 4242},
                     {"ts", ts},
                     {"dur", dur}});
}

void KinetoWriter::rank(int rank, int world_size) {
  trace_["distributedInfo"] = {{"backend", "nccl"}, {"rank", rank}, {"world_size", world_size}};
}

void KinetoWriter::launch(std::string_view name, double call, double ts, double dur, int stream) {
  int64_t corr = next_corr_++;
  runtime("cudaLaunchKernel", call, 3, corr);
  kernel(name, ts, dur, corr, stream);
}

std::string KinetoWriter::json() const {
  auto t = trace_;
  t["traceEvents"] = events_;
  t["traceName"] = "test.pt.trace.json";
  return t.dump(1);
}

}  // namespace keet::testing
