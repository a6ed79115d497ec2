// Metrics read straight off the protobuf wire (readers/wire.h, the .ncu-rep
// reader's metric decoder): the values protobuf itself would give, instance
// lists decoded only when asked for, kernels recycled while streaming, and a
// metric filter asked once per name.
#include <gtest/gtest.h>

#include <map>

#include "analysis/source_costs.h"
#include "readers/reader.h"
#include "readers/wire.h"
#include "support/report_writer.h"

namespace keet {
namespace {

using testing::ReportWriter;

std::string one_block(ReportWriter& w, const std::vector<pb::ProfileResult>& kernels) {
  ReportWriter::Block b;
  w.flush_strings(b);
  for (const auto& k : kernels) b.results.push_back(k.SerializeAsString());
  w.add(b);
  return w.bytes();
}

TEST(WireWalker, ReadsVarintsTagsAndRejectsRunaways) {
  std::string bytes =
      "\x08\x96\x01\x12\x03"
      "abc";  // field 1 = 150, field 2 = "abc"
  readers::wire::Walker w(bytes);
  uint32_t field, type;
  uint64_t v;
  std::string_view s;
  ASSERT_TRUE(w.tag(field, type));
  EXPECT_EQ(field, 1u);
  ASSERT_TRUE(w.varint(v));
  EXPECT_EQ(v, 150u);
  ASSERT_TRUE(w.tag(field, type));
  EXPECT_EQ(type, readers::wire::kDelimited);
  ASSERT_TRUE(w.delimited(s));
  EXPECT_EQ(s, "abc");
  EXPECT_TRUE(w.done());
  std::string past =
      "\x12\x09"
      "ab";  // a payload longer than what is left
  readers::wire::Walker p(past);
  ASSERT_TRUE(p.tag(field, type));
  EXPECT_FALSE(p.delimited(s));
  std::string endless(11, '\xff');  // a varint of more than ten bytes
  readers::wire::Walker e(endless);
  EXPECT_FALSE(e.varint(v));
}

// Every value kind, a repeated value message (protobuf merges it), fields of
// unknown numbers and of unexpected wire types: the same as protobuf's parse.
TEST(WireDecode, ValuesAsProtobufParsesThem) {
  ReportWriter w;
  pb::ProfileResult k = w.kernel("values", 1, 1, {});
  auto add = [&](const std::string& name) {
    auto* m = k.add_metric_results();
    m->set_name_id(w.name_id(name));
    return m;
  };
  add("d")->mutable_value()->set_double_value(2.5);
  add("f")->mutable_value()->set_float_value(1.25f);
  add("u32")->mutable_value()->set_uint32_value(4000000000u);
  add("u64")->mutable_value()->set_uint64_value(0x7f0000001234ull);
  add("s")->mutable_value()->set_string_value("text with \"quotes\"");
  add("none");
  auto* both = add("double_wins");
  both->mutable_value()->set_uint64_value(7);
  both->mutable_value()->set_double_value(0.5);
  auto* odd = add("unknown_fields");
  odd->mutable_value()->set_uint32_value(3);
  testing::add_unknown_varint(*odd->mutable_unknown_fields(), 77, 1);
  testing::add_unknown_fixed64(*odd->mutable_value()->mutable_unknown_fields(), 3 + 8, 9);  // field 11: unknown
  testing::add_unknown_delimited(*odd->mutable_value()->mutable_unknown_fields(), 3,
                                 "not a double");  // wrong wire type
  std::string bytes = one_block(w, {k});
  auto src = io::memory_source("mem.ncu-rep", bytes);
  auto r = readers::load(*src);
  ASSERT_TRUE(r) << r.error().message();
  const auto& kern = r->kernels.at(0);
  using K = model::Value::Kind;
  EXPECT_EQ(kern.find("d")->value.kind, K::Double);
  EXPECT_EQ(kern.number("d"), 2.5);
  EXPECT_EQ(kern.find("f")->value.kind, K::Float);
  EXPECT_EQ(kern.number("f"), 1.25);
  EXPECT_EQ(kern.find("u32")->value.kind, K::Uint32);
  EXPECT_EQ(kern.find("u32")->value.integer, 4000000000u);
  EXPECT_EQ(kern.find("u64")->value.integer, 0x7f0000001234ull);
  EXPECT_EQ(kern.text("s"), "text with \"quotes\"");
  EXPECT_EQ(kern.find("none")->value.kind, K::None);
  EXPECT_EQ(kern.find("double_wins")->value.kind, K::Double);
  EXPECT_EQ(kern.number("double_wins"), 0.5);
  EXPECT_EQ(kern.find("unknown_fields")->value.kind, K::Uint32);
  EXPECT_EQ(kern.number("unknown_fields"), 3);
  EXPECT_NE(kern.find("d")->name_id, model::Metric::kNoNameId);
  EXPECT_NE(kern.find("d")->name_id, kern.find("f")->name_id);
}

TEST(WireDecode, MalformedMetricIsAnErrorWithItsOffset) {
  ReportWriter w;
  pb::ProfileResult k = w.kernel("bad", 1, 1, {{"ok", 1}});
  auto* m = k.add_metric_results();
  m->set_name_id(w.name_id("broken"));
  testing::add_unknown_delimited(*m->mutable_unknown_fields(), 2, std::string("\x19\x01", 2));  // a double cut short
  std::string bytes = one_block(w, {k});
  auto src = io::memory_source("mem.ncu-rep", bytes);
  auto r = readers::load(*src);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("metric result is not a valid protobuf message"), std::string::npos);
  EXPECT_GT(r.error().offset, 0u);
}

pb::ProfileResult listed_kernel(ReportWriter& w, const std::string& name, uint64_t base, int pcs) {
  pb::ProfileResult k = w.kernel(name, 1, 32, {{"gpu__time_duration.sum", 100.0 * pcs}});
  auto* start = k.add_metric_results();
  start->set_name_id(w.name_id("launch__function_pcs"));
  auto* e0 = start->add_instances();
  e0->mutable_correlation_id()->set_uint64_value(0);
  e0->mutable_element_value()->set_uint64_value(base);
  for (const char* metric : {"inst_executed", "smsp__pcsamp_sample_count"}) {
    auto* m = k.add_metric_results();
    m->set_name_id(w.name_id(metric));
    for (int i = 0; i < pcs; ++i) {
      auto* e = m->add_instances();
      e->mutable_correlation_id()->set_uint64_value(base + 16 * i);
      e->mutable_element_value()->set_uint64_value(i + 1);
    }
  }
  return k;
}

// Lists are kept undecoded and decoded on first use, from bytes the kernel
// owns: they outlive the read and the file's bytes.
TEST(WireDecode, InstanceListsDecodeLazilyAndOutliveTheSource) {
  ReportWriter w;
  std::string bytes = one_block(w, {listed_kernel(w, "lists", 0x1000, 5)});
  model::Report r;
  {
    auto src = io::memory_source("mem.ncu-rep", bytes);
    auto loaded = readers::load(*src);
    ASSERT_TRUE(loaded) << loaded.error().message();
    r = std::move(*loaded);
  }
  bytes.assign(bytes.size(), '\0');  // the source's bytes are gone
  const model::Metric* m = r.kernels.at(0).find("inst_executed");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->listed);
  EXPECT_EQ(m->instances.size(), 5u);  // known without decoding
  model::Metric copy = *m;
  ASSERT_EQ(m->instances.items().size(), 5u);
  EXPECT_EQ(m->instances[4].key.integer, 0x1000u + 64);
  EXPECT_EQ(m->instances[4].value.integer, 5u);
  EXPECT_EQ(copy.instances.back().value.integer, 5u);
  copy.instances.push_back({model::Value::of_uint(1), model::Value::of_uint(2)});  // edits decode first
  EXPECT_EQ(copy.instances.size(), 6u);
  EXPECT_EQ(m->instances.size(), 5u);
}

