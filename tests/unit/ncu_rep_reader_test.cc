// The .ncu-rep reader on reports built by the test writer: framing edge cases,
// string tables across blocks, unknown fields, partial and corrupt files.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/file.h"
#include "model/units.h"
#include "readers/reader.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using testing::ReportWriter;

readers::ReadResult<model::Report> read_bytes(const std::string& bytes, readers::ReadOptions opt = {}) {
  auto src = io::memory_source("mem.ncu-rep", bytes);
  return readers::load(*src, opt);
}

// Two kernels in two blocks; the second block adds a new string.
std::string two_block_report() {
  ReportWriter w;
  ReportWriter::Block b1;
  auto k1 = w.kernel("alpha", 10, 128, {{"gpu__time_duration.sum", 1000}});
  w.flush_strings(b1);
  b1.results.push_back(k1.SerializeAsString());
  w.add(b1);
  ReportWriter::Block b2;
  auto k2 = w.kernel("beta", 20, 64, {{"gpu__time_duration.sum", 2000}, {"zz_custom", 42.5}});
  w.flush_strings(b2);
  b2.results.push_back(k2.SerializeAsString());
  w.add(b2);
  return w.bytes();
}

TEST(NcuRepReader, StringTableAppendsAcrossBlocks) {
  auto r = read_bytes(two_block_report());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].display_name(), "alpha()");
  EXPECT_EQ(r->kernels[1].number("gpu__time_duration.sum"), 2000);
  EXPECT_EQ(r->kernels[1].number("zz_custom"), 42.5);
  EXPECT_EQ(r->kernels[1].index, 1);
  EXPECT_EQ(r->kernels[1].grid, (model::Dim3{20, 1, 1}));
}

TEST(NcuRepReader, ManyBlocksAndEmptyPayloads) {
  ReportWriter w;
  for (int i = 0; i < 50; ++i) {
    ReportWriter::Block empty;  // header-only block, PayloadSize 0
    w.add(empty);
    ReportWriter::Block b;
    auto k = w.kernel("k" + std::to_string(i), i + 1, 32, {{"m" + std::to_string(i % 7), i * 1.0}});
    w.flush_strings(b);
    b.results.push_back(k.SerializeAsString());
    w.add(b);
  }
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 50u);
  EXPECT_EQ(r->kernels[49].number("m0"), 49.0);
  EXPECT_FALSE(r->partial);
}

TEST(NcuRepReader, UnknownFieldsAndMissingRequiredFieldsLoad) {
  ReportWriter w;
  ReportWriter::Block b;
  pb::ProfileResult k = w.kernel("gamma", 1, 1, {{"x", 1}});
  k.clear_kernel_demangled_name();  // "required" in NVIDIA's schema
  testing::add_unknown_varint(*k.mutable_unknown_fields(), 999, 7);
  auto* rule = k.add_rule_results();
  rule->set_identifier("NewRule");
  auto* item = rule->mutable_body()->add_items();
  item->mutable_message()->set_message("text");  // Type omitted, as 2023.2+ writes
  item->mutable_speedup()->set_speedup(12.5);
  w.flush_strings(b);
  testing::add_unknown_varint(*b.header.mutable_unknown_fields(), 999, 1);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].display_name(), "gamma");
  ASSERT_EQ(r->kernels[0].rules.size(), 1u);
  EXPECT_EQ(r->kernels[0].rules[0].messages[0].estimated_speedup, 12.5);
}

