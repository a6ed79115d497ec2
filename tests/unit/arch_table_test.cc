// The architecture tables (data/arch/*.json) and the effective device spec:
// lookups, graceful fallback for unknown CCs, report attributes winning.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/arch.h"

namespace keet {
namespace {

using analysis::ComputeCapability;

TEST(ArchTable, ParsesComputeCapabilitySpellings) {
  EXPECT_EQ(analysis::parse_cc("8.6"), (ComputeCapability{8, 6}));
  EXPECT_EQ(analysis::parse_cc("86"), (ComputeCapability{8, 6}));
  EXPECT_EQ(analysis::parse_cc("sm_90a"), (ComputeCapability{9, 0}));
  EXPECT_EQ(analysis::parse_cc("10.3"), (ComputeCapability{10, 3}));
  EXPECT_EQ(analysis::parse_cc("120"), (ComputeCapability{12, 0}));
  EXPECT_FALSE(analysis::parse_cc("abc"));
  EXPECT_FALSE(analysis::parse_cc("8."));
  EXPECT_FALSE(analysis::parse_cc(""));
}

TEST(ArchTable, HasEveryRequiredComputeCapability) {
  for (const char* cc : {"6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3",
                         "11.0", "12.0", "12.1"}) {
    const auto* a = analysis::find_arch(cc);
    ASSERT_NE(a, nullptr) << cc;
    EXPECT_EQ(a->cc.text(), cc);
    EXPECT_FALSE(a->architecture.empty()) << cc;
  }
}

// Internal consistency of every row: facts that must hold whatever the CC.
TEST(ArchTable, RowsAreConsistent) {
  ASSERT_GE(analysis::compute_capabilities().size(), 16u);
  for (const auto& a : analysis::compute_capabilities()) {
    SCOPED_TRACE(a.cc.text());
    EXPECT_EQ(a.max_threads_per_sm, a.max_warps_per_sm * a.warp_size);
    EXPECT_EQ(a.registers_per_sm, 65536);
    EXPECT_EQ(a.register_allocation_unit, 256);
    EXPECT_GE(a.max_shared_memory_per_block_optin, a.max_shared_memory_per_block);
    EXPECT_LE(a.max_shared_memory_per_block_optin + a.reserved_shared_memory_per_block, a.shared_memory_per_sm);
    EXPECT_EQ(a.reserved_shared_memory_per_block, a.cc.major >= 8 ? 1024 : 0);
    if (!a.shared_memory_carveouts_kb.empty())
      EXPECT_EQ(a.shared_memory_carveouts_kb.back() * 1024, a.shared_memory_per_sm);
    EXPECT_GT(a.fp32_lanes_per_sm, 0);
  }
}

TEST(ArchTable, FeatureAvailabilityFollowsTheArchitecture) {
  for (const auto& a : analysis::compute_capabilities()) {
    SCOPED_TRACE(a.cc.text());
    const ComputeCapability cc = a.cc, sm70{7, 0}, sm80{8, 0}, sm89{8, 9}, sm90{9, 0};
    EXPECT_EQ(a.has("cp_async"), cc >= sm80);
    EXPECT_EQ(a.has("bf16_mma"), cc >= sm80);
    EXPECT_EQ(a.has("fp8"), cc >= sm89);
    EXPECT_EQ(a.has("wgmma"), cc == sm90);
    EXPECT_EQ(a.has("tma"), cc >= sm90);
    EXPECT_EQ(a.has("thread_block_clusters"), cc >= sm90);
    EXPECT_EQ(a.has("distributed_shared_memory"), cc >= sm90);
    EXPECT_EQ(a.has("tcgen05"), cc.major == 10 || cc.major == 11);
    EXPECT_EQ(a.tensor_core_generation > 0, cc >= sm70);
  }
  EXPECT_FALSE(analysis::find_arch("8.6")->has("no_such_feature"));
}

TEST(ArchTable, ArchitectureNames) {
  EXPECT_EQ(analysis::find_arch("6.1")->architecture, "Pascal");
  EXPECT_EQ(analysis::find_arch("7.0")->architecture, "Volta");
  EXPECT_EQ(analysis::find_arch("7.5")->architecture, "Turing");
  EXPECT_EQ(analysis::find_arch("8.6")->architecture, "Ampere");
  EXPECT_EQ(analysis::find_arch("8.9")->architecture, "Ada Lovelace");
  EXPECT_EQ(analysis::find_arch("9.0")->architecture, "Hopper");
  EXPECT_EQ(analysis::find_arch("12.0")->architecture, "Blackwell");
}

TEST(ArchTable, UnknownCcFallsBackToNearestOlderWithANote) {
  auto exact = analysis::lookup_arch("8.6");
  ASSERT_NE(exact.spec, nullptr);
  EXPECT_TRUE(exact.note.empty());

  auto between = analysis::lookup_arch("8.8");
  ASSERT_NE(between.spec, nullptr);
  EXPECT_EQ(between.spec->cc.text(), "8.7");
  EXPECT_NE(between.note.find("nearest older"), std::string::npos);

  auto future = analysis::lookup_arch("13.0");
  ASSERT_NE(future.spec, nullptr);
  EXPECT_EQ(future.spec->cc.text(), "12.1");

  auto ancient = analysis::lookup_arch("3.5");
  EXPECT_EQ(ancient.spec, nullptr);
  EXPECT_FALSE(ancient.note.empty());
  EXPECT_EQ(analysis::lookup_arch("x.y").spec, nullptr);
}

TEST(ArchTable, FindsProductsByDisplayName) {
  auto name = [](const char* display) {
    const auto* g = analysis::find_gpu(display);
    return g ? g->name : std::string("-");
  };
  EXPECT_EQ(name("NVIDIA A10G"), "A10G");
  EXPECT_EQ(name("NVIDIA A10"), "A10");
  EXPECT_EQ(name("NVIDIA A100-PCIE-40GB"), "A100 40GB PCIe");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB"), "A100 80GB SXM");
  EXPECT_EQ(name("Tesla T4"), "Tesla T4");
  EXPECT_EQ(name("Tesla V100-SXM2-32GB"), "Tesla V100 SXM2");
  EXPECT_EQ(name("NVIDIA GeForce RTX 2060 SUPER"), "GeForce RTX 2060 SUPER");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4070 Ti"), "GeForce RTX 4070 Ti");
  EXPECT_EQ(name("NVIDIA L40S"), "L40S");
  EXPECT_EQ(name("NVIDIA H100 PCIe"), "H100 PCIe");
  EXPECT_EQ(name("NVIDIA GeForce RTX 5060 Ti"), "GeForce RTX 5060 Ti");
  EXPECT_EQ(name("Some Future GPU"), "-");
}

TEST(ArchTable, ProductsReferToKnownArchitectures) {
  ASSERT_GE(analysis::gpu_products().size(), 35u);
  for (const auto& g : analysis::gpu_products()) {
    SCOPED_TRACE(g.name);
    EXPECT_NE(analysis::find_arch(g.cc), nullptr);
    EXPECT_GT(g.sm_count, 0);
    EXPECT_GT(g.dram_bandwidth_gbs, 0);
    // Vendor FP32 peak agrees with SMs x lanes x 2 x boost clock within 3 %.
    const auto* a = analysis::find_arch(g.cc);
    double derived = 2.0 * g.sm_count * a->fp32_lanes_per_sm * g.boost_clock_mhz / 1e6;
    EXPECT_NEAR(g.fp32_tflops, derived, 0.03 * derived);
  }
  EXPECT_FALSE(analysis::arch_sources().empty());
}

std::map<std::string, model::Value> a10g_attributes() {
  using model::Value;
  return {{"device__attribute_display_name", Value::of_string("NVIDIA A10G")},
          {"device__attribute_compute_capability_major", Value::of_uint(8)},
          {"device__attribute_compute_capability_minor", Value::of_uint(6)},
          {"device__attribute_multiprocessor_count", Value::of_uint(80)},
          {"device__attribute_clock_rate", Value::of_uint(1710000)},
          {"device__attribute_memory_clock_rate", Value::of_uint(6251000)},
          {"device__attribute_global_memory_bus_width", Value::of_uint(384)},
          {"device__attribute_max_shared_memory_per_block_optin", Value::of_uint(12345)},
          {"device__attribute_max_registers_per_multiprocessor", Value::of_uint(32768)}};
}

TEST(ArchTable, ReportAttributesWinOverTheTable) {
  auto d = analysis::device_spec_from(a10g_attributes());
  EXPECT_EQ(d.name, "NVIDIA A10G");
  ASSERT_NE(d.product, nullptr);
  EXPECT_EQ(d.product->name, "A10G");
  EXPECT_EQ(d.arch.cc.text(), "8.6");
  EXPECT_EQ(d.arch.max_shared_memory_per_block_optin, 12345);  // report, not the table's 101376
  EXPECT_EQ(d.arch.registers_per_sm, 32768);
  EXPECT_EQ(d.arch.max_warps_per_sm, 48);  // absent from the report: table
  EXPECT_EQ(d.sm_count, 80);
  EXPECT_DOUBLE_EQ(d.clock_mhz, 1710);
  EXPECT_NEAR(d.dram_bandwidth_gbs, 600.1, 0.1);  // 2 x 6251 MHz x 48 bytes
  EXPECT_NEAR(d.fp32_peak_gflops, 2.0 * 80 * 128 * 1710 / 1000, 1e-6);
  auto origin = [&](const std::string& f) {
    for (const auto& [field, from] : d.origin)
      if (field == f) return from;
    return std::string("none");
  };
  EXPECT_EQ(origin("max_shared_memory_per_block_optin"), "report");
  EXPECT_EQ(origin("max_warps_per_sm"), "table");
  EXPECT_EQ(origin("sm_count"), "report");
}

TEST(ArchTable, MissingAttributesComeFromTheProductTable) {
  using model::Value;
  auto d = analysis::device_spec_from({{"display_name", Value::of_string("Tesla T4")}});
  EXPECT_EQ(d.arch.cc.text(), "7.5");  // from the product row
  EXPECT_EQ(d.sm_count, 40);
  EXPECT_DOUBLE_EQ(d.dram_bandwidth_gbs, 320);
  ASSERT_TRUE(d.fp16_tensor_peak_gflops);
  EXPECT_DOUBLE_EQ(*d.fp16_tensor_peak_gflops, 65000);
}

TEST(ArchTable, UnknownDeviceDegradesGracefully) {
  using model::Value;
  auto d = analysis::device_spec_from({{"compute_capability_major", Value::of_uint(8)},
                                       {"compute_capability_minor", Value::of_uint(8)},
                                       {"multiprocessor_count", Value::of_uint(10)}});
  EXPECT_EQ(d.arch.cc.text(), "8.8");      // the device's own CC is kept
  EXPECT_EQ(d.arch.max_warps_per_sm, 48);  // limits of 8.7
  EXPECT_EQ(d.sm_count, 10);
  EXPECT_EQ(d.product, nullptr);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("8.7"), std::string::npos);