// Streaming decodes each kernel into the object the sink left: a kernel with
// fewer metrics, lists, rules or no source after a bigger one keeps nothing
// of it. Every kernel must equal what a plain load() gives.
TEST(WireDecode, RecycledKernelsMatchLoadedOnes) {
  ReportWriter w;
  std::vector<pb::ProfileResult> kernels;
  kernels.push_back(listed_kernel(w, "big", 0x2000, 40));
  kernels.back().mutable_source()->set_reference(5);
  auto* rule = kernels.back().add_rule_results();
  rule->set_identifier("SomeRule");
  rule->mutable_body()->add_items()->mutable_message()->set_message("advice");
  kernels.push_back(w.kernel("small", 2, 64, {{"only", 1}}));
  kernels.push_back(listed_kernel(w, "again", 0x3000, 3));
  std::string bytes = one_block(w, kernels);
  auto src = io::memory_source("mem.ncu-rep", bytes);
  auto loaded = readers::load(*src);
  ASSERT_TRUE(loaded);
  std::vector<std::string> seen;
  model::Report head;
  auto ok = readers::stream_into(*src, {}, head, [&](model::Kernel&& k) {
    const auto& want = loaded->kernels.at(seen.size());
    EXPECT_EQ(k.display_name(), want.display_name());
    EXPECT_EQ(k.grid, want.grid);
    EXPECT_EQ(k.source_ref, want.source_ref);
    EXPECT_EQ(k.rules.size(), want.rules.size());
    EXPECT_EQ(k.metrics.size(), want.metrics.size());
    for (const auto& m : want.metrics) {
      const auto* got = k.find(m.name);
      if (got == nullptr) {
        ADD_FAILURE() << "missing " << m.name;
        continue;
      }
      EXPECT_EQ(got->value.number, m.value.number);
      EXPECT_EQ(got->instances.size(), m.instances.size());
      if (!m.instances.empty()) EXPECT_EQ(got->instances.back().value.integer, m.instances.back().value.integer);
    }
    EXPECT_EQ(k.find("only") != nullptr, want.find("only") != nullptr);
    seen.push_back(k.display_name());
    return true;  // the kernel is left to the reader, which reuses it
  });
  ASSERT_TRUE(ok);
  EXPECT_EQ(seen.size(), 3u);
}

