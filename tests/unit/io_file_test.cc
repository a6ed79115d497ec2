// io/file: a mapped report gives consumed pages back (madvise), on every pass
// over the file, and its bytes stay readable afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>

#include "io/file.h"
#include "support/testing.h"

namespace keet {
namespace {

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Resident size (kB) of the mapping that starts at `data`, from /proc/self/smaps.
long mapping_rss_kb(const void* data) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 && line.find(' ') > line.find('-')) {
      in_mapping = start == reinterpret_cast<uintptr_t>(data);
      continue;
    }
    long kb = 0;
    if (in_mapping && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb;
  }
  return -1;
}

long touch(std::string_view bytes) {
  long sum = 0;
  for (size_t i = 0; i < bytes.size(); i += 512) sum += static_cast<unsigned char>(bytes[i]);
  return sum;
}

// Released in batches of a few MB (each madvise flushes the TLB), so the
// file is larger than that; a small file is never released at all.
TEST(MappedFile, ReleasesConsumedPagesOnEveryPass) {
  std::string path = testing::temp_path("pages.bin");
  std::string content(2048 * page_size(), '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << content;
  auto src = io::open_file(path);
  ASSERT_TRUE(src) << src.error().message;
  std::string_view bytes = (*src)->bytes();
  ASSERT_EQ(bytes.size(), content.size());
  size_t half = bytes.size() / 2;
  long expected = touch(content);
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(touch(bytes), expected) << pass;  // every page mapped in
    long full_kb = static_cast<long>(bytes.size() / 1024);
    EXPECT_EQ(mapping_rss_kb(bytes.data()), full_kb) << pass;
    (*src)->release(page_size());  // a reader releases as it goes: a small step waits for more
    EXPECT_EQ(mapping_rss_kb(bytes.data()), full_kb) << pass;
    (*src)->release(half);
    EXPECT_EQ(mapping_rss_kb(bytes.data()), full_kb / 2) << pass;
  }
  EXPECT_EQ(bytes.substr(0, 64), std::string_view(content).substr(0, 64));  // read again from the file
}

// A file truncated while it is mapped: reading the vanished pages used to
// end the process with SIGBUS; now they read as zeros and the source says so.
TEST(IoFile, TruncatedWhileMappedReadsZerosAndSaysChanged) {
  std::string path = keet::testing::temp_path("shrinking.bin");
  std::ofstream(path, std::ios::binary) << std::string(4 * page_size(), 'a');
  auto src = io::open_file(path);
  ASSERT_TRUE(src);
  EXPECT_EQ((*src)->bytes()[0], 'a');
  EXPECT_FALSE((*src)->changed());
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(page_size())), 0);
  std::string_view b = (*src)->bytes();
  EXPECT_EQ(b[0], 'a');                 // still in the file
  EXPECT_EQ(b[3 * page_size()], '\0');  // gone: zeros, not a signal
  EXPECT_TRUE((*src)->changed());
  src->reset();  // the next file mapped at this address starts clean
  auto again = io::open_file(path);
  ASSERT_TRUE(again);
  EXPECT_FALSE((*again)->changed());
}

// The Python module reads report after report into one buffer: the file
// whole, the buffer's memory reused, a larger file left to open_file.
TEST(IoFile, ReadFileIntoReusesTheBuffer) {
  std::string big = keet::testing::temp_path("into-big.bin"), small = keet::testing::temp_path("into-small.bin");
  std::ofstream(big, std::ios::binary) << std::string(3 * page_size(), 'b');
  std::ofstream(small, std::ios::binary) << "NVR";
  std::string buffer;
  auto read = io::read_file_into(big, buffer, 4 * page_size());
  ASSERT_TRUE(read && *read);
  EXPECT_EQ(buffer, std::string(3 * page_size(), 'b'));
  const char* memory = buffer.data();
  read = io::read_file_into(small, buffer, 4 * page_size());
  ASSERT_TRUE(read && *read);
  EXPECT_EQ(buffer, "NVR");
  EXPECT_EQ(buffer.data(), memory) << "the second read reuses the first one's memory";
  auto src = io::view_source(small, buffer);
  EXPECT_EQ(src->bytes(), "NVR");
  EXPECT_EQ(src->name(), small);
  EXPECT_EQ(src->share(), nullptr);
  read = io::read_file_into(big, buffer, 2 * page_size());  // too large: nothing read
  ASSERT_TRUE(read);
  EXPECT_FALSE(*read);
  EXPECT_EQ(buffer, "NVR");
  read = io::read_file_into(keet::testing::temp_path(""), buffer, 1 << 20);  // a folder: for open_file to refuse
  ASSERT_TRUE(read);
  EXPECT_FALSE(*read);
  auto missing = io::read_file_into(keet::testing::temp_path("no-such-file"), buffer, 1 << 20);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace keet
