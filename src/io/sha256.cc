#include "io/sha256.h"

#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "io/dynlib.h"

namespace keet::io {

namespace {

// libcrypto is opened on first use (see io/dynlib.h); the digest goes through
// its one-shot EVP_Digest with EVP_sha256.
using EvpMd = struct evp_md_st;
using EvpMdCtx = struct evp_md_ctx_st;
struct Sha256 {
  int (*digest)(const void*, size_t, unsigned char*, unsigned int*, const EvpMd*, void*) = nullptr;
  const EvpMd* (*sha256)() = nullptr;
  // The incremental form, for files.
  EvpMdCtx* (*ctx_new)() = nullptr;
  void (*ctx_free)(EvpMdCtx*) = nullptr;
  int (*init)(EvpMdCtx*, const EvpMd*, void*) = nullptr;
  int (*update)(EvpMdCtx*, const void*, size_t) = nullptr;
  int (*final)(EvpMdCtx*, unsigned char*, unsigned int*) = nullptr;
};

Sha256 load_sha256() {
  Sha256 s;
  auto lib = io::open_library("libcrypto.so.3");
  if (!lib || !io::bind_symbol(*lib, "EVP_Digest", s.digest) || !io::bind_symbol(*lib, "EVP_sha256", s.sha256) ||
      !io::bind_symbol(*lib, "EVP_MD_CTX_new", s.ctx_new) || !io::bind_symbol(*lib, "EVP_MD_CTX_free", s.ctx_free) ||
      !io::bind_symbol(*lib, "EVP_DigestInit_ex", s.init) || !io::bind_symbol(*lib, "EVP_DigestUpdate", s.update) ||
      !io::bind_symbol(*lib, "EVP_DigestFinal_ex", s.final))
    s = Sha256{};
  return s;
}

const Sha256& sha256_lib() {
  static const Sha256 lib = load_sha256();
  return lib;
}

std::string hex(const unsigned char* digest, unsigned int len) {
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

// Without libcrypto (never on a Debian system with keet's dependencies) keys
// fall back to 64-bit FNV-1a: stable, just not collision-resistant.
std::string fnv1a_hex(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  const Sha256& lib = sha256_lib();
  unsigned char digest[64];
  unsigned int len = 0;
  if (!lib.digest || lib.digest(data.data(), data.size(), digest, &len, lib.sha256(), nullptr) != 1)
    return fnv1a_hex(data);
  return hex(digest, len);
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  const Sha256& lib = sha256_lib();
  std::vector<char> buf(1 << 16);
  if (!lib.ctx_new) {  // as sha256_hex falls back
    uint64_t h = 1469598103934665603ull;
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
      for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
    return in.bad() ? "" : fmt::format("{:016x}", h);
  }
  std::unique_ptr<EvpMdCtx, void (*)(EvpMdCtx*)> ctx(lib.ctx_new(), lib.ctx_free);
  if (!ctx || lib.init(ctx.get(), lib.sha256(), nullptr) != 1) return "";
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    if (lib.update(ctx.get(), buf.data(), static_cast<size_t>(in.gcount())) != 1) return "";
  unsigned char digest[64];
  unsigned int len = 0;
  if (in.bad() || lib.final(ctx.get(), digest, &len) != 1) return "";
  return hex(digest, len);
}

}  // namespace keet::io
