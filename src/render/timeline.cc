#include "render/timeline.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/run_verdicts.h"
#include "render/html_parts.h"
#include "render/markdown.h"
#include "render/table.h"
#include "util/strings.h"

namespace keet::render {
namespace {

using nlohmann::json;

// A kernel as the chart's legend names it: the function, not its template arguments.
std::string abbreviated(const model::KernelSummary& k) { return k.short_name.empty() ? k.name : k.short_name; }

std::string bold(bool color, const std::string& text) { return color ? "\033[1m" + text + "\033[0m" : text; }

std::string pct(double share) { return fmt::format("{:.1f}%", 100 * share); }

std::string dim(const model::Dim3& d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }

// A launch configuration as text; a trace that records no grid and block
// for some launches (ROCm traces leave them out of many kernels' args) gives
// zeros, which no launch has.
std::string geometry(const model::LaunchConfig& c) {
  auto zero = [](const model::Dim3& d) { return d.x == 0 && d.y == 0 && d.z == 0; };
  if (zero(c.grid) && zero(c.block)) return "grid and block not in the trace";
  return fmt::format("grid {} block {}", dim(c.grid), dim(c.block));
}

json steps_json(const std::vector<model::TimelineMeta::Step>& steps) {
  json out = json::array();
  for (const auto& st : steps)
    out.push_back({{"name", st.name},
                   {"start_ns", st.start},
                   {"end_ns", st.end},
                   {"busy_ns", st.busy_ns},
                   {"idle_ns", std::max<int64_t>(0, st.end - st.start - st.busy_ns)}});
  return out;
}

json dim_json(const model::Dim3& d) { return json::array({d.x, d.y, d.z}); }

json stats_json(const model::DurationStats& s) {
  return {{"count", s.count},
          {"total_ns", s.total_ns},
          {"mean_ns", s.mean_ns()},
          {"min_ns", s.min_ns},
          {"max_ns", s.max_ns}};
}

// The CUDA API functions by host time, as nsys stats cuda_api_sum lists them.
std::string api_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  if (t.api.empty()) return "";
  size_t n = std::min<size_t>(t.api.size(), s.top > 0 ? static_cast<size_t>(s.top) : t.api.size());
  std::string out =
      bold(s.color, fmt::format("CUDA API calls by host time ({} of {}; nsys stats cuda_api_sum)", n, t.api.size())) +
      "\n";
  out += fmt::format("  {:>9} {:>11} {:>11} {:>11}  {}\n", "calls", "total", "mean", "max", "function");
  for (size_t i = 0; i < n; ++i) {
    const auto& a = t.api[i];
    out += fmt::format("  {:>9} {:>11} {:>11} {:>11}  {}\n", a.time.count,
                       human_duration(static_cast<double>(a.time.total_ns)), human_duration(a.time.mean_ns()),
                       human_duration(static_cast<double>(a.time.max_ns)), a.name);
  }
  return out;
}

// Each device's range, busy time and NCCL kernels: shown when the run used
// several devices or any NCCL kernel ran.
std::string devices_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  bool nccl = std::ranges::any_of(t.device_use, [](const auto& d) { return d.nccl_launches > 0; });
  if (t.device_use.size() < 2 && !nccl) return "";
  std::string out = bold(s.color, "Devices (each process's first to last GPU operation, summed)") + "\n";
  for (const auto& d : t.device_use) {
    auto range = static_cast<double>(d.range_ns);
    out += fmt::format("  device {}: range {}, busy {} ({}), kernels {}", d.device, human_duration(range),
                       human_duration(static_cast<double>(d.busy_ns)),
                       pct(range > 0 ? static_cast<double>(d.busy_ns) / range : 0),
                       human_duration(static_cast<double>(d.kernel_ns)));
    if (d.nccl_launches > 0)
      out +=
          fmt::format("; NCCL {} in {} launch(es), {} of it beside other kernels",
                      human_duration(static_cast<double>(d.nccl_ns)), d.nccl_launches,
                      pct(d.nccl_ns > 0 ? static_cast<double>(d.nccl_overlap_ns) / static_cast<double>(d.nccl_ns) : 0));
    out += "\n";
  }
  return out;
}

json latency_json(const model::DurationStats& s) {
  if (s.count == 0) return nullptr;
  return {{"launches", s.count}, {"mean_ns", s.mean_ns()}, {"min_ns", s.min_ns}, {"max_ns", s.max_ns}};
}

json drift_json(const model::KernelSummary& k, double threshold) {
  auto growth = analysis::drift_growth(k);
  if (!growth) return nullptr;
  auto [early, late] = k.drift.early_late_means();
  json series = json::array();
  for (const auto& b : k.drift.buckets())
    series.push_back({{"first_launch", b.first_launch}, {"launches", b.launches}, {"mean_ns", b.mean_ns()}});
  return {{"early_mean_ns", early},
          {"late_mean_ns", late},
          {"growth", *growth},
          {"drifting", *growth >= threshold},
          {"series", series}};
}

json kernel_json(const model::TimelineSummary& t, const model::KernelSummary& k, double threshold) {
  json configs = json::array();
  for (const auto& c : k.configs) {
    json cj = stats_json(c.time);
    cj.erase("count");
    cj["launches"] = c.time.count;
    cj["grid"] = dim_json(c.grid);
    cj["block"] = dim_json(c.block);
    configs.push_back(cj);
  }
  return {
      {"name", k.name},
      {"short_name", k.short_name},
      {"launches", k.time.count},
      {"total_ns", k.time.total_ns},
      {"mean_ns", k.time.mean_ns()},
      {"min_ns", k.time.min_ns},
      {"max_ns", k.time.max_ns},
      {"gpu_share", t.gpu_share(k)},
      {"span_share", t.span_share(k)},
      {"busy_share", t.gpu_busy_ns > 0 ? json(static_cast<double>(k.time.total_ns) / static_cast<double>(t.gpu_busy_ns))
                                       : json(nullptr)},
      {"configs", configs},
      {"launch_latency", latency_json(k.latency)},
      {"drift", drift_json(k, threshold)}};
}

json lane_json(const model::Lane& l, bool stream) {
  json j = {{"device", l.device},
            {"kernels", l.kernels},
            {"first_start_ns", l.first_start},
            {"last_end_ns", l.last_end},
            {"busy_ns", l.busy_ns},
            {"idle_ns", l.idle_ns},
            {"gaps", l.gaps},
            {"max_gap_ns", l.max_gap_ns},
            {"max_gap_start_ns", l.max_gap_start}};
  if (stream) j["stream"] = l.stream;
  return j;
}