TEST(NcuRepReader, ListsKeepKeysAndValues) {
  ReportWriter w;
  ReportWriter::Block b;
  pb::ProfileResult k = w.kernel("delta", 1, 1, {});
  auto* m = k.add_metric_results();
  m->set_name_id(w.name_id("inst_executed"));
  m->mutable_value()->set_uint64_value(30);
  for (uint64_t pc : {0x7f0000001000ull, 0x7f0000001010ull}) {
    auto* e = m->add_instances();
    e->mutable_correlation_id()->set_uint64_value(pc);
    e->mutable_element_value()->set_uint64_value(15);
  }
  auto* s = k.add_metric_results();
  s->set_name_id(w.name_id("launch__func_cache_config"));
  s->mutable_value()->set_string_value("cudaFuncCachePreferNone");
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r);
  const auto* inst = r->kernels[0].find("inst_executed");
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->value.kind, model::Value::Kind::Uint64);
  ASSERT_EQ(inst->instances.size(), 2u);
  EXPECT_EQ(inst->instances[1].key.integer, 0x7f0000001010ull);
  EXPECT_EQ(r->kernels[0].text("launch__func_cache_config"), "cudaFuncCachePreferNone");
  readers::ReadOptions no_lists;
  no_lists.instances = false;
  auto r2 = read_bytes(w.bytes(), no_lists);
  const auto* light = r2->kernels[0].find("inst_executed");
  EXPECT_TRUE(light->instances.empty());
  EXPECT_TRUE(light->listed);  // the list was stepped over, its presence kept
  EXPECT_EQ(light->value.integer, 30u);
  EXPECT_TRUE(inst->listed);
  EXPECT_FALSE(r2->kernels[0].find("launch__func_cache_config")->listed);
  EXPECT_EQ(r2->kernels[0].text("launch__func_cache_config"), "cudaFuncCachePreferNone");
}

// ncu's raw CSV prints "" (not "no data") for a value-less metric that has a
// list; that must hold whether or not the list was decoded.
TEST(NcuRepReader, ValueLessListedMetricPrintsEmptyEitherWay) {
  ReportWriter w;
  ReportWriter::Block b;
  pb::ProfileResult k = w.kernel("eps", 1, 1, {});
  auto* m = k.add_metric_results();
  m->set_name_id(w.name_id("sass__inst_executed_per_opcode"));
  auto* e = m->add_instances();
  e->mutable_correlation_id()->set_string_value("FFMA");
  e->mutable_element_value()->set_uint64_value(8);
  auto* bare = k.add_metric_results();
  bare->set_name_id(w.name_id("zz_no_value"));
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  for (bool lists : {true, false}) {
    readers::ReadOptions opt;
    opt.instances = lists;
    auto r = read_bytes(w.bytes(), opt);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(model::csv_cell_text(*r->kernels[0].find("sass__inst_executed_per_opcode")), "") << lists;
    EXPECT_EQ(model::csv_cell_text(*r->kernels[0].find("zz_no_value")), "no data") << lists;
  }
}

TEST(NcuRepReader, SessionDetailsMergeAcrossBlocks) {
  ReportWriter w;
  ReportWriter::Block b1, b2, b3;
  b1.header.mutable_session_details()->set_creation_time(1652212832);
  auto* dev = b2.header.mutable_session_details()->add_device_attributes();
  dev->set_name("NVIDIA RTX A2000");
  auto* v = b3.header.mutable_session_details()->add_version_info();
  v->set_provider("Nsight Compute");
  v->set_version("Nsight Compute Target 2022.1.1.0");
  w.add(b1);
  w.add(b2);
  w.add(b3);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->session.creation_time, 1652212832u);
  ASSERT_EQ(r->session.devices.size(), 1u);
  EXPECT_EQ(r->session.devices[0].name, "NVIDIA RTX A2000");
  EXPECT_EQ(r->ncu_version(), "2022.1.1.0");
}

