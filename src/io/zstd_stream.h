// zstd containers (ncu 2026.3 writes .ncu-repz, readable from ncu 2025.4 on),
// decompressed as a stream: the compressed file is read front to back with
// its pages given back as it goes, and output comes in chunks the caller asks
// for, so neither the compressed nor the decompressed report is ever held whole.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/file.h"
#include "util/error.h"

struct ZSTD_DCtx_s;

namespace keet::io {

// A zstd frame or a skippable frame starts the bytes.
bool is_zstd(std::string_view bytes);

class ZstdStream {
 public:
  explicit ZstdStream(const ByteSource& src);
  ~ZstdStream();
  ZstdStream(const ZstdStream&) = delete;
  ZstdStream& operator=(const ZstdStream&) = delete;

  // Up to `cap` decompressed bytes into `dst`; 0 once every frame has ended.
  // Errors say what is wrong with the container (damaged or cut short).
  Result<size_t> read(char* dst, size_t cap);
  uint64_t produced() const { return produced_; }
  // The input ended inside a frame (a cut-short file), seen by read().
  bool truncated() const { return truncated_; }

 private:
  const ByteSource& src_;
  ZSTD_DCtx_s* ctx_;
  size_t in_pos_ = 0;
  size_t last_ret_ = 0;  // zstd's hint: 0 once a frame is complete
  uint64_t produced_ = 0;
  bool truncated_ = false;
  bool pending_ = false;  // the last call filled the output: zstd may hold more
  bool done_ = false;
};

}  // namespace keet::io