std::string kernel_rows(const model::TimelineSummary& t, const TimelineStyle& s) {
  size_t n = s.top == 0 ? t.kernels.size() : std::min(s.top, t.kernels.size());
  std::string out =
      fmt::format("{}\n", bold(s.color, fmt::format("Kernels by GPU time ({} of {})", n, t.kernels.size())));
  out += fmt::format("  {:>6} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11}  {}\n", "GPU%", "span%", "launches", "total",
                     "mean", "min", "max", "name");
  for (size_t i = 0; i < n; ++i) {
    const auto& k = t.kernels[i];
    out += fmt::format("  {:>6} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11}  {}\n", pct(t.gpu_share(k)),
                       pct(t.span_share(k)), k.time.count, human_duration(static_cast<double>(k.time.total_ns)),
                       human_duration(k.time.mean_ns()), human_duration(static_cast<double>(k.time.min_ns)),
                       human_duration(static_cast<double>(k.time.max_ns)),
                       s.name_width ? clip_cell(k.name_in(s.names), s.name_width) : k.name_in(s.names));
    if (k.configs.size() > 1)
      for (const auto& c : k.configs)
        out += fmt::format("  {:>6} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11}    {}\n", "", "", c.time.count,
                           human_duration(static_cast<double>(c.time.total_ns)), human_duration(c.time.mean_ns()),
                           human_duration(static_cast<double>(c.time.min_ns)),
                           human_duration(static_cast<double>(c.time.max_ns)), geometry(c));
  }
  return out;
}

std::string latency_text(const model::TimelineSummary& t) {
  if (t.latency.count == 0) {
    if (t.launches == 0) return "";
    return t.meta.has_api_trace()
               ? "Launch latency: no kernel joins a runtime API call (the CUDA API trace holds no launch call of "
                 "them)\n"
               : "Launch latency: no kernel joins a runtime API call (no CUDA API trace in the export)\n";
  }
  std::string out = fmt::format(
      "Launch latency (runtime API call, or the end of earlier work on its stream, to kernel start; {} launches): "
      "mean {}, min {}, max {}\n",
      t.latency.count, human_duration(t.latency.mean_ns()), human_duration(static_cast<double>(t.latency.min_ns)),
      human_duration(static_cast<double>(t.latency.max_ns)));
  if (t.queue.count > 0)
    out += fmt::format(
        "Queue delay (launched while earlier work still ran on its stream: call to that work's end; {} of the "
        "launches): mean {}, max {}\n",
        t.queue.count, human_duration(t.queue.mean_ns()), human_duration(static_cast<double>(t.queue.max_ns)));
  return out;
}

std::string drift_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  std::string out;
  for (const auto& k : t.kernels) {
    if (!analysis::drifting(k, s.drift_threshold)) continue;
    auto [early, late] = k.drift.early_late_means();
    out +=
        fmt::format("  {}: {} launches, first quarter mean {}, last quarter mean {} (+{:.0f}%)\n", k.name_in(s.names),
                    k.time.count, human_duration(early), human_duration(late), 100 * *analysis::drift_growth(k));
  }
  std::string head =
      fmt::format("Drift (launches that grow {:.0f}% or more slower over the run, kernels with {}+ launches)",
                  100 * s.drift_threshold, analysis::kMinDriftLaunches);
  return bold(s.color, head) + "\n" + (out.empty() ? "  none\n" : out);
}

std::string lane_line(const model::Lane& l, int64_t origin, bool stream) {
  std::string who =
      stream ? fmt::format("device {} stream {}", l.device, l.stream) : fmt::format("device {}", l.device);
  std::string largest = l.gaps ? fmt::format(", largest {} at +{}", human_duration(static_cast<double>(l.max_gap_ns)),
                                             human_duration(static_cast<double>(l.max_gap_start - origin)))
                               : "";
  double active = static_cast<double>(l.last_end - l.first_start);
  return fmt::format("  {}: {} kernels, busy {}, idle {} ({:.1f}% of its active time) in {} gaps{}\n", who, l.kernels,
                     human_duration(static_cast<double>(l.busy_ns)), human_duration(static_cast<double>(l.idle_ns)),
                     active > 0 ? 100 * static_cast<double>(l.idle_ns) / active : 0.0, l.gaps, largest);
}

std::string idle_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  if (t.devices.empty()) return "";
  std::string out = bold(s.color, "GPU idle between kernels (first to last kernel of each device and stream)") + "\n";
  for (const auto& d : t.devices) out += lane_line(d, t.span_start, false);
  if (t.streams.size() > 1 || t.devices.size() > 1)
    for (const auto& l : t.streams) out += lane_line(l, t.span_start, true);
  return out;
}

std::string memory_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  if (t.memory.empty()) return "";
  std::string out = bold(s.color, "Memory operations") + "\n";
  for (const auto& m : t.memory)
    out += fmt::format("  {}: {} operations, {} ({} mean), {}\n", m.direction, m.time.count,
                       human_duration(static_cast<double>(m.time.total_ns)), human_duration(m.time.mean_ns()),
                       human_bytes(m.bytes));
  return out;
}

std::string nvtx_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  if (t.nvtx.empty()) return "";
  size_t n = std::min<size_t>(t.nvtx.size(), s.top == 0 ? t.nvtx.size() : s.top);
  std::string out = bold(s.color, fmt::format("NVTX ranges ({} of {})", n, t.nvtx.size())) + "\n";
  for (size_t i = 0; i < n; ++i) {
    const auto& r = t.nvtx[i];
    out += fmt::format("  {}: {} ranges, total {}, mean {}, min {}, max {}\n", r.name, r.time.count,
                       human_duration(static_cast<double>(r.time.total_ns)), human_duration(r.time.mean_ns()),
                       human_duration(static_cast<double>(r.time.min_ns)),
                       human_duration(static_cast<double>(r.time.max_ns)));
  }
  return out;
}

double gpu_ranges_ns(const model::TimelineMeta& m) {
  double total = 0;
  for (const auto& r : m.gpu_ranges) total += static_cast<double>(r.end - r.start);
  return total;
}

// A table the export lacks: what it would hold, and whether nsys traced it
// (the program then did none of it) or not (and which option records it).
struct NotRecorded {
  std::string table, what, why;
  std::optional<bool> traced;
  std::string record_with;
};