// The session is read off the wire as protobuf merges it: a scalar's last
// occurrence wins, a message field merges (an empty one clears nothing),
// repeated devices and versions append, a device's repeated attribute name
// keeps its last value, and a value's field decides its kind by precedence.
TEST(NcuRepReader, SessionFieldsMergeAsProtobufWould) {
  ReportWriter w;
  ReportWriter::Block b1, b2;
  auto* s1 = b1.header.mutable_session_details();
  s1->set_creation_time(5);
  s1->mutable_host_system_info()->set_computer_name("host-a");
  s1->mutable_host_system_info()->set_os_name("not the target");
  s1->mutable_target_system_info()->set_os_name("Linux");
  s1->set_profiler_cmdline("ncu -o a");
  auto* d0 = s1->add_device_attributes();
  d0->set_id(0);
  d0->set_name("GPU 0");
  auto* a = d0->add_attributes();
  a->set_name("device__attribute_x");
  a->mutable_value()->set_double_value(1.5);
  auto* b = d0->add_attributes();
  b->set_name("device__attribute_y");
  b->mutable_value()->set_uint64_value(7);
  auto* again = d0->add_attributes();
  again->set_name("device__attribute_x");  // repeated: the last wins
  again->mutable_value()->set_uint32_value(3);
  auto* s2 = b2.header.mutable_session_details();
  s2->set_creation_time(9);
  s2->mutable_host_system_info();  // present and empty: clears nothing
  auto* d1 = s2->add_device_attributes();
  d1->set_id(1);
  d1->set_name("GPU 1");
  auto* c = d1->add_attributes();
  c->set_name("device__attribute_z");
  c->mutable_value()->set_string_value("text");
  c->mutable_value()->set_float_value(2.5f);  // float outranks string
  auto* v = s2->add_version_info();
  v->set_provider("Nsight Compute");
  v->set_version("2023.1");
  w.add(b1);
  w.add(b2);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->session.creation_time, 9u);
  EXPECT_EQ(r->session.host_name, "host-a");
  EXPECT_EQ(r->session.os, "Linux");
  EXPECT_EQ(r->session.cmdline, "ncu -o a");
  ASSERT_EQ(r->session.versions.size(), 1u);
  EXPECT_EQ(r->session.versions[0], std::make_pair(std::string("Nsight Compute"), std::string("2023.1")));
  ASSERT_EQ(r->session.devices.size(), 2u);
  const auto& g0 = r->session.devices[0];
  EXPECT_EQ(g0.name, "GPU 0");
  ASSERT_EQ(g0.attributes.size(), 2u);
  EXPECT_EQ(g0.attributes.at("device__attribute_x").kind, model::Value::Kind::Uint32);
  EXPECT_EQ(g0.attributes.at("device__attribute_x").integer, 3u);
  EXPECT_EQ(g0.attributes.at("device__attribute_y").kind, model::Value::Kind::Uint64);
  const auto& g1 = r->session.devices[1];
  EXPECT_EQ(g1.id, 1u);
  EXPECT_EQ(g1.attributes.at("device__attribute_z").kind, model::Value::Kind::Float);
  EXPECT_EQ(g1.attributes.at("device__attribute_z").number, 2.5);
}

// A malformed message inside the session (here a device attribute whose
// length runs past its device) refuses the header, as protobuf's parse did.
TEST(NcuRepReader, MalformedSessionMessageRefusesTheHeader) {
  ReportWriter w;
  ReportWriter::Block b;
  auto* d = b.header.mutable_session_details()->add_device_attributes();
  d->set_name("GPU");
  auto* a = d->add_attributes();
  a->set_name("device__attribute_marker_name");
  a->mutable_value()->set_uint64_value(1);
  w.add(b);
  std::string bytes = w.bytes();
  auto at = bytes.find("device__attribute_marker_name");
  ASSERT_NE(at, std::string::npos);
  // The name's length byte sits just before it; the attribute's own length
  // byte two before that. Claim a longer name than the attribute holds.
  bytes[at - 1] = static_cast<char>(0x7f);
  auto r = read_bytes(bytes);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("block header is not a valid protobuf message"), std::string::npos)
      << r.error().message();
}

// keet export's column pass: names and string-table ids, no values decoded.
TEST(NcuRepReader, NamesOnlyReadKeepsNamesAndIdsButNoValues) {
  readers::ReadOptions names_only;
  names_only.metric_values = false;
  auto full = read_bytes(two_block_report());
  auto names = read_bytes(two_block_report(), names_only);
  ASSERT_TRUE(full && names);
  ASSERT_EQ(names->kernels.size(), 2u);
  const auto& k = names->kernels[1];
  ASSERT_EQ(k.metrics.size(), full->kernels[1].metrics.size());
  for (size_t i = 0; i < k.metrics.size(); ++i) {
    EXPECT_EQ(k.metrics[i].name, full->kernels[1].metrics[i].name);
    EXPECT_EQ(k.metrics[i].name_id, full->kernels[1].metrics[i].name_id);
    EXPECT_EQ(k.metrics[i].value.kind, model::Value::Kind::None);
  }
  EXPECT_EQ(k.grid, (model::Dim3{20, 1, 1}));  // the launch is still read whole
}

