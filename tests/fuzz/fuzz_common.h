// Shared body of the reader fuzz targets: the bytes go through readers::stream
// (content detection included) from a memory_source, and every kernel read is
// rendered as ncu's raw CSV so the model's values are touched too (and every
// instance list decoded).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/file.h"
#include "readers/reader.h"
#include "render/raw_csv.h"

namespace keet::fuzz {

inline void read_through(std::string_view name, const uint8_t* data, size_t size) {
  auto src = io::memory_source(std::string(name), std::string(reinterpret_cast<const char*>(data), size));
  readers::ReadOptions opt;
  opt.allow_partial = true;
  model::Report header;
  auto report = readers::stream(*src, opt, [&](model::Kernel&& k) {
    double sum = 0;  // instance lists decode on first access: touch every one
    for (const auto& m : k.metrics)
      for (const auto& i : m.instances) sum += i.key.number + i.value.number;
    std::string csv = render::raw_csv(header, {&k});
    if (sum == 0.5) csv += ' ';
    return !csv.empty();
  });
  if (!report) (void)report.error().message();
}

// The same bytes handed straight to one reader, skipping detection, so that
// inputs whose signature the mutator broke still reach the parser.
inline void read_with(std::string_view reader_name, const uint8_t* data, size_t size) {
  auto src = io::memory_source("fuzz-input", std::string(reinterpret_cast<const char*>(data), size));
  for (const auto& r : readers::registry()) {
    if (r.name != reader_name) continue;
    model::Report report;
    (void)r.read(*src, {}, report, [](model::Kernel&&) { return true; });
  }
}

}  // namespace keet::fuzz