std::vector<NotRecorded> not_recorded(const model::TimelineMeta& m) {
  struct Kind {
    const char *table, *what, *capture, *option;
  };
  static constexpr Kind kKinds[] = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", "GPU kernels", "Cuda", "cuda"},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", "memory copies", "Cuda", "cuda"},
      {"CUPTI_ACTIVITY_KIND_MEMSET", "memsets", "Cuda", "cuda"},
      {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA API calls", "Cuda", "cuda"},
      {"NVTX_EVENTS", "NVTX ranges", "NvtxEvents", "nvtx"},
      {"OSRT_API", "OS runtime calls", "OSRuntime", "osrt"},
  };
  std::vector<NotRecorded> out;
  bool kineto = m.source == model::TimelineSource::Kineto;
  for (const auto& table : m.absent_tables)
    for (const auto& k : kKinds) {
      if (table != k.table) continue;
      NotRecorded n{.table = table, .what = k.what, .record_with = fmt::format("nsys profile --trace={}", k.option)};
      if (kineto) {  // a trace says nothing of what was asked: only what it holds
        bool nvtx = table == "NVTX_EVENTS";
        n.what = nvtx ? "user annotations and ProfilerStep ranges" : k.what;
        n.record_with = nvtx ? "torch.profiler.record_function(name) around phases, or prof.step() in the loop"
                             : "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])";
        // Kernels, copies, memsets and runtime calls are all recorded by
        // ProfilerActivity.CUDA: with any of them in the trace, a kind that
        // is absent is one the program did not do, not one left unrecorded.
        bool cuda_recorded = !nvtx && std::ranges::count_if(m.absent_tables, [](const std::string& t) {
                                        return t.starts_with("CUPTI_ACTIVITY_KIND_");
                                      }) < 4;
        n.why = cuda_recorded ? "none in the trace: CUDA activity was recorded, and the program made none"
                              : "none in the trace; `" + n.record_with + "` records them";
        out.push_back(std::move(n));
        continue;
      }
      if (!m.traced.empty()) n.traced = std::ranges::find(m.traced, k.capture) != m.traced.end();
      // The API trace shows calls whose GPU side the export lacks: "the
      // program made none" would contradict the lines below.
      bool untraced = (table == "CUPTI_ACTIVITY_KIND_KERNEL" && m.untraced.launch_calls > 0) ||
                      (table == "CUPTI_ACTIVITY_KIND_MEMCPY" && m.untraced.memcpy_calls > 0) ||
                      (table == "CUPTI_ACTIVITY_KIND_MEMSET" && m.untraced.memset_calls > 0);
      if (untraced)
        n.why = "calls traced, their GPU activity not: see below";
      else if (!n.traced)
        n.why = "the export does not say whether nsys traced them; `" + n.record_with + "` records them";
      else if (*n.traced)
        n.why = table == "NVTX_EVENTS" ? "traced: the program marks no range; NVTX ranges around its phases show them"
                                       : "traced: the program made none";
      else
        n.why = "not traced: `" + n.record_with + "` records them";
      out.push_back(std::move(n));
    }
  return out;
}

json not_recorded_json(const model::TimelineMeta& m) {
  json out = json::array();
  for (const auto& n : not_recorded(m))
    out.push_back({{"table", n.table},
                   {"what", n.what},
                   {"traced", n.traced ? json(*n.traced) : json(nullptr)},
                   {"record_with", n.record_with},
                   {"why", n.why}});
  return out;
}

// What the export says about itself: "exported by nsys V" and its schema.
std::pair<std::string, std::string> export_origin(const model::TimelineMeta& m);

// "exported by nsys V, export schema S" or "PyTorch profiler (Kineto) trace, schemaVersion 1".
std::string origin_line(const model::TimelineMeta& m) {
  auto [version, schema] = export_origin(m);
  return m.source == model::TimelineSource::Kineto ? version + ", " + schema : version + ", export schema " + schema;
}

std::pair<std::string, std::string> export_origin(const model::TimelineMeta& m) {
  if (m.source == model::TimelineSource::Kineto)
    return {"PyTorch profiler (Kineto) trace",
            "schemaVersion " + (m.schema_version.empty() ? std::string("not stated") : m.schema_version)};
  // EXPORT_PRODUCT_VERSION is the nsys that wrote the export, not the one
  // that recorded the run.
  std::string version = m.tool_version.empty() ? "nsys version not recorded" : "exported by nsys " + m.tool_version;
  std::string schema = m.schema.empty() ? "no export metadata" : m.schema + " " + m.schema_version;
  return {version, schema};
}

// The run in a few sentences (GPUs, span, busy time, what the export lacks):
// the text header's lines, the HTML page's list.
// The profiler steps' GPU side: one step's length and busy time, or, for
// several, their spread and the GPU's busy share over them.
std::string steps_line(const std::vector<model::TimelineMeta::Step>& steps) {
  if (steps.empty()) return "";
  auto length = [](const model::TimelineMeta::Step& st) { return static_cast<double>(st.end - st.start); };
  if (steps.size() == 1) {
    const auto& st = steps.front();
    return fmt::format("Step {} on the GPU: {}, busy {} ({}), idle {}", st.name, human_duration(length(st)),
                       human_duration(static_cast<double>(st.busy_ns)),
                       pct(length(st) > 0 ? static_cast<double>(st.busy_ns) / length(st) : 0),
                       human_duration(std::max(0.0, length(st) - static_cast<double>(st.busy_ns))));
  }
  auto [lo, hi] = std::ranges::minmax_element(steps, {}, length);
  double total = 0, busy = 0;
  for (const auto& st : steps) total += length(st), busy += static_cast<double>(st.busy_ns);
  return fmt::format("Steps on the GPU: {} ({} to {}, mean {}), busy {} of their time", steps.size(),
                     human_duration(length(*lo)) + " " + lo->name, human_duration(length(*hi)) + " " + hi->name,
                     human_duration(total / static_cast<double>(steps.size())), pct(total > 0 ? busy / total : 0));
}

std::vector<std::string> run_facts(const model::TimelineSummary& t) {
  const auto& m = t.meta;
  std::vector<std::string> out;
  // The GPUs that ran something (every one when none did), and how many
  // others the machine had.
  auto ran = [&](const model::TimelineMeta::Gpu& g) {
    return std::ranges::any_of(t.device_use,
                               [&](const model::DeviceUse& d) { return d.device == g.id && d.busy_ns > 0; });
  };
  bool known = std::ranges::any_of(m.gpus, ran);  // device ids the export's GPU table names
  for (const auto& g : m.gpus)
    if (!known || ran(g)) out.push_back(fmt::format("GPU {}: {}", g.id, g.name));
  if (auto idle = known ? std::ranges::count_if(m.gpus, [&](const auto& g) { return !ran(g); }) : 0; idle > 0)
    out.push_back(fmt::format("({} more GPU(s) in the machine ran nothing of this run)", idle));
  if (const auto& d = m.distributed; d.rank >= 0) {
    std::string how = d.backend;
    if (!d.nccl_version.empty()) how += (how.empty() ? "" : ", ") + ("NCCL " + d.nccl_version);
    out.push_back(fmt::format("Rank {}{}{}", d.rank, d.world_size > 0 ? fmt::format(" of {}", d.world_size) : "",
                              how.empty() ? "" : " (" + how + ")"));
  }
  if (t.span_ns() > 0)
    out.push_back(fmt::format("Span {} (first to last GPU activity); kernels {} in {} launches ({} of the span)",
                              human_duration(static_cast<double>(t.span_ns())),
                              human_duration(static_cast<double>(t.kernel_ns)), t.launches,
                              pct(static_cast<double>(t.kernel_ns) / static_cast<double>(t.span_ns()))));
  if (double ranges = gpu_ranges_ns(m); t.gpu_busy_ns > 0 && ranges > 0)
    out.push_back(fmt::format(
        "GPU busy {} (a kernel, copy or memset running: {} of each process's first to last GPU operation)",
        human_duration(static_cast<double>(t.gpu_busy_ns)), pct(static_cast<double>(t.gpu_busy_ns) / ranges)));
  if (auto steps = steps_line(m.steps); !steps.empty()) out.push_back(steps);
  std::vector<std::string> absent;
  for (const auto& n : not_recorded(m)) absent.push_back(fmt::format("{} ({})", n.what, n.why));
  if (!absent.empty())
    out.push_back(fmt::format("Not in the {}: {}", m.source == model::TimelineSource::Kineto ? "trace" : "export",
                              fmt::join(absent, "; ")));
  return out;
}

