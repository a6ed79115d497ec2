// The .ncu-repz reader: reports built by the test writer, compressed here
// with libzstd, read back through the streaming decompressor; and containers
// that are not what they claim (foreign content, skippable frames only,
// truncated or damaged frames). No real .ncu-repz is among the fixtures yet.
#include <gtest/gtest.h>

#include <zstd.h>

#include <cstring>

#include "readers/reader.h"
#include "render/report_json.h"
#include "support/report_writer.h"

namespace keet {
namespace {

using testing::ReportWriter;

std::string zstd_frame(std::string_view bytes, int level = 3) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string skippable_frame(std::string_view payload) {
  std::string out(8, '\0');
  uint32_t magic = ZSTD_MAGIC_SKIPPABLE_START, size = static_cast<uint32_t>(payload.size());
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &size, 4);
  return out + std::string(payload);
}

readers::ReadResult<model::Report> read_report_bytes(const std::string& bytes, readers::ReadOptions opt = {}) {
  auto src = io::memory_source("mem.ncu-repz", bytes);
  return readers::load(*src, opt);
}

// Many kernels with a large module: items longer than the decompressor's
// 128 KiB chunk and a stream much longer than one.
std::string big_report(int kernels, size_t module_bytes = 300000) {
  ReportWriter w;
  ReportWriter::Block b;
  pb::SourceData src;
  src.set_reference(5);
  src.set_binary(std::string(module_bytes, '\x7f'));
  b.sources.push_back(src.SerializeAsString());
  for (int i = 0; i < kernels; ++i) {
    auto k = w.kernel("k" + std::to_string(i), i + 1, 64,
                      {{"gpu__time_duration.sum", 100.0 + i}, {"m" + std::to_string(i % 50), i * 0.5}});
    k.mutable_source()->set_reference(5);
    w.flush_strings(b);
    b.results.push_back(k.SerializeAsString());
    if (i % 100 == 99) {
      w.add(std::move(b));
      b = {};
    }
  }
  w.add(std::move(b));
  return w.bytes();
}

std::string as_json(const model::Report& r) {
  std::vector<const model::Kernel*> ks;
  for (const auto& k : r.kernels) ks.push_back(&k);
  return render::report_json(r, ks).dump();
}

TEST(NcuRepzReader, ReadsWhatTheUncompressedReportHolds) {
  std::string plain = big_report(1000);
  auto want = read_report_bytes(plain);
  ASSERT_TRUE(want) << want.error().message();
  for (const auto& packed : {zstd_frame(plain), zstd_frame(plain, 19),
                             // several frames, and a skippable one in front and between
                             skippable_frame("meta") + zstd_frame(plain.substr(0, 70000)) + skippable_frame("") +
                                 zstd_frame(plain.substr(70000))}) {
    auto got = read_report_bytes(packed);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->kernels.size(), 1000u);
    EXPECT_EQ(got->format, model::Format::NcuRep);
    EXPECT_EQ(as_json(*got), as_json(*want));
    EXPECT_EQ(got->modules.at(5).binary.size(), 300000u);
    EXPECT_FALSE(got->partial);
  }
}

TEST(NcuRepzReader, StreamsKernelsThroughTheSink) {
  std::string packed = zstd_frame(big_report(300));
  auto src = io::memory_source("s.ncu-repz", packed);
  int seen = 0;
  readers::ReadOptions opt;
  opt.modules = false;
  auto r = readers::stream(*src, opt, [&](model::Kernel&& k) {
    EXPECT_EQ(k.index, seen);
    return ++seen < 120;  // the sink can stop the read early
  });
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(seen, 120);
}

TEST(NcuRepzReader, ContainersThatHoldNoReportAreRefusedInOneLine) {
  struct Case {
    std::string bytes, expect;
  };
  std::vector<Case> cases = {
      {zstd_frame("\"ID\",\"Process ID\",\"Kernel Name\"\n"), "does not hold an Nsight Compute report"},
      {skippable_frame("just metadata"), "holds no data (skippable frames only)"},
      {zstd_frame(""), "holds no data"},
      {std::string("\x28\xb5\x2f\xfd", 4) + std::string(40, '\xee'), "unsupported compressed report"},
      {zstd_frame(big_report(3)).substr(0, 30), "truncated compressed report"},
  };
  for (const auto& c : cases) {
    auto r = read_report_bytes(c.bytes);
    ASSERT_FALSE(r) << c.expect;
    std::string msg = r.error().message();
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_TRUE(msg.starts_with("mem.ncu-repz: ")) << msg;
  }
}

TEST(NcuRepzReader, ACutFrameAfterSomeKernelsIsPartial) {
  // zstd decodes whole blocks (128 KiB): the report spans several.
  std::string packed = zstd_frame(big_report(5000, 10), 1);
  auto r = read_report_bytes(packed.substr(0, packed.size() * 3 / 4));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->partial);
  EXPECT_GT(r->kernels.size(), 0u);
  EXPECT_LT(r->kernels.size(), 5000u);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings.back().find("truncated compressed report"), std::string::npos) << r->warnings.back();
}

TEST(NcuRepzReader, LateStringTableNamesResolveInAStreamToo) {
  ReportWriter w;
  ReportWriter::Block b1;
  auto k1 = w.kernel("alpha", 1, 32, {{"gpu__time_duration.sum", 1}, {"zz_late", 7}});
  w.flush_strings(b1, 1);
  b1.results.push_back(k1.SerializeAsString());
  w.add(b1);
  ReportWriter::Block b2;
  w.flush_strings(b2);
  w.add(b2);
  auto r = read_report_bytes(zstd_frame(w.bytes()));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->kernels[0].number("zz_late"), 7.0);
}

TEST(NcuRepzReader, DetectedByContentNotName) {
  auto src = io::memory_source("report.ncu-rep", zstd_frame(big_report(2)));
  auto r = readers::load(*src);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(readers::find_reader(src->bytes())->name, "ncu-repz");
}

}  // namespace
}  // namespace keet
