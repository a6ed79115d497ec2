// keet lsp: the Language Server (service/lsp.h) on standard input and output,
// as editors start it (LSP base protocol: Content-Length framed JSON-RPC).
// Reports named on the command line are read once; folders are watched: a
// report that appears or changes in one is read once its size and time have
// held still for one poll, and the open files' diagnostics are published again.
// Standard output carries protocol messages only; logs go to standard error.
// The code actions' commands run keet in process; what they write (the
// knowledge entries diagnostics link to, kernels' HTML reports) goes under
// $XDG_CACHE_HOME/keet/lsp, where an editor can open it.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/disassembler.h"
#include "app/in_process.h"
#include "app/pipeline.h"
#include "llm/config.h"
#include "service/lsp.h"

namespace keet::app {
namespace {

namespace fs = std::filesystem;

struct LspArgs {
  std::vector<std::string> paths;  // reports and folders
  ReportArgs selection;            // -k, -s, -c, NVTX filters for every report
  std::string source_root;
  double min_share = 5;  // percent
  double poll = 2;       // seconds between looks into watched folders
};

bool is_report_name(const fs::path& p) {
  static const std::vector<std::string> kinds = {".ncu-rep", ".ncu-repz", ".nsight-cuprof-report", ".csv"};
  auto ext = p.extension().string();
  return std::find(kinds.begin(), kinds.end(), ext) != kinds.end();
}

// A report's kernels, diagnosed on the one path, as the server keeps them.
// The pass's own messages (warnings) go to `log`, never to standard output.
Result<service::LspIndex> index_report(const Context& parent, const LspArgs& a, const std::string& path,
                                       const std::function<void(std::string_view)>& log) {
  std::ostringstream out, err;
  Context ctx{out, err, false, false, parent.getenv};
  ReportArgs r = a.selection;
  r.path = path;
  r.allow_partial = true;  // a report still being written shows what it has; it is read again when done
  service::LspIndex index;
  model::Report head;
  auto ok = analyse_kernels(ctx, r, {}, head, [&](model::Kernel&& k, const model::Report& h, auto&& d) {
    index.add(path, h, k, d);
    return true;
  });
  std::istringstream said(err.str());
  for (std::string line; std::getline(said, line);)
    if (!line.empty()) log(line);
  if (!ok) return std::unexpected(ok.error());
  return index;
}

// The reports of watched folders, each with the size and time last seen.
class FolderWatch {
 public:
  explicit FolderWatch(std::vector<std::string> folders) : folders_(std::move(folders)) {}
  bool empty() const { return folders_.empty(); }

  // Reports to (re)read: new or changed files whose size and time held still
  // since the last look, and files that went away (second: true).
  std::vector<std::pair<std::string, bool>> look() {
    std::vector<std::pair<std::string, bool>> due;
    std::map<std::string, Seen> now;
    for (const auto& folder : folders_) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(folder, fs::directory_options::skip_permission_denied, ec)) {
        std::error_code fe;
        if (!e.is_regular_file(fe) || !is_report_name(e.path())) continue;
        Seen s{e.file_size(fe), e.last_write_time(fe)};
        if (fe) continue;
        std::string path = e.path().string();
        auto old = seen_.find(path);
        s.read = old != seen_.end() && old->second.read && old->second.same(s);
        if (old != seen_.end() && old->second.same(s) && !s.read) {
          s.read = true;  // still for one look: read it now
          due.emplace_back(path, false);
        }
        now[path] = s;
      }
    }
    for (const auto& [path, s] : seen_)
      if (s.read && !now.contains(path)) due.emplace_back(path, true);
    seen_ = std::move(now);
    return due;
  }

 private:
  struct Seen {
    uintmax_t size = 0;
    fs::file_time_type time;
    bool read = false;
    bool same(const Seen& o) const { return size == o.size && time == o.time; }
  };
  std::vector<std::string> folders_;
  std::map<std::string, Seen> seen_;
};