std::string header_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  std::string out = bold(s.color, "Timeline " + t.meta.path) + fmt::format(" ({})\n", origin_line(t.meta));
  for (const auto& line : run_facts(t)) out += line + "\n";
  return out;
}

// The smallest round step (1, 2 or 5 times a power of ten) of at least a
// fifth of the span: three to five ticks.
double axis_step(double span) {
  double rough = span / 5, power = std::pow(10.0, std::floor(std::log10(rough)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= rough) return m * power;
  return 10 * power;
}

// The time axis under the lanes: a tick and its time from the run's first GPU
// activity at each round step, the span's length at its end.
std::string time_axis(double span, int left, int width, int y) {
  std::string out =
      fmt::format("<line x1='{}' y1='{}' x2='{}' y2='{}' stroke='#99a'/>", left, y - 12, left + width, y - 12);
  if (span <= 0) return out;
  double step = axis_step(span);
  for (int i = 0; i * step <= span * 0.92; ++i) {  // the last tick leaves room for the span's own label
    double x = left + i * step / span * width;
    out += fmt::format("<line x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' stroke='#99a'/>", x, y - 14, x, y - 9);
    out += fmt::format("<text x='{:.1f}' y='{}' text-anchor='{}'>{}</text>", x, y, i == 0 ? "start" : "middle",
                       i == 0 ? "0" : html::esc(human_duration(i * step)));
  }
  out += fmt::format("<text x='{}' y='{}' text-anchor='end'>{} (from the first GPU activity)</text>", left + width,
                     y + 14, html::esc(human_duration(span)));
  return out;
}

// One lane per device (kernels, then copies and memsets) and per stream,
// each of the span's slices shaded by how busy it was, so a million kernels
// draw as 120 cells a lane. Over them: the gaps and low-use stretches the
// run checks found, and the hot kernel named under the axis.
std::string lanes_svg(const model::TimelineSummary& t) {
  if (t.bins == 0 || (t.devices.empty() && t.copy_lanes.empty()))
    return "<p class='empty'>no GPU activity in the timeline</p>";
  constexpr int kLabel = 150, kRow = 20, kWidth = 720;
  struct Row {
    std::string label;
    const model::Lane* lane;
    const char* color;
    bool device_kernels;
  };
  std::vector<Row> rows;
  for (const auto& d : t.devices) {
    rows.push_back({fmt::format("device {} kernels", d.device), &d, "#2563eb", true});
    for (const auto& c : t.copy_lanes)
      if (c.device == d.device) rows.push_back({fmt::format("device {} copies", c.device), &c, "#16a34a", false});
  }
  for (const auto& c : t.copy_lanes)
    if (std::ranges::none_of(t.devices, [&](const model::Lane& d) { return d.device == c.device; }))
      rows.push_back({fmt::format("device {} copies", c.device), &c, "#16a34a", false});
  for (const auto& l : t.streams)
    rows.push_back({fmt::format("dev {} stream {}", l.device, l.stream), &l, "#2563eb", false});
  double span = static_cast<double>(t.span_ns());
  double slice = span / static_cast<double>(t.bins);
  double cell = static_cast<double>(kWidth) / static_cast<double>(t.bins);
  auto x_of = [&](int64_t at) {
    return kLabel + std::clamp(static_cast<double>(at - t.span_start) / span, 0.0, 1.0) * kWidth;
  };
  // The hot kernel gets a row of its own: a bar from its first launch to
  // the end of its last, so where it runs in the run shows at a glance.
  const model::KernelSummary* hot = t.kernels.empty() || span <= 0 ? nullptr : &t.kernels.front();
  size_t drawn = rows.size() + (hot ? 1 : 0);
  std::string out =
      fmt::format("<svg class='timeline' width='{}' height='{}' role='img'>", kLabel + kWidth + 10, drawn * kRow + 40);
  for (size_t r = 0; r < rows.size(); ++r) {
    int y = static_cast<int>(r) * kRow + 2;
    out += fmt::format("<text x='{}' y='{}' text-anchor='end'>{}</text>", kLabel - 6, y + 13, html::esc(rows[r].label));
    out += fmt::format("<rect x='{}' y='{}' width='{}' height='16' fill='#e4e6eb'/>", kLabel, y, kWidth);
    for (size_t b = 0; b < t.bins; ++b) {
      double busy = slice > 0 ? std::clamp(static_cast<double>(rows[r].lane->bins[b]) / slice, 0.0, 1.0) : 0;
      if (busy <= 0) continue;
      out += fmt::format("<rect x='{:.1f}' y='{}' width='{:.2f}' height='16' fill='{}' fill-opacity='{:.2f}'/>",
                         kLabel + static_cast<double>(b) * cell, y, cell, rows[r].color, 0.15 + 0.85 * busy);
    }
    if (!rows[r].device_kernels || span <= 0) continue;
    for (const auto& low : t.checks.low_use.longest)
      if (low.device == rows[r].lane->device)
        out += fmt::format(
            "<rect class='low-use' x='{:.1f}' y='{}' width='{:.1f}' height='16' fill='none' stroke='#d97706' "
            "stroke-width='2'><title>in use {:.1f}%</title></rect>",
            x_of(low.start), y, std::max(1.0, x_of(low.end) - x_of(low.start)), low.in_use_pct.value_or(0));
    for (const auto& gap : t.checks.gaps.longest)
      if (gap.device == rows[r].lane->device)
        out += fmt::format(
            "<rect class='gap' x='{:.1f}' y='{}' width='{:.1f}' height='16' fill='#dc2626' fill-opacity='0.35'>"
            "<title>idle {}</title></rect>",
            x_of(gap.start), y, std::max(1.0, x_of(gap.end) - x_of(gap.start)),
            html::esc(human_duration(static_cast<double>(gap.duration()))));
  }
  if (hot) {
    int y = static_cast<int>(rows.size()) * kRow + 2;
    out += fmt::format("<text x='{}' y='{}' text-anchor='end'>hot kernel</text>", kLabel - 6, y + 13);
    out += fmt::format(
        "<rect class='hot' x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='#7c3aed'><title>{}</title></rect>",
        x_of(hot->first_start), y + 3, std::max(1.0, x_of(hot->last_end) - x_of(hot->first_start)),
        html::esc(fmt::format("{}: {} launch(es), {} of GPU kernel time, from its first launch to the end of its last",
                              abbreviated(*hot), hot->time.count, pct(t.gpu_share(*hot)))));
  }
  int axis = static_cast<int>(drawn) * kRow + 16;
  out += time_axis(span, kLabel, kWidth, axis);
  return out + "</svg>";
}

// What the chart's colours mean, and the kernel worth profiling.
std::string chart_legend(const model::TimelineSummary& t) {
  std::string legend =
      "Blue: kernels; green: copies and memsets (darker: busier). Red: GPU gaps longer than the gap limit; orange "
      "outline: stretches in use under the utilisation limit; purple: the hot kernel, first to last launch.";
  if (!t.kernels.empty())
    legend += fmt::format(" Hot kernel: {} ({} of GPU kernel time).", abbreviated(t.kernels.front()),
                          pct(t.gpu_share(t.kernels.front())));
  return "<p class='legend'>" + html::esc(legend) + "</p>";
}

std::string kernel_table_html(const model::TimelineSummary& t, const TimelineStyle& s) {
  size_t n = s.top == 0 ? t.kernels.size() : std::min(s.top, t.kernels.size());
  std::vector<html::Bar> bars;
  for (size_t i = 0; i < n; ++i)
    bars.push_back({t.kernels[i].short_name.empty() ? t.kernels[i].name : t.kernels[i].short_name,
                    t.gpu_share(t.kernels[i]), pct(t.gpu_share(t.kernels[i]))});
  std::string out = "<h3>Kernels by share of GPU time</h3>" + html::bar_chart(bars, 1.0, "kernel-shares");
  out +=
      "<table><tr><th>GPU %</th><th>span %</th><th>launches</th><th>total</th><th>mean</th><th>min</th><th>max</th>"
      "<th>drift</th><th>name</th></tr>";
  for (size_t i = 0; i < n; ++i) {
    const auto& k = t.kernels[i];
    auto g = analysis::drift_growth(k);
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td><code>{}</code></td></tr>",
        pct(t.gpu_share(k)), pct(t.span_share(k)), k.time.count, human_duration(static_cast<double>(k.time.total_ns)),
        human_duration(k.time.mean_ns()), human_duration(static_cast<double>(k.time.min_ns)),
        human_duration(static_cast<double>(k.time.max_ns)), g ? html::esc(fmt::format("{:+.0f}%", 100 * *g)) : "",
        html::esc(k.name_in(s.names)));
  }
  return out + "</table>";
}