// The block header is walked off the wire: as protobuf parses it, a repeated
// string table appends, the last occurrence of a count wins and a field of an
// unknown number or an unexpected wire type is stepped over.
TEST(NcuRepReader, BlockHeaderFieldsRepeatAsProtobufsDo) {
  ReportWriter w;
  ReportWriter::Block b;
  w.name_id("a");
  w.name_id("b");
  w.flush_strings(b);
  pb::StringTable more;
  more.add_strings("c");
  auto& unknown = *b.header.mutable_unknown_fields();
  testing::add_unknown_delimited(unknown, 4, more.SerializeAsString());  // a second StringTable field
  testing::add_unknown_varint(unknown, 2, 1);                            // NumResults again: 1 wins
  testing::add_unknown_fixed64(unknown, 4, 7);                           // StringTable with the wrong wire type
  testing::add_unknown_delimited(unknown, 99, "ignored");
  pb::ProfileResult k = w.kernel("k", 1, 1, {});
  auto* m = k.add_metric_results();
  m->set_name_id(2);  // "c", from the second table
  m->mutable_value()->set_double_value(5);
  b.header.set_num_results(7);  // overridden by the later occurrence
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].number("c"), 5);
  EXPECT_TRUE(r->warnings.empty());
}

TEST(NcuRepReader, DamagedBlockHeaderIsAnErrorWithItsOffset) {
  ReportWriter w;
  ReportWriter::Block b;
  testing::add_unknown_delimited(*b.header.mutable_unknown_fields(), 4,
                                 std::string("\x0a\x05"
                                             "ab",
                                             4));  // a name cut short
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("block header is not a valid protobuf message"), std::string::npos);
  EXPECT_GT(r.error().offset, 0u);
}

TEST(NcuRepReader, UnknownPayloadItemsAreSkippedBySize) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("eps", 1, 1, {{"x", 3}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  b.extra_payload = std::string(12, '\x01');
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->kernels.size(), 1u);
}

TEST(NcuRepReader, TruncationAfterKernelsIsPartial) {
  std::string full = two_block_report();
  auto r = read_bytes(full.substr(0, full.size() - 5));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->partial);
  EXPECT_EQ(r->kernels.size(), 1u);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings[0].find("at byte"), std::string::npos);
}

TEST(NcuRepReader, TruncationBeforeAnyKernelIsAnError) {
  std::string full = two_block_report();
  for (size_t cut : {size_t(3), size_t(9), size_t(14), size_t(30)}) {
    auto r = read_bytes(full.substr(0, cut));
    ASSERT_FALSE(r) << "cut at " << cut;
    EXPECT_NE(r.error().message().find("mem.ncu-rep"), std::string::npos);
  }
}

TEST(NcuRepReader, HugeLengthPrefixIsRejectedWithoutAllocating) {
  std::string bytes("NVR\0\x02\0\0\0\x08\x07\xff\xff\xff\x7f", 14);
  auto r = read_bytes(bytes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().offset, 10u);
  EXPECT_NE(r.error().what.find("past the end"), std::string::npos);
}

TEST(NcuRepReader, ForeignAndEmptyFilesAreRejected) {
  EXPECT_FALSE(read_bytes(""));
  EXPECT_FALSE(
      read_bytes(std::string("\x7f"
                             "ELF\x02\x01\x01",
                             7)));
  auto r = read_bytes("hello world, not a report");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("not a report"), std::string::npos);
}

TEST(NcuRepReader, GarbageInsideAResultIsCorrupt) {
  ReportWriter w;
  ReportWriter::Block b;
  b.results.push_back(std::string("\x6a\xff\xff\xff\xff\x0f", 6));  // field 13, absurd length
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_FALSE(r);
  EXPECT_GT(r.error().offset, 0u);
}

