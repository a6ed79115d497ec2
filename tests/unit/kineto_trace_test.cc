// The PyTorch profiler (Kineto) trace reader: what each event becomes in the
// timeline sink (times exact to the nanosecond, kernels in start order,
// launches joined to their calls), the same run verdicts as an nsys export
// on traces written here, and every damaged or hostile input refused with one
// clear line.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/run_verdicts.h"
#include "model/timeline.h"
#include "readers/kineto_trace.h"
#include "readers/nsys_export.h"
#include "support/kineto_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using testing::gzip;
using testing::KinetoWriter;

struct Recorded {
  model::TimelineMeta meta;
  int64_t span_start = 0, span_end = 0;
  struct Kernel {
    int64_t start, end;
    uint64_t device, stream;
    std::string name, short_name;
    std::optional<int64_t> api_start;
  };
  struct Memory {
    model::MemoryKind kind;
    int64_t start, end;
    uint64_t bytes;
    std::string direction, api;
    model::HostMemory src, dst;
  };
  std::vector<Kernel> kernels;
  std::vector<Memory> memory;
  std::vector<std::string> nvtx, syncs;
  std::vector<model::ApiCallStats> api;
  std::vector<std::string> order;  // "k", "m", "n" as the sink saw them
};

class RecordingSink final : public model::TimelineSink {
 public:
  Recorded r;
  void begin(const model::TimelineMeta& m, int64_t s, int64_t e) override {
    r.meta = m, r.span_start = s, r.span_end = e;
  }
  void kernel(const model::KernelLaunch& k) override {
    r.kernels.push_back(
        {k.start, k.end, k.device, k.stream, std::string(k.name), std::string(k.short_name), k.api_start});
    r.order.push_back("k");
  }
  void memory(const model::MemoryOp& m) override {
    r.memory.push_back({m.kind, m.start, m.end, m.bytes, std::string(m.direction), std::string(m.api), m.src, m.dst});
    r.order.push_back("m");
  }
  void nvtx(const model::NvtxRange& n) override {
    r.nvtx.emplace_back(n.name);
    r.order.push_back("n");
  }
  void sync_call(const model::SyncCall& c) override { r.syncs.emplace_back(c.name); }
  void overhead(const model::ProfilerOverhead&) override {}
  void api_calls(const model::ApiCallStats& a) override { r.api.push_back(a); }
};

Recorded read(const std::string& bytes, const readers::KinetoLimits& limits = {}) {
  RecordingSink sink;
  auto ok = readers::read_kineto_trace_bytes(bytes, "t.json", sink, limits);
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().what);
  return sink.r;
}

std::string error_of(const std::string& bytes, const readers::KinetoLimits& limits = {}) {
  model::TimelineBuilder builder;
  auto ok = readers::read_kineto_trace_bytes(bytes, "t.json", builder, limits);
  EXPECT_FALSE(ok) << "read without error";
  std::string msg = ok ? "" : readers::timeline_error_message(ok.error());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_TRUE(msg.starts_with("t.json: ")) << msg;
  return msg;
}

model::TimelineSummary summarise(const std::string& bytes) {
  model::TimelineBuilder builder(analysis::run_limits());
  auto ok = readers::read_kineto_trace_bytes(bytes, "t.json", builder);
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().what);
  return std::move(builder).finish();
}

std::vector<std::string> verdicts(const model::TimelineSummary& t) {
  std::vector<std::string> ids;
  for (const auto& v : analysis::diagnose_run(t).verdicts) ids.push_back(v.id);
  return ids;
}

bool has(const std::vector<std::string>& ids, const std::string& id) { return std::ranges::count(ids, id) > 0; }

