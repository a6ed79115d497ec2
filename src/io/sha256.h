// SHA-256 digests as lowercase hex: the content address of an uploaded report
// (keet serve), the name of a cached Nsight Systems export, an LLM cache key.
// libcrypto is opened on first use (io/dynlib.h), so this sits with the other
// outside effects; a file's digest is read in pieces.
#pragma once
#include <string>
#include <string_view>

namespace keet::io {

std::string sha256_hex(std::string_view data);
// The same digest of a file's bytes, read in pieces (memory does not grow
// with the file); empty when the file cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace keet::io
