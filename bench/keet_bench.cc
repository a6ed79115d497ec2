// Google Benchmark cases for reading and analysing reports. Reports come from
// environment variables so the bench script can point at fixtures and at the
// generated large reports:
//   KEET_BENCH_REPORT  a normal report (default: NVIDIA's sample via ../shared)
//   KEET_BENCH_BIG     a large report (scripts/bench makes a 20,000-kernel one)
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "analysis/engine.h"
#include "readers/reader.h"
#include "support/testing.h"

namespace {

std::string report_path(const char* env) {
  if (const char* p = std::getenv(env)) return p;
  auto ex = keet::testing::oracle_examples();
  return ex ? *ex + "/addConstDouble3.ncu-rep" : "";
}

keet::readers::ReadOptions list_options() {
  keet::readers::ReadOptions o;
  o.instances = o.rules = o.modules = false;
  o.metric_filter = [](std::string_view n) { return n == "gpu__time_duration.sum"; };
  return o;
}

// Streams every kernel; `analyze` runs the engine on each one as it arrives.
void stream_report(benchmark::State& state, const char* env, bool analyze, bool list_only) {
  std::string path = report_path(env);
  auto src = keet::io::open_file(path);
  if (path.empty() || !src) {
    state.SkipWithError("report not available (set KEET_BENCH_REPORT / KEET_BENCH_BIG)");
    return;
  }
  keet::readers::ReadOptions opt = list_only ? list_options() : keet::readers::ReadOptions{};
  size_t kernels = 0;
  for (auto _ : state) {
    keet::model::Report report;
    auto r = keet::readers::stream_into(**src, opt, report, [&](keet::model::Kernel&& k) {
      if (analyze) benchmark::DoNotOptimize(keet::analysis::analyze_kernel(report, k));
      ++kernels;
      return true;
    });
    if (!r) state.SkipWithError("read failed");
  }
  state.counters["kernels"] = benchmark::Counter(static_cast<double>(kernels), benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (*src)->bytes().size()));
}

void BM_ReadReport(benchmark::State& s) { stream_report(s, "KEET_BENCH_REPORT", false, false); }
void BM_ReadAndAnalyzeReport(benchmark::State& s) { stream_report(s, "KEET_BENCH_REPORT", true, false); }
void BM_ListBig(benchmark::State& s) { stream_report(s, "KEET_BENCH_BIG", false, true); }
void BM_ReadBig(benchmark::State& s) { stream_report(s, "KEET_BENCH_BIG", false, false); }
void BM_ReadAndAnalyzeBig(benchmark::State& s) { stream_report(s, "KEET_BENCH_BIG", true, false); }

BENCHMARK(BM_ReadReport)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadAndAnalyzeReport)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ListBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadAndAnalyzeBig)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