TEST(KinetoTrace, EveryKindOfEventReachesTheSinkAsTheNsysReaderHandsItOn) {
  KinetoWriter w;
  w.rank(3, 8);
  w.annotation("ProfilerStep#7", 1000, 900);
  w.runtime("cudaLaunchKernel", 1010.25, 4, 11);
  w.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, float*)", 1690.655,
           2.5, 11);
  w.runtime("cudaMemcpyAsync", 1100, 30, 12);
  w.memcpy("Memcpy HtoD (Pageable -> Device)", 1105, 20, 1 << 20, 12);
  w.runtime("cudaMemsetAsync", 1200, 2, 13);
  w.memset(1210, 1, 4096, 13);
  w.runtime("cudaStreamSynchronize", 1300, 50);
  w.events().push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::add"}, {"ts", 1000}, {"dur", 5}});
  auto r = read(w.json());
  ASSERT_EQ(r.kernels.size(), 1u);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.start, 1690655);
  EXPECT_EQ(k.end, 1690655 + 2500);
  EXPECT_EQ(k.api_start, 1010250);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.short_name, "vectorized_elementwise_kernel");
  ASSERT_EQ(r.memory.size(), 2u);
  EXPECT_EQ(r.memory[0].direction, "Host-to-Device");
  EXPECT_EQ(r.memory[0].src, model::HostMemory::Pageable);
  EXPECT_EQ(r.memory[0].dst, model::HostMemory::Device);
  EXPECT_EQ(r.memory[0].api, "cudaMemcpyAsync");
  EXPECT_EQ(r.memory[0].bytes, 1u << 20);
  EXPECT_EQ(r.memory[1].kind, model::MemoryKind::Set);
  EXPECT_EQ(r.memory[1].dst, model::HostMemory::Device);
  EXPECT_EQ(r.memory[1].api, "cudaMemsetAsync");
  EXPECT_EQ(r.nvtx, std::vector<std::string>{"ProfilerStep#7"});
  EXPECT_EQ(r.syncs, std::vector<std::string>{"cudaStreamSynchronize"});
  EXPECT_EQ(r.order, (std::vector<std::string>{"n", "m", "m", "k"}));  // ranges first, then by start
  EXPECT_EQ(r.api.size(), 4u);
  EXPECT_EQ(r.span_start, 1105000);
  EXPECT_EQ(r.span_end, 1690655 + 2500);
  EXPECT_EQ(r.meta.source, model::TimelineSource::Kineto);
  ASSERT_EQ(r.meta.gpus.size(), 1u);
  EXPECT_EQ(r.meta.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.meta.distributed.rank, 3);
  EXPECT_EQ(r.meta.distributed.world_size, 8);
  EXPECT_EQ(r.meta.schema_version, "1");
  ASSERT_EQ(r.meta.gpu_ranges.size(), 1u);
  EXPECT_EQ(r.meta.gpu_ranges[0].start, 1105000);
}

TEST(KinetoTrace, TimesAreReadFromTheDigitsNotThroughADouble) {
  // Epoch microseconds with three decimals need 19 significant digits: a
  // double would move them by up to a quarter of a microsecond.
  std::string t = R"({"traceEvents":[
    {"ph":"X","cat":"kernel","name":"a","ts":1695835572943623.123,"dur":0.0005,"args":{"device":0,"stream":7}},
    {"ph":"X","cat":"kernel","name":"b","ts":1695835572943624,"dur":1.5e1,"args":{"device":0,"stream":7}},
    {"ph":"X","cat":"kernel","name":"c","ts":"1695835572943700.9999","dur":1,"args":{"device":0,"stream":7}}]})";
  auto r = read(t);
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.kernels[0].start, 1695835572943623123);
  EXPECT_EQ(r.kernels[0].end - r.kernels[0].start, 1);  // 0.5 ns rounds up
  EXPECT_EQ(r.kernels[1].start, 1695835572943624000);
  EXPECT_EQ(r.kernels[1].end - r.kernels[1].start, 15000);
  EXPECT_EQ(r.kernels[2].start, 1695835572943701000);
}

TEST(KinetoTrace, KernelsReachTheSinkInStartOrderWhateverTheFileOrder) {
  KinetoWriter w;
  for (int i = 0; i < 50; ++i) w.kernel("k" + std::to_string(i), 1000 + (i * 37 % 50) * 10, 5, i);
  auto r = read(w.json());
  ASSERT_EQ(r.kernels.size(), 50u);
  EXPECT_TRUE(std::ranges::is_sorted(r.kernels, {}, &Recorded::Kernel::start));
}