std::string_view memory_name(model::HostMemory m) {
  switch (m) {
    case model::HostMemory::Pageable:
      return "pageable";
    case model::HostMemory::Pinned:
      return "pinned";
    case model::HostMemory::Device:
      return "device";
    case model::HostMemory::Array:
      return "array";
    case model::HostMemory::Managed:
      return "managed";
    default:
      return "";
  }
}

json memory_json(model::HostMemory m) {
  auto name = memory_name(m);
  return name.empty() ? json(nullptr) : json(name);
}

// An operation a check lists, times relative to the span's start.
std::string op_line(const model::TimedOp& op, int64_t origin) {
  std::string out = fmt::format("{:>10} at {:>10}", human_duration(static_cast<double>(op.duration())),
                                human_duration(static_cast<double>(op.start - origin)));
  if (!op.name.empty()) out += "  " + op.name;
  if (!op.direction.empty()) out += "  " + op.direction;
  if (!memory_name(op.src).empty() || !memory_name(op.dst).empty())
    out += fmt::format("  {} -> {}", memory_name(op.src).empty() ? "?" : memory_name(op.src),
                       memory_name(op.dst).empty() ? "?" : memory_name(op.dst));
  if (op.bytes > 0) out += "  " + human_bytes(op.bytes);
  if (op.in_use_pct) out += fmt::format("  in use {:.1f}%", *op.in_use_pct);
  if (op.issued_after_ns)
    out += "  next work issued " + human_duration(static_cast<double>(*op.issued_after_ns)) + " in";
  if (op.host_sync_ns > 0) out += "  host in sync calls " + human_duration(static_cast<double>(op.host_sync_ns));
  if (!op.nvtx.empty()) out += "  inside NVTX " + op.nvtx;
  if (!op.phase.empty()) out += " (one-time " + op.phase + ")";
  if (op.name.empty() && op.direction.empty())
    out += fmt::format("  (process {}, device {})", op.pid, op.device);
  else if (op.name.find("Synchronize") == std::string::npos)
    out += fmt::format("  (device {}, stream {})", op.device, op.stream);
  return out + "\n";
}

json op_json(const model::TimedOp& op) {
  json j = {{"start_ns", op.start}, {"end_ns", op.end}, {"duration_ns", op.duration()}, {"pid", op.pid}};
  if (!op.name.empty()) j["api"] = op.name;
  if (op.name.find("Synchronize") == std::string::npos) j["device"] = op.device;
  if (!op.name.empty() && op.name.find("Synchronize") == std::string::npos) {
    j["stream"] = op.stream;
    j["bytes"] = op.bytes;
    j["direction"] = op.direction.empty() ? json(nullptr) : json(op.direction);
    j["src_memory"] = memory_json(op.src);
    j["dst_memory"] = memory_json(op.dst);
  }
  if (op.in_use_pct) j["in_use_pct"] = *op.in_use_pct;
  if (op.issued_after_ns) j["issued_after_ns"] = *op.issued_after_ns;
  if (op.host_sync_ns > 0) j["host_sync_ns"] = op.host_sync_ns;
  if (!op.nvtx.empty()) j["nvtx"] = op.nvtx;
  if (!op.phase.empty()) j["phase"] = op.phase;
  if (op.phase_ns > 0) j["phase_ns"] = op.phase_ns;
  return j;
}

json ops_json(const model::OpList* ops) {
  if (!ops) return nullptr;
  json list = json::array();
  for (const auto& op : ops->longest) list.push_back(op_json(op));
  return {{"count", ops->count}, {"total_ns", ops->total_ns}, {"bytes", ops->bytes}, {"operations", list}};
}

constexpr size_t kOpsShown = 5;

std::string ops_text(const model::OpList* ops, int64_t origin) {
  if (!ops || ops->longest.empty()) return "";
  std::string out;
  for (size_t i = 0; i < std::min(kOpsShown, ops->longest.size()); ++i)
    out += "     " + op_line(ops->longest[i], origin);
  if (ops->count > kOpsShown) out += fmt::format("     ... {} more\n", ops->count - kOpsShown);
  return out;
}