  auto nothing = analysis::device_spec_from({});
  EXPECT_FALSE(nothing.known());
  EXPECT_FALSE(nothing.notes.empty());
}

TEST(ArchTable, DeviceSpecReadsKernelMetricsBeforeSessionDevice) {
  model::Report r;
  model::Device dev;
  dev.attributes["device__attribute_display_name"] = model::Value::of_string("NVIDIA A10G");
  dev.attributes["device__attribute_multiprocessor_count"] = model::Value::of_uint(80);
  r.session.devices.push_back(dev);
  model::Kernel k;
  k.metrics.push_back({"device__attribute_multiprocessor_count", model::Value::of_uint(72), {}, ""});
  k.metrics.push_back({"device__attribute_compute_capability_major", model::Value::of_uint(8), {}, ""});
  k.metrics.push_back({"device__attribute_compute_capability_minor", model::Value::of_uint(6), {}, ""});
  auto d = analysis::device_spec(r, k);
  EXPECT_EQ(d.sm_count, 72);
  EXPECT_EQ(d.name, "NVIDIA A10G");
  EXPECT_EQ(d.arch.architecture, "Ampere");
}

TEST(ArchTable, DeviceSpecForCc) {
  auto d = analysis::device_spec_for_cc("9.0", "H100 SXM");
  EXPECT_EQ(d.arch.max_shared_memory_per_block_optin, 232448);
  EXPECT_EQ(d.sm_count, 132);
  auto bad = analysis::device_spec_for_cc("nine");
  EXPECT_FALSE(bad.known());
  EXPECT_FALSE(bad.notes.empty());
}

}  // namespace
}  // namespace keet
