// libFuzzer target: the Nsight Systems SQLite-export reader (readers/nsys_export.h)
// on bytes in memory, then the timeline renderers. Seeds are the fixture
// exports (scripts/fuzz); SQLite itself must turn every damaged page into an
// error, and the reader every odd table into a clear one.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/timeline.h"
#include "readers/nsys_export.h"
#include "render/timeline.h"

namespace {

void read_and_render(std::string_view bytes) {
  keet::model::TimelineBuilder builder;
  if (!keet::readers::read_nsys_export_bytes(bytes, "fuzz.sqlite", builder)) return;
  auto t = std::move(builder).finish();
  keet::render::TimelineStyle style;
  (void)keet::render::timeline_text(t, style);
  (void)keet::render::timeline_json(t, style).dump();
  (void)keet::render::timeline_html(t, style);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  read_and_render(bytes);
  // Seeds cut to -max_len fail the truncation check at once; with the page
  // count the header announces set to what the bytes hold, SQLite itself
  // meets the damaged pages.
  if (size >= 100) {
    uint32_t page = (uint32_t{data[16]} << 8) | data[17];
    if (page == 1) page = 65536;
    if (page >= 512) {
      auto pages = static_cast<uint32_t>(size / page);
      for (int i = 0; i < 4; ++i) bytes[28 + i] = static_cast<char>(pages >> (24 - 8 * i));
      read_and_render(bytes);
    }
  }
  return 0;
}