ExitCode run_lsp(Context& ctx, const LspArgs& a) {
  std::mutex err_mutex, out_mutex;
  auto log = [&](std::string_view line) {
    std::lock_guard lock(err_mutex);
    ctx.err << "keet lsp: " << line << "\n";
    ctx.err.flush();
  };
  service::LspOptions opt;
  opt.source_root = a.source_root.empty() ? "" : fs::absolute(a.source_root).lexically_normal().string();
  opt.min_share = a.min_share / 100;
  opt.log = log;
  opt.run = in_process_runner(ctx.getenv);
  opt.disassembler = find_disassembler(ctx.getenv).has_value();
  opt.output_dir = llm::cache_dir(ctx.getenv) + "/lsp";
  service::LspServer server(std::move(opt));
  std::ostream& out = ctx.raw_out ? *ctx.raw_out : ctx.out;
  auto send = [&](const std::vector<std::string>& messages) {
    std::lock_guard lock(out_mutex);
    for (const auto& m : messages) service::write_lsp_message(out, m);
  };

  std::vector<std::string> files, folders;
  for (const auto& p : a.paths) (fs::is_directory(p) ? folders : files).push_back(p);
  auto load = [&](const std::string& path) {
    auto index = index_report(ctx, a, path, log);
    if (!index) {
      log(index.error().message);
      send(server.log_message(index.error().message, 1));
      return;
    }
    std::string summary =
        fmt::format("{}: {} kernels, {} source lines with cost", path, index->kernels.size(), index->lines.size());
    log(summary);
    // Launches of one kernel say the same thing: once each, with a count.
    std::map<std::string, int> times;
    std::vector<const std::string*> order;
    for (const auto& note : index->notes)
      if (times[note]++ == 0) order.push_back(&note);
    for (const auto* note : order) log(times[*note] > 1 ? fmt::format("{} (x{})", *note, times[*note]) : *note);
    auto messages = server.log_message(summary, 3);  // the editor's log says what was read
    for (auto& m : server.set_report(path, std::move(*index))) messages.push_back(std::move(m));
    send(messages);
  };

  // Reports are read beside the message loop, so `initialize` is answered at
  // once; diagnostics follow when a report is in.
  std::mutex wait_mutex;
  std::condition_variable wake;
  bool stopping = false, first_loaded = false;
  std::thread reader([&] {
    for (const auto& f : files) load(f);
    {
      std::lock_guard lock(wait_mutex);
      first_loaded = true;
    }
    wake.notify_all();
    FolderWatch watch(folders);
    while (!watch.empty()) {
      for (const auto& [path, gone] : watch.look()) {
        if (gone)
          send(server.set_report(path, {}));
        else
          load(path);
      }
      std::unique_lock lock(wait_mutex);
      if (wake.wait_for(lock, std::chrono::duration<double>(a.poll), [&] { return stopping; })) break;
    }
  });

  log(fmt::format("serving diagnostics for {} reports and {} watched folders on standard input and output",
                  files.size(), folders.size()));
  std::istream& in = ctx.in ? *ctx.in : std::cin;
  std::string body, error;
  for (bool first = true; !server.exited() && service::read_lsp_message(in, body, error); first = false) {
    send(server.handle(body));
    if (!first) continue;
    // `initialize` is answered at once; what follows waits for the reports
    // named on the command line, so the first hover and lens already see them.
    std::unique_lock lock(wait_mutex);
    wake.wait(lock, [&] { return first_loaded; });
  }
  if (!error.empty()) log(error);
  {
    std::lock_guard lock(wait_mutex);
    stopping = true;
  }
  wake.notify_all();
  reader.join();
  if (!error.empty()) return ExitCode::BadInput;
  return server.exit_code() == 0 ? ExitCode::Ok : ExitCode::Failed;
}

}  // namespace

Command lsp_command() {
  return {"lsp", "Language Server on standard input/output: report findings on source lines (see docs/editors.md)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<LspArgs>();
            sub.add_option("reports", a->paths,
                           "report files, and folders to watch for new or changed reports (.ncu-rep, .ncu-repz, "
                           ".nsight-cuprof-report, .csv)")
                ->required()
                ->check(CLI::ExistingPath);
            sub.add_option("--source-root", a->source_root,
                           "folder the reports' source paths are relative to (default: match files by their "
                           "longest shared trailing path)")
                ->check(CLI::ExistingDirectory);
            sub.add_option("--min-share", a->min_share,
                           "percent of a kernel's cost a line needs for a diagnostic (lines a finding names always "
                           "get one)")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 100.0));
            sub.add_option("--poll", a->poll, "seconds between looks into watched folders")
                ->capture_default_str()
                ->check(CLI::Range(0.1, 3600.0));
            sub.add_option("-k,--kernel", a->selection.kernel, "only kernels whose name matches (as analyze -k)");
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_lsp(ctx, *a); }; });
          }};
}

}  // namespace keet::app