TEST(NcuRepReader, MetricFilterSkipsOtherMetrics) {
  readers::ReadOptions opt;
  opt.metric_filter = [](std::string_view n) { return n == "zz_custom"; };
  auto r = read_bytes(two_block_report(), opt);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->kernels[0].metrics.empty());
  ASSERT_EQ(r->kernels[1].metrics.size(), 1u);
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// A block with one source entry (bare, or in the 2020-era {1: SourceData}
// wrapper) and one kernel.
std::string report_with_module(bool wrapped) {
  ReportWriter w;
  ReportWriter::Block b;
  pb::SourceData src;
  src.set_reference(77);
  src.set_sm_revision((8 << 16) | 6);
  src.set_binary(std::string(100000, '\x7f'));
  auto* f = src.mutable_source_files()->add_files();
  f->set_file_name("k.cu");
  f->set_content("__global__ void k() {}\n");
  if (wrapped) {
    pb::SourceDataWrapper wr;
    *wr.mutable_source() = src;
    b.sources.push_back(wr.SerializeAsString());
  } else {
    b.sources.push_back(src.SerializeAsString());
  }
  auto k = w.kernel("k", 1, 32, {{"gpu__time_duration.sum", 10}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
}

TEST(NcuRepReader, ModulesKeepCubinAndFilesOnlyWhenAsked) {
  for (bool wrapped : {false, true}) {
    auto full = read_bytes(report_with_module(wrapped));
    ASSERT_TRUE(full) << full.error().message();
    ASSERT_EQ(full->modules.count(77), 1u) << wrapped;
    EXPECT_EQ(full->modules[77].binary.size(), 100000u);
    ASSERT_EQ(full->modules[77].files.size(), 1u);
    EXPECT_EQ(full->modules[77].files[0].path, "k.cu");

    readers::ReadOptions opt;
    opt.modules = false;
    auto light = read_bytes(report_with_module(wrapped), opt);
    ASSERT_TRUE(light) << light.error().message();
    ASSERT_EQ(light->modules.count(77), 1u) << wrapped;
    EXPECT_EQ(light->modules[77].sm_revision, static_cast<uint32_t>((8 << 16) | 6));
    EXPECT_TRUE(light->modules[77].binary.empty());
    EXPECT_TRUE(light->modules[77].files.empty());
    EXPECT_EQ(light->kernels.size(), 1u);
  }
}

// A cubin is viewed where the report's bytes are, not copied, and the view
// keeps those bytes alive after the source (a mapped file or a buffer) is gone.
TEST(NcuRepReader, CubinIsAViewThatOutlivesItsSource) {
  std::string bytes = report_with_module(false);
  std::string path = testing::temp_path("cubin-view.ncu-rep");
  testing::write_file(path, bytes);
  model::Report from_file, from_memory;
  {
    auto file = io::open_file(path);
    ASSERT_TRUE(file);
    auto read = readers::load(**file, {});
    ASSERT_TRUE(read) << read.error().message();
    from_file = std::move(*read);
  }  // the mapping's source is gone; the model keeps what it views
  from_memory = *read_bytes(bytes);
  for (const auto* r : {&from_file, &from_memory}) {
    const auto& bin = r->modules.at(77).binary;
    EXPECT_TRUE(bin.shared());
    EXPECT_EQ(bin.view(), std::string(100000, '\x7f'));
  }
  // Copies stay independent of what they came from.
  std::string text(64, 'c');
  model::Blob copy(text, nullptr);
  text.assign(64, 'x');
  EXPECT_FALSE(copy.shared());
  EXPECT_EQ(copy.view(), std::string(64, 'c'));
  EXPECT_TRUE(model::Blob({}, nullptr).empty());
}

TEST(NcuRepReader, MalformedSourceEntryIsCorruptEitherWay) {
  std::string bytes = report_with_module(false);
  // Cut the cubin's length-delimited field short inside the source entry by
  // declaring a longer binary than the entry holds: find the 100000-byte run.
  auto at = bytes.find(std::string(64, '\x7f'));
  ASSERT_NE(at, std::string::npos);
  // The varint length prefix (3 bytes for 100000) sits just before the run.
  bytes[at - 1] = static_cast<char>(0x7f);  // length grows past the entry's end
  for (bool modules : {true, false}) {
    readers::ReadOptions opt;
    opt.modules = modules;
    auto r = read_bytes(bytes, opt);
    ASSERT_FALSE(r) << modules;
    EXPECT_NE(r.error().what.find("source entry"), std::string::npos) << r.error().what;
  }
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// Kernel "alpha" names zz_late, whose string only comes in the second block
// (with kernel "beta", or in a header-only block when `header_only`).
std::string late_name_report(bool header_only) {
  ReportWriter w;
  ReportWriter::Block b1;
  b1.header.mutable_process()->set_process_id(111);
  auto k1 = w.kernel("alpha", 10, 128, {{"gpu__time_duration.sum", 1000}, {"zz_late", 7}});
  w.flush_strings(b1, 1);  // gpu__time_duration.sum only
  b1.results.push_back(k1.SerializeAsString());
  w.add(b1);
  ReportWriter::Block b2;
  b2.header.mutable_process()->set_process_id(222);
  if (header_only) {
    w.flush_strings(b2);
    w.add(b2);
    ReportWriter::Block b3;
    auto k2 = w.kernel("beta", 20, 64, {{"gpu__time_duration.sum", 2000}, {"zz_late", 8}});
    b3.results.push_back(k2.SerializeAsString());
    w.add(b3);
  } else {
    auto k2 = w.kernel("beta", 20, 64, {{"gpu__time_duration.sum", 2000}, {"zz_late", 8}});
    w.flush_strings(b2);
    b2.results.push_back(k2.SerializeAsString());
    w.add(b2);
  }
  return w.bytes();
}

TEST(NcuRepReader, NamesFromALaterStringTableResolveForEarlierKernels) {
  for (bool header_only : {false, true}) {
    SCOPED_TRACE(header_only);
    auto r = read_bytes(late_name_report(header_only));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->kernels.size(), 2u);
    EXPECT_EQ(r->kernels[0].display_name(), "alpha()");
    EXPECT_EQ(r->kernels[0].index, 0);
    EXPECT_EQ(r->kernels[0].number("zz_late"), 7.0);
    EXPECT_EQ(r->kernels[0].number("gpu__time_duration.sum"), 1000.0);
    EXPECT_EQ(r->kernels[0].process_id, 111u);  // its own block's process, not the one current when decoded
    EXPECT_EQ(r->kernels[1].number("zz_late"), 8.0);
    EXPECT_EQ(r->kernels[1].index, 1);
    EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  }
}

// Streaming keeps its contract: kernels in order, and the metric filter's
// calls between two sink calls are those of the kernel delivered next.
TEST(NcuRepReader, LateNamesKeepStreamingOrderAndFilterContract) {
  std::vector<std::string> asked;
  std::vector<std::pair<std::string, std::vector<std::string>>> seen;
  readers::ReadOptions opt;
  opt.metric_filter = [&](std::string_view n) {
    asked.emplace_back(n);
    return true;
  };
  auto src = io::memory_source("mem.ncu-rep", late_name_report(false));
  auto r = readers::stream(*src, opt, [&](model::Kernel&& k) {
    seen.emplace_back(k.function, std::exchange(asked, {}));
    return true;
  });
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, "alpha");
  EXPECT_EQ(seen[1].first, "beta");
  for (const auto& [name, names] : seen) EXPECT_EQ(std::count(names.begin(), names.end(), "zz_late"), 1) << name;
}

TEST(NcuRepReader, NamesThatNeverArriveAreCountedInOneWarning) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k1 = w.kernel("alpha", 1, 32, {{"gpu__time_duration.sum", 5}, {"zz_lost", 1}, {"zz_lost2", 2}});
  auto k2 = w.kernel("beta", 1, 32, {{"gpu__time_duration.sum", 6}, {"zz_lost", 3}});
  w.flush_strings(b, 1);
  b.results.push_back(k1.SerializeAsString());
  b.results.push_back(k2.SerializeAsString());
  w.add(b);
  auto r = read_bytes(w.bytes());
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].number("gpu__time_duration.sum"), 5.0);
  EXPECT_EQ(r->kernels[1].number("gpu__time_duration.sum"), 6.0);
  EXPECT_EQ(r->kernels[0].find("zz_lost"), nullptr);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("3 metric value(s) in 2 kernel(s)"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("largest 2"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("(1 entries)"), std::string::npos) << r->warnings[0];
}