TEST(KinetoTrace, SmallBuffersAndBatchesReadTheSameEvents) {
  // The scanner's refills and batch boundaries fall inside strings, escapes
  // and numbers: the events read must not depend on where.
  KinetoWriter w;
  // Quotes and backslashes, escaped in the JSON the writer makes.
  const std::string quoted = R"(void f<"quoted\">(int))";
  for (int i = 0; i < 300; ++i)
    w.launch(i % 2 ? quoted : "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 1000 + i * 20, 1005 + i * 20, 7.125);
  auto whole = read(w.json());
  for (size_t batch : {1, 100, 3000}) {
    auto pieces = read(w.json(), {.max_value_bytes = 4096, .batch_bytes = batch});
    ASSERT_EQ(pieces.kernels.size(), whole.kernels.size());
    for (size_t i = 0; i < whole.kernels.size(); ++i) {
      EXPECT_EQ(pieces.kernels[i].start, whole.kernels[i].start);
      EXPECT_EQ(pieces.kernels[i].name, whole.kernels[i].name);
      EXPECT_EQ(pieces.kernels[i].api_start, whole.kernels[i].api_start);
    }
  }
  EXPECT_EQ(whole.kernels[1].name, quoted);
  EXPECT_NE(w.json().find(R"(f<\"quoted\\\">)"), std::string::npos) << "written escaped";
}

TEST(KinetoTrace, GzipIsToldByItsBytesFromMemoryAndFromAFile) {
  KinetoWriter w;
  w.launch("k", 1000, 1010, 5);
  auto gz = gzip(w.json());
  EXPECT_EQ(read(gz).kernels.size(), 1u);
  // Two members one after another read as one stream (gzip -c a b).
  auto half = w.json();
  auto cut = half.size() / 2;
  EXPECT_EQ(read(gzip(half.substr(0, cut)) + gzip(half.substr(cut))).kernels.size(), 1u);
  auto path = testing::temp_path("kineto-file.pt.trace");  // no .gz: the content says it
  testing::write_file(path, gz);
  RecordingSink sink;
  ASSERT_TRUE(readers::read_kineto_trace(path, sink));
  EXPECT_EQ(sink.r.kernels.size(), 1u);
  EXPECT_EQ(readers::sniff_timeline(gz.substr(0, readers::kTimelineHead)), readers::TimelineFile::Kineto);
  EXPECT_EQ(readers::sniff_timeline(w.json()), readers::TimelineFile::Kineto);
  EXPECT_EQ(readers::sniff_timeline(R"({"name": "package.json", "version": "1.0"})"), readers::TimelineFile::Other);
  EXPECT_EQ(readers::sniff_timeline("[1, 2, 3]"), readers::TimelineFile::Other);
}

TEST(KinetoTrace, DamagedAndHostileInputIsOneClearLine) {
  KinetoWriter w;
  for (int i = 0; i < 200; ++i) w.launch("k", 1000 + i * 20, 1005 + i * 20, 7);
  auto good = w.json();
  auto gz = gzip(good);
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)).find("truncated: the trace ends inside"), std::string::npos);
  EXPECT_NE(error_of(gz.substr(0, gz.size() / 2)).find("truncated: the gzip stream ends"), std::string::npos);
  auto bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  EXPECT_NE(error_of(bad_crc).find("damaged gzip stream"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "ts": }]})").find("traceEvents[0]: malformed JSON"),
            std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"\xff\xfe\"}]}").find("malformed JSON"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schemaVersion": 1})").find("no \"traceEvents\" array"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": []} {})").find("after the end"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [] "x": 1})").find("expected ','"), std::string::npos);
  EXPECT_NE(error_of("<html></html>").find("not a PyTorch profiler trace"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\": [" + std::string(100000, '[')).find("nested more than 512 deep"),
            std::string::npos);
  EXPECT_NE(error_of(good, {.max_value_bytes = 64, .batch_bytes = 16}).find("longer than"), std::string::npos);
  EXPECT_NE(error_of(good, {.max_events = 100}).find("more than 100"), std::string::npos);
  // Odd but well-formed events are set aside, with a warning, never a crash.
  auto t = summarise(R"({"traceEvents": [3, "x", {"ph": "X", "cat": "kernel", "name": 5, "ts": "soon", "dur": -1,
    "args": {"device": "zero", "grid": "big"}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
    "args": {"device": -4, "stream": 1e300, "grid": [1, "x", 3, 4, 5]}}]})");
  EXPECT_EQ(t.launches, 1u);
  EXPECT_EQ(t.warnings.size(), 2u);
}