TEST(WireDecode, PureFilterIsAskedOncePerName) {
  ReportWriter w;
  std::vector<pb::ProfileResult> kernels;
  for (int i = 0; i < 20; ++i) kernels.push_back(w.kernel("k", 1, 1, {{"keep_me", i}, {"drop_me", 1}}));
  std::string bytes = one_block(w, kernels);
  auto src = io::memory_source("mem.ncu-rep", bytes);
  std::map<std::string, int> asked;
  readers::ReadOptions opt;
  opt.metric_filter = [&](std::string_view n) {
    ++asked[std::string(n)];
    return n == "keep_me";
  };
  opt.metric_filter_by_name = true;
  int kept = 0;
  auto r = readers::stream(*src, opt, [&](model::Kernel&& k) {
    kept += static_cast<int>(k.metrics.size());
    EXPECT_EQ(k.find("drop_me"), nullptr);
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(kept, 20);
  EXPECT_EQ(asked["keep_me"], 1);
  EXPECT_EQ(asked["drop_me"], 1);
}

// A finding's hot lines come from a table over its own metrics: the same
// rows and shares as the kernel's whole table, in the same order.
TEST(WireDecode, TableOverSomeMetricsAgreesWithTheWholeTable) {
  ReportWriter w;
  std::string bytes = one_block(w, {listed_kernel(w, "hot", 0x4000, 30)});
  auto src = io::memory_source("mem.ncu-rep", bytes);
  auto r = readers::load(*src);
  ASSERT_TRUE(r);
  const auto& k = r->kernels.at(0);
  auto whole = analysis::source_table(*r, k);
  auto part = analysis::source_table(*r, k, {"inst_executed"});
  ASSERT_EQ(whole.level, analysis::SourceLevel::Sass);
  EXPECT_EQ(part.sorted_by, whole.sorted_by);                  // the default metric joins the subset
  auto a = analysis::hottest_lines(whole, "instructions", 5);  // the alias of inst_executed
  auto b = analysis::hottest_lines(part, "instructions", 5);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].text, b[i].text);
    EXPECT_EQ(a[i].share, b[i].share);
  }
}

}  // namespace
}  // namespace keet