TEST(NcuRepReader, WaitingKernelsAreBoundedByMaxDeferredBytes) {
  readers::ReadOptions opt;
  opt.max_deferred_bytes = 1;  // nothing may wait: alpha goes out without zz_late
  auto r = read_bytes(late_name_report(false), opt);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].find("zz_late"), nullptr);
  EXPECT_EQ(r->kernels[0].number("gpu__time_duration.sum"), 1000.0);
  EXPECT_EQ(r->kernels[1].number("zz_late"), 8.0);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("1 metric value(s) in 1 kernel(s)"), std::string::npos) << r->warnings[0];
}

TEST(NcuRepReader, AWaitingKernelStillCountsWhenTheFileIsCutShort) {
  std::string full = late_name_report(false);
  // Cut inside the second block's payload: its header (with the string) was read.
  auto r = read_bytes(full.substr(0, full.size() - 5));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->partial);
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].number("zz_late"), 7.0);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("read 1 kernel(s) before it"), std::string::npos) << r->warnings[0];
  // Cut inside the second block's header: the string never came.
  auto raw = testing::RawReport::parse(full);
  raw.blocks.resize(1);
  auto cut = read_bytes(raw.bytes() + std::string("\x10\0", 2));
  ASSERT_TRUE(cut) << cut.error().message();
  EXPECT_TRUE(cut->partial);
  ASSERT_EQ(cut->kernels.size(), 1u);
  EXPECT_EQ(cut->kernels[0].find("zz_late"), nullptr);
  ASSERT_EQ(cut->warnings.size(), 2u);
  EXPECT_NE(cut->warnings[0].find("1 metric value(s) in 1 kernel(s)"), std::string::npos) << cut->warnings[0];
}

}  // namespace
}  // namespace keet

