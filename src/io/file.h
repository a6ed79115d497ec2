// Files: the narrow interface through which readers see bytes on disk.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "util/error.h"

namespace keet::io {

// Read-only bytes of one input. Implementations: a memory-mapped file, or an
// in-memory buffer (tests, stdin).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::string_view bytes() const = 0;
  virtual const std::string& name() const = 0;
  // The reader is done with bytes [0, offset): a mapped file gives those
  // pages back, so streaming a huge report keeps resident memory flat.
  virtual void release(size_t /*offset*/) const {}
  // True when the file shrank while it was being read: the bytes past its new
  // end read as zeros (instead of killing the process with SIGBUS), so what
  // was read from them is wrong and the caller must report an error.
  virtual bool changed() const { return false; }
  // Keeps bytes() alive for as long as the result is held, past the source
  // itself (a model that views a cubin in the mapped report instead of
  // copying it). Null: bytes() dies with the source.
  virtual std::shared_ptr<const void> share() const { return nullptr; }
};

// Maps `path` read-only. Empty files map to an empty view. A SIGBUS handler
// (installed on first use) turns a page that vanished because the file was
// truncated underneath into zeros and marks the source changed(); any other
// SIGBUS still ends the process as before.
Result<std::unique_ptr<ByteSource>> open_file(const std::string& path);
std::unique_ptr<ByteSource> memory_source(std::string name, std::string data);
// A source over bytes its caller owns and keeps unchanged while the source
// is used; share() is null (nothing may keep a view past the read).
std::unique_ptr<ByteSource> view_source(std::string name, std::string_view bytes);

// Reads the regular file at `path` whole into `buffer`, reusing the buffer's
// memory, when it holds at most `max_bytes`; false (and `buffer` untouched)
// when it is larger. For a long-lived process that reads report after report
// (the Python module): the pages of the buffer are faulted in once, where
// each mapping of a file costs page-table updates to make and to undo.
Result<bool> read_file_into(const std::string& path, std::string& buffer, size_t max_bytes);

// The first `max_bytes` of the file at `path` (all of it when shorter; ""
// when it cannot be read), in a buffer sized to what was read: a sniff of a
// file's head, or a bounded read of a child's output.
std::string read_prefix(const std::string& path, size_t max_bytes);

// Everything on standard input (a report piped in: `keet analyze -`).
Result<std::string> read_stdin();
Result<std::string> read_text_file(const std::string& path);
Result<void> write_text_file(const std::string& path, std::string_view text);

}  // namespace keet::io
