// keet occupancy --cc 8.6 --threads 256 --regs 64 --smem 16384: the
// theoretical occupancy of a launch configuration, computed as Nsight Compute
// does (analysis/occupancy), without a report.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/occupancy.h"
#include "app/commands.h"
#include "app/common.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct OccupancyArgs {
  std::string cc;
  int threads = 0;
  int regs = 0;
  int smem = 0;
  int carveout = -1;  // shared memory per SM in bytes; -1 = the SM's maximum
  std::string format;
};

analysis::OccupancyInput input_of(const OccupancyArgs& a) {
  analysis::OccupancyInput in;
  in.block_size = a.threads;
  in.registers_per_thread = a.regs;
  in.shared_mem_per_block = a.smem;
  if (a.carveout >= 0) in.shared_mem_config = a.carveout;
  return in;
}

nlohmann::json result_json(const analysis::ArchSpec& arch, const OccupancyArgs& a, const analysis::Occupancy& o,
                           const std::vector<std::string>& notes) {
  return {{"compute_capability", arch.cc.text()},
          {"architecture", arch.architecture},
          {"input",
           {{"threads_per_block", a.threads},
            {"registers_per_thread", a.regs},
            {"shared_mem_per_block", a.smem},
            {"shared_mem_config", o.shared_mem_config}}},
          {"warps_per_block", o.warps_per_block},
          {"registers_per_warp", o.registers_per_warp},
          {"shared_mem_per_block_allocated", o.shared_mem_allocated},
          {"limits",
           {{"blocks", o.limit_blocks},
            {"warps", o.limit_warps},
            {"registers", o.limit_registers},
            {"shared_mem", o.limit_shared_mem}}},
          {"limiters", o.limiters},
          {"active_blocks_per_sm", o.active_blocks},
          {"active_warps_per_sm", o.active_warps},
          {"max_warps_per_sm", arch.max_warps_per_sm},
          {"occupancy_pct", o.occupancy_pct},
          {"notes", notes}};
}

std::string limit_row_mark(const analysis::Occupancy& o, const char* name) {
  return std::ranges::find(o.limiters, name) != o.limiters.end() ? "<- limiter" : "";
}

std::string occupancy_table(const analysis::ArchSpec& arch, const OccupancyArgs& a, const analysis::Occupancy& o,
                            const std::vector<std::string>& notes) {
  std::string out =
      fmt::format("compute capability {} ({}): {} threads/block, {} registers/thread, {} bytes shared/block\n",
                  arch.cc.text(), arch.architecture, a.threads, a.regs, a.smem);
  render::Table t({"limit", "blocks/SM", ""});
  t.right_align({1});
  t.add({"warps", std::to_string(o.limit_warps), limit_row_mark(o, "warps")});
  t.add({"registers", std::to_string(o.limit_registers), limit_row_mark(o, "registers")});
  t.add({"shared memory", std::to_string(o.limit_shared_mem), limit_row_mark(o, "shared_mem")});
  t.add({"SM block cap", std::to_string(o.limit_blocks), limit_row_mark(o, "blocks")});
  out += t.str(80);
  out += fmt::format("active: {} blocks, {} of {} warps per SM -> theoretical occupancy {:.2f} %\n", o.active_blocks,
                     o.active_warps, arch.max_warps_per_sm, o.occupancy_pct);
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

using OccupancyWriter = FormatWriter<analysis::ArchSpec, OccupancyArgs, analysis::Occupancy, std::vector<std::string>>;
constexpr OccupancyWriter kOccupancyFormats[] = {
    {"table", occupancy_table},
    {"json", [](const analysis::ArchSpec& arch, const OccupancyArgs& a, const analysis::Occupancy& o,
                const std::vector<std::string>& notes) { return json_text(result_json(arch, a, o, notes), 2) + "\n"; }},
};

ExitCode run_occupancy(Context& ctx, const OccupancyArgs& a) {
  auto found = analysis::lookup_arch(a.cc);
  if (!found.spec) return report_error(ctx, Error{ExitCode::BadInput, fmt::format("--cc {}: {}", a.cc, found.note)});
  analysis::ArchSpec arch = *found.spec;
  arch.cc = *analysis::parse_cc(a.cc);  // report the CC asked for, even when its limits are borrowed
  auto o = analysis::compute_occupancy(arch, input_of(a));
  std::vector<std::string> notes = o.notes;
  if (!found.note.empty()) notes.insert(notes.begin(), found.note);
  ctx.out << write_format(kOccupancyFormats, a.format, arch, a, o, notes);
  return ExitCode::Ok;
}

}  // namespace

Command occupancy_command() {
  return {"occupancy", "theoretical occupancy of a launch configuration", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<OccupancyArgs>();
            sub.add_option("--cc", a->cc, "compute capability, e.g. 8.6")->required();
            sub.add_option("--threads,-t", a->threads, "threads per block")->required()->check(CLI::Range(1, 1 << 20));
            sub.add_option("--regs,-r", a->regs, "registers per thread")->required()->check(CLI::Range(0, 1024));
            sub.add_option("--smem,-s", a->smem, "static + dynamic shared memory per block, bytes")
                ->check(CLI::Range(0, 1 << 30));
            sub.add_option("--carveout", a->carveout,
                           "shared memory configured per SM, bytes (default: the SM's maximum)")
                ->check(CLI::Range(0, 1 << 30));
            add_format(sub, a->format, format_names(kOccupancyFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_occupancy(ctx, *a); }; });
          }};
}

}  // namespace keet::app
