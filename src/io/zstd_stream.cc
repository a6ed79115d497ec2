#include "io/zstd_stream.h"

#include <cstring>

#include <fmt/format.h>
#include <zstd.h>

namespace keet::io {

bool is_zstd(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  uint32_t magic;
  std::memcpy(&magic, bytes.data(), 4);
  return magic == ZSTD_MAGICNUMBER || (magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

ZstdStream::ZstdStream(const ByteSource& src) : src_(src), ctx_(ZSTD_createDCtx()) {
  // A frame may ask for a window of up to 2 GiB (ZSTD_WINDOWLOG_MAX); keep
  // zstd's own 128 MiB default limit so a hostile header cannot make it
  // allocate more: such a file is refused with zstd's "window too large".
}

ZstdStream::~ZstdStream() { ZSTD_freeDCtx(ctx_); }

// Fills the caller's buffer as far as the input allows. zstd may still hold
// output after the last input byte when the previous call filled the buffer,
// so the input is over only once a call leaves room in it.
Result<size_t> ZstdStream::read(char* dst, size_t cap) {
  std::string_view in_bytes = src_.bytes();
  ZSTD_outBuffer out{dst, cap, 0};
  while (!done_ && out.pos < out.size) {
    if (in_pos_ == in_bytes.size() && !pending_) {
      done_ = true;
      truncated_ = last_ret_ != 0;  // the last frame did not end
      break;
    }
    ZSTD_inBuffer in{in_bytes.data(), in_bytes.size(), in_pos_};
    size_t out_before = out.pos;
    size_t ret = ZSTD_decompressStream(ctx_, &out, &in);
    if (ZSTD_isError(ret)) {
      done_ = true;
      return fail(ExitCode::BadInput, fmt::format("unsupported compressed report: {}", ZSTD_getErrorName(ret)));
    }
    if (in.pos == in_pos_ && out.pos == out_before && in_pos_ < in_bytes.size()) {
      done_ = true;  // zstd always moves when it has input and room; never spin
      return fail(ExitCode::BadInput, "unsupported compressed report: the zstd stream does not advance");
    }
    in_pos_ = in.pos;
    last_ret_ = ret;
    pending_ = out.pos == out.size;
    src_.release(in_pos_);  // compressed pages already decoded
  }
  produced_ += out.pos;
  // Bytes decoded before a cut are handed out first; the error comes next.
  if (out.pos == 0 && truncated_)
    return fail(ExitCode::BadInput, "truncated compressed report: the zstd frame ends early");
  return out.pos;
}

}  // namespace keet::io