// "Costs the run up to X (Y of its span)."; "" for a verdict without a cost.
std::string cost_sentence(const analysis::RunVerdict& v, const model::TimelineSummary& t) {
  if (!v.cost_ns || t.span_ns() <= 0) return "";
  return fmt::format("Costs the run up to {} ({} of its span).", human_duration(*v.cost_ns),
                     pct(*v.cost_ns / static_cast<double>(t.span_ns())));
}

std::string verdicts_text(const analysis::RunDiagnosis& d, const TimelineStyle& s) {
  const auto& t = *d.timeline;
  std::string out = bold(s.color, "Verdicts for the run") + "\n";
  if (d.verdicts.empty())
    out += "  No problem found by KEET's run checks (they include nsys analyze's six CUDA rules).\n";
  for (size_t i = 0; i < d.verdicts.size(); ++i) {
    const auto& v = d.verdicts[i];
    out += fmt::format("{}. {}{}\n", i + 1, v.title, v.nsys_rule.empty() ? "" : "  [nsys: " + v.nsys_rule + "]");
    if (!v.subject.empty()) out += "   " + v.subject_label + ": " + v.subject + "\n";
    if (!v.explanation.empty()) out += "   " + v.explanation + "\n";
    for (const auto& n : v.notes) out += "   " + n + "\n";
    if (auto cost = cost_sentence(v, t); !cost.empty()) out += "   " + cost + "\n";
    for (const auto& a : v.advice) out += "   - " + a + "\n";
    for (const auto& c : v.commands) out += "     $ " + c + "\n";
    out += ops_text(v.ops, t.span_start);
  }
  std::string quiet;
  for (const auto& c : d.checks)
    if (!c.quiet.empty()) quiet += "  " + c.quiet + (c.nsys_rule.empty() ? "" : " [nsys: " + c.nsys_rule + "]") + "\n";
  if (!quiet.empty()) out += "Checked, below the level worth acting on:\n" + quiet;
  return out;
}

json verdicts_json(const analysis::RunDiagnosis& d) {
  json out = json::array();
  for (const auto& v : d.verdicts)
    out.push_back({{"id", v.id},
                   {"title", v.title},
                   {"explanation", v.explanation},
                   {"cost_ns", v.cost_ns ? json(*v.cost_ns) : json(nullptr)},
                   {"subject", v.subject.empty() ? json(nullptr) : json(v.subject)},
                   {"subject_kind", to_lower(v.subject_label)},
                   {"notes", v.notes},
                   {"nsys_rule", v.nsys_rule.empty() ? json(nullptr) : json(v.nsys_rule)},
                   {"advice", v.advice},
                   {"commands", v.commands},
                   {"references", v.references},
                   {"evidence", v.evidence}});
  return out;
}

json checks_json(const analysis::RunDiagnosis& d) {
  json out = json::array();
  for (const auto& c : d.checks) {
    json j = ops_json(c.ops);
    if (j.is_null()) j = json::object();
    j["list"] = c.list;
    j["nsys_rule"] = c.nsys_rule.empty() ? json(nullptr) : json(c.nsys_rule);
    j["what"] = c.what;
    j["verdict"] = c.verdict.empty() ? json(nullptr) : json(c.verdict);
    j["quiet"] = c.quiet.empty() ? json(nullptr) : json(c.quiet);
    out.push_back(j);
  }
  return out;
}

std::string verdicts_html(const analysis::RunDiagnosis& d) {
  const auto& t = *d.timeline;
  std::string out = "<h3>Verdicts for the run</h3>";
  if (d.verdicts.empty())
    return out + "<p>No problem found by KEET's run checks (they include nsys analyze's six CUDA rules).</p>";
  out += "<ol class='verdicts'>";
  for (const auto& v : d.verdicts) {
    out += "<li><strong>" + html::esc(v.title) + "</strong>";
    if (!v.nsys_rule.empty()) out += " <small>nsys: " + html::esc(v.nsys_rule) + "</small>";
    if (!v.subject.empty()) out += "<br>" + html::esc(v.subject_label) + ": <code>" + html::esc(v.subject) + "</code>";
    if (!v.explanation.empty()) out += "<p>" + html::esc(v.explanation) + "</p>";
    for (const auto& n : v.notes) out += "<p>" + html::esc(n) + "</p>";
    if (auto cost = cost_sentence(v, t); !cost.empty()) out += "<p>" + html::esc(cost) + "</p>";
    out += "<ul>";
    for (const auto& a : v.advice) out += "<li>" + html::esc(a) + "</li>";
    out += "</ul>";
    for (const auto& c : v.commands) out += "<pre>$ " + html::esc(c) + "</pre>";
    if (auto ops = ops_text(v.ops, t.span_start); !ops.empty()) out += "<pre>" + html::esc(ops) + "</pre>";
    out += "</li>";
  }
  return out + "</ol>";
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
  auto b = static_cast<double>(bytes);
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.2f} kB", b / 1e3);
  return fmt::format("{} B", bytes);
}

// Work the CUDA API trace shows, whose GPU side the export does not hold:
// "no kernel ran" would be false.
std::string untraced_text(const model::TimelineMeta& m) {
  const auto& u = m.untraced;
  std::string out;
  if (u.launch_calls > 0)
    out += fmt::format(
        "Kernels ran but were not traced: the CUDA API trace holds {} kernel launch call(s), and the export has no "
        "GPU kernel activity (record it with `nsys profile --trace=cuda`; the report's diagnostics say what kept nsys "
        "from tracing the GPU).\n",
        u.launch_calls);
  if (u.memcpy_calls > 0)
    out += fmt::format(
        "Copies ran but were not traced: the CUDA API trace holds {} memcpy call(s), and the export has no memory "
        "copy activity.\n",
        u.memcpy_calls);
  if (u.memset_calls > 0)
    out += fmt::format(
        "Memsets ran but were not traced: the CUDA API trace holds {} memset call(s), and the export has no memset "
        "activity.\n",
        u.memset_calls);
  return out;
}

std::string timeline_text(const model::TimelineSummary& t, const TimelineStyle& s) {
  std::string out = header_text(t, s) + "\n" + untraced_text(t.meta);
  out += verdicts_text(analysis::diagnose_run(t, {.drift_threshold = s.drift_threshold, .names = s.names}), s) + "\n";
  if (t.kernels.empty() && t.meta.untraced.launch_calls == 0)
    out += "No kernel ran in this timeline.\n";
  else if (!t.kernels.empty())
    out += kernel_rows(t, s) + "\n" + latency_text(t) + "\n" + drift_text(t, s) + "\n" + idle_text(t, s);
  for (const auto& part : {devices_text(t, s), memory_text(t, s), api_text(t, s), nvtx_text(t, s)})
    if (!part.empty()) out += "\n" + part;
  return out;
}

