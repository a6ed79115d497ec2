#include "io/file.h"
#include "util/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace keet::io {
namespace {

// Live mappings, for the SIGBUS handler. A fixed table of atomics: the
// handler may neither lock nor allocate.
struct Mapping {
  std::atomic<char*> base{nullptr};
  std::atomic<size_t> size{0};
  std::atomic<bool> vanished{false};
};
constexpr size_t kMaxMappings = 64;
Mapping g_mappings[kMaxMappings];
size_t g_page_size = 4096;  // set before the handler is installed: the handler may not call sysconf

// A page past the file's new end: map zeros over the rest of that mapping
// (read-only, no memory cost) and let the faulting read go on.
void on_sigbus(int sig, siginfo_t* info, void*) {
  auto* addr = static_cast<char*>(info->si_addr);
  for (auto& m : g_mappings) {
    char* base = m.base.load();
    size_t size = m.size.load();
    if (base == nullptr || addr < base || addr >= base + size) continue;
    char* from = base + (static_cast<size_t>(addr - base) / g_page_size) * g_page_size;
    if (mmap(from, base + size - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      m.vanished.store(true);
      return;
    }
    break;
  }
  signal(sig, SIG_DFL);  // not ours: the fault repeats and ends the process as before
}

void install_sigbus_handler() {
  static const bool installed = [] {
    g_page_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, nullptr) == 0;
  }();
  (void)installed;
}

Mapping* register_mapping(void* data, size_t size) {
  for (auto& m : g_mappings) {
    char* expected = nullptr;
    if (m.base.load() != nullptr) continue;
    m.size.store(size);
    m.vanished.store(false);
    if (m.base.compare_exchange_strong(expected, static_cast<char*>(data))) return &m;
  }
  return nullptr;  // more than kMaxMappings files open at once: unprotected
}

// The mapping itself, and its slot in the SIGBUS table: shared, so bytes a
// model keeps (a cubin) outlive the source and stay protected.
struct Region {
  Region(void* d, size_t n) : data(d), size(n), guard(d ? register_mapping(d, n) : nullptr) {}
  ~Region() {
    if (guard != nullptr) guard->base.store(nullptr);
    if (data != nullptr) munmap(data, size);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  void* data;
  size_t size;
  Mapping* guard;
};

// Pages a streaming read has passed are given back this many bytes at a time.
constexpr size_t kReleaseBatch = size_t{2} << 20;
constexpr size_t kPopulateAtOnce = size_t{16} << 20;

class MappedFile final : public ByteSource {
 public:
  MappedFile(std::string name, void* data, size_t size)
      : name_(std::move(name)), region_(std::make_shared<const Region>(data, size)) {}
  bool changed() const override { return region_->guard != nullptr && region_->guard->vanished.load(); }
  std::string_view bytes() const override { return {static_cast<const char*>(region_->data), region_->size}; }
  const std::string& name() const override { return name_; }
  std::shared_ptr<const void> share() const override { return region_; }
  void release(size_t offset) const override {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t end = std::min(offset, region_->size) / page * page;
    if (end < released_) released_ = 0;  // a new pass over the file (keet export reads twice)
    // Batched: each madvise flushes the TLB (on a VM, of every CPU the
    // process ran on), and a few MB resident is nothing next to a large report.
    if (region_->data == nullptr || end <= released_ + kReleaseBatch) return;
    // Private read-only mapping: dropped pages are simply read again if needed
    // (by a cubin the model still views, say).
    madvise(static_cast<char*>(region_->data) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }

 private:
  std::string name_;
  std::shared_ptr<const Region> region_;
  mutable size_t released_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::string data)
      : name_(std::move(name)), data_(std::make_shared<const std::string>(std::move(data))) {}
  std::string_view bytes() const override { return *data_; }
  const std::string& name() const override { return name_; }
  std::shared_ptr<const void> share() const override { return data_; }

 private:
  std::string name_;
  std::shared_ptr<const std::string> data_;
};

class ViewSource final : public ByteSource {
 public:
  ViewSource(std::string name, std::string_view bytes) : name_(std::move(name)), bytes_(bytes) {}
  std::string_view bytes() const override { return bytes_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::string_view bytes_;
};

std::unexpected<Error> os_error(const std::string& path) {
  return fail(ExitCode::BadInput, fmt::format("{}: {}", path, std::strerror(errno)));
}

}  // namespace

Result<std::unique_ptr<ByteSource>> open_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(path);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    auto err = os_error(path);
    ::close(fd);
    return err;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(ExitCode::BadInput, path + ": not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    install_sigbus_handler();
    // A file of a few MB is read whole anyway: its pages mapped in one call
    // cost less than a fault every few pages. A larger one is faulted in as
    // the read goes, and released behind it.
    int populate = size <= kPopulateAtOnce ? MAP_POPULATE : 0;
    data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | populate, fd, 0);
    if (data == MAP_FAILED) {
      ::close(fd);
      return os_error(path);
    }
    madvise(data, size, MADV_SEQUENTIAL);
  }
  ::close(fd);
  return std::make_unique<MappedFile>(path, data, size);
}

std::unique_ptr<ByteSource> memory_source(std::string name, std::string data) {
  return std::make_unique<MemorySource>(std::move(name), std::move(data));
}

std::unique_ptr<ByteSource> view_source(std::string name, std::string_view bytes) {
  return std::make_unique<ViewSource>(std::move(name), bytes);
}

Result<bool> read_file_into(const std::string& path, std::string& buffer, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(path);
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return false;  // open_file says what is wrong with it, or maps it
  }
  auto size = static_cast<size_t>(st.st_size);
  int error = 0;
  // No zero fill: read() writes every byte kept; a file that ends early
  // (it shrank since fstat) is kept as far as it goes.
  buffer.resize_and_overwrite(size, [&](char* data, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, data + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        error = r < 0 ? errno : 0;
        break;
      }
      got += static_cast<size_t>(r);
    }
    return got;
  });
  ::close(fd);
  if (error != 0) {
    errno = error;
    return os_error(path);
  }
  return true;
}

std::string read_prefix(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  size_t want = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? std::min(static_cast<size_t>(st.st_size), max_bytes) : 0;
  std::string out;
  out.resize_and_overwrite(want, [&](char* data, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, data + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  });
  ::close(fd);
  return out;
}

Result<std::string> read_text_file(const std::string& path) {
  KEET_TRY(src, open_file(path));
  std::string text((*src)->bytes());
  if ((*src)->changed()) return fail(ExitCode::BadInput, path + ": the file was truncated while keet read it");
  return text;
}

Result<std::string> read_stdin() {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ExitCode::BadInput, fmt::format("-: cannot read standard input: {}", std::strerror(errno)));
    }
    data.append(buf, static_cast<size_t>(n));
  }
}

Result<void> write_text_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return os_error(path);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) return os_error(path);
  return {};
}

}  // namespace keet::io
