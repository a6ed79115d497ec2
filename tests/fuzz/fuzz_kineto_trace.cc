// libFuzzer target: the PyTorch profiler (Kineto) trace reader
// (readers/kineto_trace.h) on bytes in memory, then the timeline renderers.
// Seeds are small traces cut from the fixtures (scripts/fuzz). The bytes are
// read as they are (plain JSON, or gzip when they start with its magic) and
// once more gzip-compressed, so that mutated JSON also goes through the
// decompressing path; a small value limit and batch drive the scanner's
// refills and batch boundaries through every input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/run_verdicts.h"
#include "model/timeline.h"
#include "readers/kineto_trace.h"
#include "render/timeline.h"
#include "support/gzip.h"

namespace {

void read_and_render(std::string_view bytes, const keet::readers::KinetoLimits& limits) {
  keet::model::TimelineBuilder builder(keet::analysis::run_limits());
  if (!keet::readers::read_kineto_trace_bytes(bytes, "fuzz.json", builder, limits)) return;
  auto t = std::move(builder).finish();
  keet::render::TimelineStyle style;
  (void)keet::render::timeline_text(t, style);
  (void)keet::render::timeline_json(t, style).dump();
  (void)keet::render::timeline_html(t, style);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  read_and_render(bytes, {});
  read_and_render(bytes, {.max_events = 1000, .max_value_bytes = 1024, .batch_bytes = 64});
  read_and_render(keet::testing::gzip(bytes, 1), {.max_value_bytes = 4096, .batch_bytes = 512});
  return 0;
}