nlohmann::json timeline_json(const model::TimelineSummary& t, const TimelineStyle& s) {
  json gpus = json::array(), kernels = json::array(), streams = json::array(), devices = json::array(),
       memory = json::array(), nvtx = json::array();
  for (const auto& g : t.meta.gpus) gpus.push_back({{"id", g.id}, {"name", g.name}});
  for (const auto& k : t.kernels) kernels.push_back(kernel_json(t, k, s.drift_threshold));
  for (const auto& l : t.streams) streams.push_back(lane_json(l, true));
  for (const auto& d : t.devices) devices.push_back(lane_json(d, false));
  for (const auto& m : t.memory) {
    json mj = stats_json(m.time);
    mj["direction"] = m.direction;
    mj["bytes"] = m.bytes;
    memory.push_back(mj);
  }
  for (const auto& r : t.nvtx) {
    json rj = stats_json(r.time);
    rj["name"] = r.name;
    nvtx.push_back(rj);
  }
  json api = json::array(), device_use = json::array(), phases = json::array();
  for (const auto& a : t.api) {
    json aj = stats_json(a.time);
    aj["name"] = a.name;
    api.push_back(aj);
  }
  for (const auto& d : t.device_use)
    device_use.push_back({{"device", d.device},
                          {"range_ns", d.range_ns},
                          {"busy_ns", d.busy_ns},
                          {"kernel_ns", d.kernel_ns},
                          {"nccl_ns", d.nccl_ns},
                          {"nccl_overlap_ns", d.nccl_overlap_ns},
                          {"nccl_launches", d.nccl_launches}});
  for (const auto& p : t.phases)
    phases.push_back({{"name", p.name}, {"what", p.what}, {"start_ns", p.start}, {"end_ns", p.end}});
  auto opt = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
  auto diagnosis = analysis::diagnose_run(t, {.drift_threshold = s.drift_threshold, .names = s.names});
  const auto& dist = t.meta.distributed;
  return {{"schema", "keet.timeline/1"},
          {"timeline", t.meta.path},
          {"source", t.meta.source == model::TimelineSource::Kineto ? "kineto" : "nsys-export"},
          {"distributed", dist.rank < 0 ? json(nullptr)
                                        : json{{"rank", dist.rank},
                                               {"world_size", dist.world_size},
                                               {"backend", dist.backend},
                                               {"nccl_version", opt(dist.nccl_version)}}},
          {"steps", steps_json(t.meta.steps)},
          {"nsys_version", opt(t.meta.tool_version)},
          {"export_schema", opt(t.meta.schema)},
          {"export_schema_version", opt(t.meta.schema_version)},
          {"gpus", gpus},
          {"absent_tables", t.meta.absent_tables},
          {"traced", t.meta.traced},
          {"not_recorded", not_recorded_json(t.meta)},
          {"untraced",
           {{"kernel_launch_calls", t.meta.untraced.launch_calls},
            {"memcpy_calls", t.meta.untraced.memcpy_calls},
            {"memset_calls", t.meta.untraced.memset_calls}}},
          {"span", {{"start_ns", t.span_start}, {"end_ns", t.span_end}, {"duration_ns", t.span_ns()}}},
          {"gpu_time_ns", t.kernel_ns},
          {"launches", t.launches},
          {"kernels", kernels},
          {"launch_latency", latency_json(t.latency)},
          {"queue_delay", latency_json(t.queue)},
          {"api_calls", api},
          {"device_use", device_use},
          {"phases", phases},
          {"drift_threshold", s.drift_threshold},
          {"devices", devices},
          {"streams", streams},
          {"memory", memory},
          {"nvtx", nvtx},
          {"gpu_busy_ns", t.gpu_busy_ns},
          {"verdicts", verdicts_json(diagnosis)},
          {"checks", checks_json(diagnosis)},
          {"command", t.meta.command},
          {"warnings", t.warnings}};
}

// Styled as the analysis page (a card, its facts a list, not preformatted
// text): the timeline stands beside the kernels' sections and in keet serve's page.
std::string timeline_html_section(const model::TimelineSummary& t, const TimelineStyle& s) {
  std::string out = "<section class='card timeline'><h2>Timeline <code>" + html::esc(t.meta.path) + "</code></h2>";
  out += "<p class='meta'>" + html::esc(origin_line(t.meta)) + "</p><ul class='facts'>";
  for (const auto& line : run_facts(t)) out += "<li>" + html::esc(line) + "</li>";
  out += "</ul>";
  out += verdicts_html(analysis::diagnose_run(t, {.drift_threshold = s.drift_threshold, .names = s.names}));
  out += "<h3>GPU activity over the run</h3>" + lanes_svg(t) + chart_legend(t);
  if (!t.kernels.empty()) out += kernel_table_html(t, s);
  TimelineStyle plain = s;  // as text, without colour, names whole
  plain.color = false;
  plain.name_width = 0;
  std::string rest = untraced_text(t.meta);
  if (!t.kernels.empty()) rest += latency_text(t) + "\n" + drift_text(t, plain) + "\n" + idle_text(t, plain);
  for (const auto& part : {devices_text(t, plain), memory_text(t, plain), api_text(t, plain), nvtx_text(t, plain)})
    if (!part.empty()) rest += "\n" + part;
  if (!rest.empty()) out += "<pre>" + html::esc(rest) + "</pre>";
  return out + "</section>";
}

std::string timeline_html(const model::TimelineSummary& t, const TimelineStyle& s) {
  auto [version, schema] = export_origin(t.meta);
  std::string header = "<header><h1>keet timeline</h1><p>" + html::esc(t.meta.path) + " &middot; " +
                       html::esc(version) + "</p></header><main>";
  return html::page("keet timeline: " + t.meta.path, header + timeline_html_section(t, s) + "</main>");
}

namespace {

// Which time a share is of: the GPU kernel time (every kernel's duration
// summed, nsys stats' 100%) and the run's span (first to last GPU activity,
// idle time included), each named with its length.
std::string coverage_sentence(std::string_view who, const analysis::TimelineJoin& j) {
  std::string out = fmt::format("{} carry {} of the GPU kernel time ({}, the sum of every kernel's duration)", who,
                                pct(j.coverage), human_duration(static_cast<double>(j.gpu_time_ns)));
  if (j.busy_ns > 0)
    out += fmt::format(", {} of the GPU-busy time ({}, some kernel, copy or memset running{})", pct(j.busy_coverage),
                       human_duration(static_cast<double>(j.busy_ns)),
                       j.busy_coverage > 1 ? "; over 100% because kernels ran at the same time" : "");
  if (j.span_ns > 0)
    out += fmt::format(" and {} of the run's span ({}, first to last GPU activity)", pct(j.span_coverage),
                       human_duration(static_cast<double>(j.span_ns)));
  return out + ".";
}

// The run's verdicts, one line each, for the joined view (keet timeline
// gives the operations and the advice).
std::string run_verdict_lines(const analysis::TimelineJoin& j, bool markdown) {
  const auto& d = j.run;
  std::string head = fmt::format("Verdicts for the run ({} gives their evidence and advice):",
                                 markdown ? md_code("keet timeline " + j.timeline) : "keet timeline " + j.timeline);
  if (d.verdicts.empty()) head = "Verdicts for the run: no problem found by KEET's run checks.";
  std::string out = markdown ? "\n" + (d.verdicts.empty() ? md_text(head) : head) + "\n\n" : "  " + head + "\n";
  for (size_t i = 0; i < d.verdicts.size(); ++i) {
    const auto& v = d.verdicts[i];
    std::string line = v.title;
    if (v.cost_ns && j.span_ns > 0)
      line += fmt::format(" (costs up to {}, {} of the span)", human_duration(*v.cost_ns),
                          pct(*v.cost_ns / static_cast<double>(j.span_ns)));
    out += markdown ? fmt::format("{}. {}\n", i + 1, md_text(line)) : fmt::format("    {}. {}\n", i + 1, line);
  }
  return out;
}

}  // namespace