// --- The run verdicts on traces written here: the nsys export's verdicts,
// from the same model. ------------------------------------------------------

TEST(KinetoVerdicts, AGpuIdleForASecondIsAGap) {
  KinetoWriter w;
  w.launch("k", 1000, 1010, 100);
  w.launch("k", 1'200'000, 1'200'010, 100);
  auto ids = verdicts(summarise(w.json()));
  EXPECT_TRUE(has(ids, "gpu-gaps"));
  KinetoWriter dense;
  for (int i = 0; i < 100; ++i) dense.launch("k", 1000 + i * 100, 1010 + i * 100, 95);
  EXPECT_FALSE(has(verdicts(summarise(dense.json())), "gpu-gaps"));
}

TEST(KinetoVerdicts, SynchronousAndPageableCopiesAreNamed) {
  KinetoWriter w;
  for (int i = 0; i < 20; ++i) {
    w.launch("k", 1000 + i * 1000, 1010 + i * 1000, 400);
    w.runtime("cudaMemcpy", 1450 + i * 1000, 300, 500 + i);
    w.memcpy("Memcpy DtoH (Device -> Pageable)", 1460 + i * 1000, 200, 1 << 22, 500 + i);
    w.runtime("cudaMemcpyAsync", 1700 + i * 1000, 250, 700 + i);
    w.memcpy("Memcpy HtoD (Pageable -> Device)", 1710 + i * 1000, 200, 1 << 22, 700 + i);
  }
  auto t = summarise(w.json());
  auto ids = verdicts(t);
  EXPECT_TRUE(has(ids, "sync-memcpy"));
  EXPECT_TRUE(has(ids, "pageable-async-memcpy"));
  EXPECT_EQ(t.checks.sync_copies.count, 20u);
  EXPECT_EQ(t.checks.pageable_async_copies.count, 20u);
}

