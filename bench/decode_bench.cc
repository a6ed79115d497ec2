// In-process decode speed, per report, for scripts/bench: KEET's library
// read against a plain protobuf wire walk over the same bytes (the floor:
// every tag of every kernel result, metric result and metric value read,
// nothing built). Usage: keet_decode_bench [--repeat N] REPORT...
// Prints one line per report: "bytes kernels metrics keet_s wire_s path",
// each time the best of N runs (default 5) with the file already mapped.
//
// KEET's read is the full decode a command gets (readers::stream_into with
// default options: metrics, instance lists, rules, modules), and one pass over
// every metric of every kernel reading its name and value, the same job as
// bench/ncu_report_pass.py gives NVIDIA's ncu_report module. Instance lists
// are decoded when asked for (model::InstanceList), as ncu_report's are.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "io/file.h"
#include "ncu_report.pb.h"
#include "readers/reader.h"
#include "readers/wire.h"

namespace {

using keet::readers::wire::Walker;
namespace wire = keet::readers::wire;

struct Tally {
  uint64_t kernels = 0, metrics = 0;
  double checksum = 0;  // keeps the compiler from dropping the work
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool keet_pass(const keet::io::ByteSource& src, Tally& t) {
  keet::model::Report report;
  auto ok = keet::readers::stream_into(src, {}, report, [&](keet::model::Kernel&& k) {
    ++t.kernels;
    for (const auto& m : k.metrics) {
      ++t.metrics;
      t.checksum += static_cast<double>(m.name.size()) + m.value.number + static_cast<double>(m.value.text.size());
    }
    return true;
  });
  return ok.has_value();
}

// Every field of a message, without descending: numbers summed, payloads stepped over.
bool walk_flat(std::string_view bytes, double& sum) {
  Walker w(bytes);
  while (!w.done()) {
    uint32_t field, type;
    if (!w.tag(field, type)) return false;
    uint64_t v = 0;
    uint32_t v32 = 0;
    std::string_view s;
    bool ok = type == wire::kVarint      ? w.varint(v)
              : type == wire::kFixed64   ? w.fixed64(v)
              : type == wire::kFixed32   ? w.fixed32(v32)
              : type == wire::kDelimited ? w.delimited(s)
                                         : false;
    if (!ok) return false;
    sum += static_cast<double>(v + v32 + s.size());
  }
  return true;
}

// A message whose delimited fields in `nested` are messages walked by `inner`.
template <typename Inner>
bool walk_nested(std::string_view bytes, uint32_t nested, double& sum, Inner inner) {
  Walker w(bytes);
  while (!w.done()) {
    uint32_t field, type;
    if (!w.tag(field, type)) return false;
    if (type == wire::kDelimited && field == nested) {
      std::string_view sub;
      if (!w.delimited(sub) || !inner(sub, sum)) return false;
      continue;
    }
    const char* at = w.here();
    if (!w.skip(type)) return false;
    sum += static_cast<double>(w.here() - at);
  }
  return true;
}

bool walk_element(std::string_view e, double& sum) {  // MetricListElement: two MetricValues
  Walker w(e);
  while (!w.done()) {
    uint32_t field, type;
    std::string_view sub;
    if (!w.tag(field, type)) return false;
    if (type == wire::kDelimited) {
      if (!w.delimited(sub) || !walk_flat(sub, sum)) return false;
    } else if (!w.skip(type)) {
      return false;
    }
  }
  return true;
}

bool walk_metric(std::string_view m, double& sum) {  // MetricResult: id, value, elements
  Walker w(m);
  while (!w.done()) {
    uint32_t field, type;
    std::string_view sub;
    if (!w.tag(field, type)) return false;
    if (type != wire::kDelimited) {
      uint64_t v = 0;
      if (!w.skip(type)) return false;
      sum += static_cast<double>(v);
      continue;
    }
    if (!w.delimited(sub)) return false;
    if (!(field == 2 ? walk_flat(sub, sum) : field == 3 ? walk_element(sub, sum) : true)) return false;
  }
  return true;
}

bool walk_result(std::string_view r, double& sum) {  // ProfileResult: metric results (13) walked down
  return walk_nested(r, 13, sum, walk_metric);
}

uint32_t u32_at(std::string_view b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// The file's framing (magic, file header, blocks of header + items); kernel
// results walked to their leaves, other items stepped over by length.
bool wire_pass(std::string_view b, Tally& t) {
  if (b.size() < 8 || b.substr(0, 4) != std::string_view("NVR\0", 4)) return false;
  size_t at = 4;
  auto item = [&](std::string_view& out) {
    if (b.size() - at < 4) return false;
    uint32_t n = u32_at(b, at);
    if (b.size() - at - 4 < n) return false;
    out = b.substr(at + 4, n);
    at += 4 + size_t{n};
    return true;
  };
  std::string_view x;
  if (!item(x)) return false;
  keet::pb::BlockHeader h;
  while (at < b.size()) {
    if (!item(x) || !h.ParsePartialFromArray(x.data(), static_cast<int>(x.size()))) return false;
    for (uint32_t i = 0; i < h.num_sources(); ++i)
      if (!item(x)) return false;
    for (uint32_t i = 0; i < h.num_results(); ++i) {
      if (!item(x) || !walk_result(x, t.checksum)) return false;
      ++t.kernels;
    }
    for (uint32_t i = 0; i < h.num_range_results(); ++i)
      if (!item(x)) return false;
  }
  return true;
}

template <typename Pass>
double best_of(int repeat, Tally& tally, Pass pass) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    Tally t;
    auto t0 = std::chrono::steady_clock::now();
    bool ok = pass(t);
    double dt = seconds_since(t0);
    if (!ok) return -1;
    best = std::min(best, dt);
    tally = t;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  int first = 1;
  if (argc > 2 && std::string_view(argv[1]) == "--repeat") repeat = std::max(1, std::atoi(argv[2])), first = 3;
  for (int i = first; i < argc; ++i) {
    auto src = keet::io::open_file(argv[i]);
    if (!src) {
      std::printf("- - - - - %s\n", argv[i]);
      continue;
    }
    std::string_view bytes = (*src)->bytes();
    // KEET_DECODE_IN_MEMORY=1: read from a copy in memory instead of the
    // mapping (which the reader gives back page by page as it goes, so every
    // run faults the file in again): the decode alone.
    std::unique_ptr<keet::io::ByteSource> copy;
    if (std::getenv("KEET_DECODE_IN_MEMORY")) copy = keet::io::memory_source(argv[i], std::string(bytes));
    const keet::io::ByteSource& read_from = copy ? *copy : **src;
    Tally keet, walk;
    double ks = best_of(repeat, keet, [&](Tally& t) { return keet_pass(read_from, t); });
    double ws = best_of(repeat, walk, [&](Tally& t) { return wire_pass(bytes, t); });
    std::printf("%zu %llu %llu %.6f %.6f %s\n", bytes.size(), static_cast<unsigned long long>(keet.kernels),
                static_cast<unsigned long long>(keet.metrics), ks, ws, argv[i]);
  }
  return 0;
}
