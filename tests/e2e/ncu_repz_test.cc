// End-to-end: real fixture reports compressed here with libzstd (no real
// .ncu-repz is among the fixtures yet) give the same `list`, `analyze` and
// `export` output as the uncompressed file; broken containers exit 2 with one line.
#include <gtest/gtest.h>

#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/testing.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using namespace keet::testing;

// Compresses `from` into `to` with zstd's streaming API, as ncu would write it.
void compress_file(const std::string& from, const std::string& to) {
  std::string in = read_file(from);
  std::string out(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  std::ofstream(to, std::ios::binary) << out.substr(0, n);
}

// Output with the report's path written as the same placeholder.
std::string run_on(const std::string& args, const std::string& path) {
  auto r = run_keet(args + " " + shell_quote(path));
  EXPECT_EQ(r.rc, 0) << args << " " << path << ": " << r.err;
  std::string out = r.out;
  for (size_t at; (at = out.find(path)) != std::string::npos;) out.replace(at, path.size(), "REPORT");
  return out;
}

std::vector<std::string> some_fixtures() {
  std::vector<std::string> out;
  std::string dir = *shared_dir() + "/fixtures/public/";
  for (std::string name :
       {"BrennenTaylor__Twisty/profile.nsight-cuprof-report",
        "Lashi0812__CudaProgramming/profiling/profiles/smemTranspose.ncu-rep", "piragi__fuzigrad/output.ncu-rep",
        "jestes15__EE384_FinalProject/83e15df/profile_output.ncu-rep"})
    out.push_back(dir + name);
  if (auto ex = oracle_examples()) out.push_back(*ex + "/addConstDouble3.ncu-rep");
  return out;
}

TEST(NcuRepz, CompressedFixturesGiveTheSameOutput) {
  KEET_REQUIRE_SHARED();
  for (const auto& plain : some_fixtures()) {
    SCOPED_TRACE(plain);
    ASSERT_TRUE(fs::exists(plain));
    std::string packed = temp_path(fs::path(plain).stem().string() + ".ncu-repz");
    compress_file(plain, packed);
    for (std::string args : {"list", "list --format json", "analyze", "analyze --format json", "export --format csv",
                             "export --format json", "metrics -k 0"}) {
      // The copies share a file name stem, not a path: compare with the path masked.
      std::string want = run_on(args, plain), got = run_on(args, packed);
      EXPECT_EQ(got, want) << args;
    }
    fs::remove(packed);
  }
}

TEST(NcuRepz, BrokenContainersExitTwoWithOneLine) {
  std::string not_report = temp_path("text.ncu-repz"), cut = temp_path("cut.ncu-repz");
  std::string text = "not a report at all\n";
  std::string z(ZSTD_compressBound(text.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 3));
  std::ofstream(not_report, std::ios::binary) << z;
  // A report's start (magic, file header, a block length) cut inside its frame.
  std::string start = std::string("NVR\0\x02\0\0\0\x08\x07\x40\0\0\0", 14) + std::string(300, '\x08');
  std::string zs(ZSTD_compressBound(start.size()), '\0');
  zs.resize(ZSTD_compress(zs.data(), zs.size(), start.data(), start.size(), 3));
  std::ofstream(cut, std::ios::binary) << zs.substr(0, zs.size() - 4);
  for (const auto& [path, expect] :
       {std::pair{not_report, "unsupported compressed report"}, std::pair{cut, "truncated compressed report"}}) {
    for (std::string cmd : {"list", "analyze", "export --format csv"}) {
      auto r = run_keet(cmd + " " + shell_quote(path));
      EXPECT_EQ(r.rc, 2) << cmd << " " << path;
      EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
}

}  // namespace
}  // namespace keet