TEST(KinetoVerdicts, HipCopiesAndSynchronisationReadAsCudasOwn) {
  KinetoWriter w("AMD Instinct MI300X");
  for (int i = 0; i < 150; ++i) {
    int64_t corr = 10 + i;
    w.runtime("hipLaunchKernel", 1000 + i * 300, 3, corr);
    w.kernel("Cijk_Alik_Bljk_HHS_BH_MT128x128x32", 1050 + i * 300, 100, corr, 0);
    w.runtime("hipDeviceSynchronize", 1005 + i * 300, 150);
  }
  w.runtime("hipMemcpyWithStream", 50'000, 9000, 9);
  w.memcpy("Memcpy DtoH (Device -> Host)", 50'010, 8000, 1 << 24, 9, 0);
  auto t = summarise(w.json());
  auto ids = verdicts(t);
  EXPECT_TRUE(has(ids, "host-sync"));
  EXPECT_TRUE(has(ids, "sync-memcpy"));
  EXPECT_EQ(t.checks.sync_calls.count, 150u);
  EXPECT_EQ(t.latency.count, 150u);
}

TEST(KinetoVerdicts, ManyShortKernelsWithIdleBetweenAreLaunchBound) {
  KinetoWriter w;
  for (int i = 0; i < 1200; ++i) w.launch("void tiny<float>(float*)", 1000 + i * 15, 1008 + i * 15, 4);
  auto ids = verdicts(summarise(w.json()));
  EXPECT_TRUE(has(ids, "launch-bound"));
}

TEST(KinetoVerdicts, NcclAloneOnTheDeviceIsExposedCommunication) {
  KinetoWriter w;
  w.rank(0, 2);
  for (int i = 0; i < 10; ++i) {
    w.launch("void gemm<float>(float*)", 1000 + i * 1000, 1005 + i * 1000, 500);
    w.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 1506 + i * 1000,
             1510 + i * 1000, 450, 20);
  }
  auto t = summarise(w.json());
  EXPECT_TRUE(has(verdicts(t), "nccl-exposed"));
  ASSERT_EQ(t.device_use.size(), 1u);
  EXPECT_EQ(t.device_use[0].nccl_launches, 10u);
}

// The kernel to profile next is the busiest one that is no collective: an
// NCCL kernel's time is waiting on its peers, which ncu cannot shorten. On an
// AMD GPU no ncu command is offered at all (ncu profiles NVIDIA GPUs only).
TEST(KinetoVerdicts, TheKernelToProfileIsNoCollectiveAndNoneOnAnAmdGpu) {
  auto hot = [](const std::string& gpu) {
    KinetoWriter w(gpu);
    for (int i = 0; i < 10; ++i) {
      w.launch("void gemm<float>(float*)", 1000 + i * 1000, 1005 + i * 1000, 300);
      w.launch("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 1306 + i * 1000, 1310 + i * 1000, 650, 20);
    }
    auto t = summarise(w.json());
    for (const auto& v : analysis::diagnose_run(t).verdicts)
      if (v.id == "hot-kernel") return v.subject + (v.commands.empty() ? "" : " | " + v.commands.back());
    return std::string("none");
  };
  auto nvidia = hot("NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(nvidia.starts_with("void gemm<float>(float*) | ncu -k 'regex:^gemm$'")) << nvidia;
  EXPECT_EQ(hot("AMD Instinct MI300X"), "none");
}

// Each step's GPU window counts the time any operation ran inside it once:
// overlapping kernels are one stretch, and what runs past the window's edge
// counts only inside it.
TEST(KinetoTrace, StepWindowsCountTheUnionOfOperationsInsideThem) {
  KinetoWriter w;
  auto gpu_step = [&](const std::string& name, double ts, double dur) {
    w.events().push_back({{"ph", "X"},
                          {"cat", "gpu_user_annotation"},
                          {"name", name},
                          {"pid", 0},
                          {"tid", 7},
                          {"ts", ts},
                          {"dur", dur}});
  };
  gpu_step("ProfilerStep#2", 2000, 1000);  // written out of order
  gpu_step("ProfilerStep#1", 1000, 1000);
  w.kernel("a", 900, 300, 1);                                    // 1000-1200 inside step 1
  w.kernel("b", 1100, 200, 2, 8);                                // overlaps a: 1100-1300, so 1000-1300 in all
  w.memcpy("Memcpy HtoD (Pinned -> Device)", 1900, 200, 64, 3);  // 1900-2000 in step 1, 2000-2100 in step 2
  w.kernel("c", 2500, 100, 4);                                   // 2500-2600 in step 2
  auto t = summarise(w.json());
  ASSERT_EQ(t.meta.steps.size(), 2u);
  EXPECT_EQ(t.meta.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(t.meta.steps[0].busy_ns, 300'000 + 100'000);
  EXPECT_EQ(t.meta.steps[1].name, "ProfilerStep#2");
  EXPECT_EQ(t.meta.steps[1].busy_ns, 100'000 + 100'000);
  EXPECT_EQ(t.meta.steps[1].end - t.meta.steps[1].start, 1'000'000);
}

TEST(KinetoTrace, FunctionNameOfADemangledKernel) {
  EXPECT_EQ(readers::kernel_function_name("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::"
                                          "native::(anonymous namespace)::TensorListMetadata<2>, int>(int, float)"),
            "multi_tensor_apply_kernel");
  EXPECT_EQ(readers::kernel_function_name("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_Generic");
  EXPECT_EQ(readers::kernel_function_name("Cijk_Alik_Bljk_HHS_BH_MT128x128x32"), "Cijk_Alik_Bljk_HHS_BH_MT128x128x32");
  EXPECT_EQ(readers::kernel_function_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64>(Params)"),
            "Kernel2");
}

}  // namespace
}  // namespace keet