std::string join_text(const analysis::TimelineJoin& j, const TextStyle& s) {
  std::string out;
  if (s.markdown)
    out += "## Application view (timeline " + md_code(j.timeline) + ")\n\n";
  else
    out += bold(s.color, "Application view (timeline " + j.timeline + ")") + "\n";
  std::string cover = coverage_sentence("The profiled kernels", j);
  out += (s.markdown ? md_text(cover) + "\n\n" : "  " + cover + "\n");
  for (const auto& k : j.kernels) {
    std::string where = "not in the timeline";
    if (k.in_timeline)
      where = fmt::format("{} of GPU kernel time ({}{} of the span), {} launches, {} in the timeline", pct(k.gpu_share),
                          j.busy_ns > 0 ? pct(k.busy_share) + " of GPU-busy time, " : "", pct(k.span_share), k.launches,
                          human_duration(static_cast<double>(k.total_ns)));
    out += s.markdown ? fmt::format("- #{} {}: {}\n", k.index, md_code(k.name), md_text(where))
                      : fmt::format("  [{}] {}: {}\n", k.index, k.name, where);
    for (const auto& g : k.gains) {
      std::string gain =
          fmt::format("{}: kernel x{:.2f} -> GPU kernel time x{:.3f}", g.title, g.kernel_speedup, g.app_speedup);
      out += s.markdown ? fmt::format("  - {} ({})\n", md_text(gain), md_code(g.finding))
                        : fmt::format("      {} ({})\n", gain, g.finding);
    }
  }
  if (j.low_coverage) {
    std::string w = "warning: " + analysis::coverage_warning(j);
    out += s.markdown ? "\n> " + md_text(w) + "\n" : "  " + w + "\n";
  }
  out += run_verdict_lines(j, s.markdown);
  return out + (s.markdown ? "\n" : "");
}

nlohmann::json join_json(const analysis::TimelineJoin& j) {
  json kernels = json::array(), hot = json::array();
  for (const auto& k : j.kernels) {
    json gains = json::array();
    for (const auto& g : k.gains)
      gains.push_back({{"finding", g.finding},
                       {"title", g.title},
                       {"kernel_speedup", g.kernel_speedup},
                       {"app_speedup", g.app_speedup}});
    kernels.push_back({{"index", k.index},
                       {"name", k.name},
                       {"in_timeline", k.in_timeline},
                       {"gpu_share", k.gpu_share},
                       {"span_share", k.span_share},
                       {"busy_share", k.busy_share},
                       {"launches", k.launches},
                       {"total_ns", k.total_ns},
                       {"gains", gains}});
  }
  for (const auto& h : j.not_profiled)
    hot.push_back({{"name", h.name},
                   {"short_name", h.short_name},
                   {"gpu_share", h.gpu_share},
                   {"launches", h.launches},
                   {"ncu_options", h.ncu_options}});
  std::string w = analysis::coverage_warning(j);
  return {{"path", j.timeline},
          {"coverage", j.coverage},
          {"span_coverage", j.span_coverage},
          {"busy_coverage", j.busy_coverage},
          {"gpu_time_ns", j.gpu_time_ns},
          {"span_ns", j.span_ns},
          {"gpu_busy_ns", j.busy_ns},
          {"verdicts", verdicts_json(j.run)},
          {"threshold", j.threshold},
          {"low_coverage", j.low_coverage},
          {"kernels", kernels},
          {"not_profiled", hot},
          {"warning", w.empty() ? json(nullptr) : json(w)}};
}

std::string join_html(const analysis::TimelineJoin& j) {
  std::string out = "<section class='app-view'><h2>Application view</h2><p>" +
                    html::esc(coverage_sentence("The profiled kernels", j)) + " Timeline: <code>" +
                    html::esc(j.timeline) + "</code>.</p>";
  if (j.low_coverage) out += "<p class='warn'>" + html::esc("Warning: " + analysis::coverage_warning(j)) + "</p>";
  out +=
      "<table><tr><th>#</th><th>kernel</th><th>GPU kernel time %</th><th>best finding</th><th>kernel gain</th><th>GPU "
      "kernel time gain</th></tr>";
  for (const auto& k : j.kernels) {
    const auto* g = k.gains.empty() ? nullptr : &k.gains.front();
    out += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       k.index, html::esc(k.name), k.in_timeline ? pct(k.gpu_share) : "not in the timeline",
                       g ? html::esc(g->title) : "", g ? fmt::format("x{:.2f}", g->kernel_speedup) : "",
                       g ? fmt::format("x{:.3f}", g->app_speedup) : "");
  }
  return out + "</table></section>";
}

std::string change_view_text(const analysis::ChangeView& v, bool markdown) {
  std::string head = "Application view (timeline " + v.join.timeline + ")";
  std::string out = markdown ? "\n## " + md_text(head) + "\n\n" : "\n" + head + "\n";
  std::string summary = coverage_sentence("The compared kernels", v.join) +
                        fmt::format(
                            " If each kernel's change holds for all its launches, the GPU kernel time changes "
                            "by {:+.1f}%.",
                            100 * v.app_change);
  out += markdown ? md_text(summary) + "\n\n" : "  " + summary + "\n";
  for (const auto& k : v.kernels) {
    std::string line = fmt::format("{:+.1f}% on a kernel with {} of GPU kernel time: {:+.2f}% of it", 100 * k.change,
                                   pct(k.gpu_share), 100 * k.app_change);
    out +=
        markdown ? fmt::format("- {}: {}\n", md_code(k.name), md_text(line)) : fmt::format("  {}: {}\n", k.name, line);
  }
  if (v.join.low_coverage) {
    std::string w = "warning: " + analysis::coverage_warning(v.join);
    out += markdown ? "\n> " + md_text(w) + "\n" : "  " + w + "\n";
  }
  return out;
}

}  // namespace keet::render