namespace keet {
namespace {

// A one-kernel report with GridSize `grid`, block (64, 1, 1) and, when given,
// a launch__grid_size metric.
std::string geometry_report(model::Dim3 grid, std::optional<double> launch_grid) {
  ReportWriter w;
  ReportWriter::Block b;
  std::vector<std::pair<std::string, double>> metrics = {{"gpu__time_duration.sum", 10}};
  if (launch_grid) metrics.emplace_back("launch__grid_size", *launch_grid);
  auto k = w.kernel("k", 1, 64, metrics);
  k.mutable_grid_size()->set_x(grid.x);
  k.mutable_grid_size()->set_y(grid.y);
  k.mutable_grid_size()->set_z(grid.z);
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
}

TEST(NcuRepReader, PreNcu2020GridSizeInThreadsBecomesBlocks) {
  readers::ReadOptions none;
  none.metric_filter = [](std::string_view) { return false; };  // `keet list` keeps few metrics
  for (const auto& opt : {readers::ReadOptions{}, none}) {
    auto r = read_bytes(geometry_report({640, 2, 1}, 20), opt);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->kernels[0].grid, (model::Dim3{10, 2, 1}));
    EXPECT_EQ(r->kernels[0].block, (model::Dim3{64, 1, 1}));
  }
}

TEST(NcuRepReader, GridSizeInBlocksIsKept) {
  // A modern report: GridSize agrees with launch__grid_size.
  EXPECT_EQ(read_bytes(geometry_report({640, 2, 1}, 1280))->kernels[0].grid, (model::Dim3{640, 2, 1}));
  // No launch__grid_size to tell: as stored.
  EXPECT_EQ(read_bytes(geometry_report({640, 2, 1}, std::nullopt))->kernels[0].grid, (model::Dim3{640, 2, 1}));
  // launch__grid_size that neither reading explains: as stored.
  EXPECT_EQ(read_bytes(geometry_report({640, 2, 1}, 7))->kernels[0].grid, (model::Dim3{640, 2, 1}));
  // Not divisible by the block: as stored.
  EXPECT_EQ(read_bytes(geometry_report({650, 1, 1}, 10))->kernels[0].grid, (model::Dim3{650, 1, 1}));
}

}  // namespace
}  // namespace keet
