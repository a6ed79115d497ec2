#include "app/tune_workspace.h"
#include "util/error.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>

#include <fmt/format.h>

#include "util/unified_diff.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

bool skipped(const fs::path& p, const std::vector<fs::path>& skip) {
  if (p.filename() == ".git") return true;
  std::error_code ec;
  for (const auto& s : skip)
    if (fs::equivalent(p, s, ec)) return true;
  return false;
}

Result<void> copy_entry(const fs::directory_entry& e, const fs::path& target) {
  std::error_code ec;
  auto st = e.symlink_status(ec);
  if (fs::is_symlink(st))
    fs::copy_symlink(e.path(), target, ec);
  else if (fs::is_directory(st))
    fs::create_directories(target, ec);
  else if (fs::is_regular_file(st))
    fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing, ec);
  // Sockets, fifos and devices are not part of a build's sources: left out.
  if (ec) return fail(ExitCode::BadInput, fmt::format("cannot copy {}: {}", e.path().string(), ec.message()));
  // Executable bits (scripts the build runs) survive copy_file; directories keep the default mode.
  return {};
}

// Every part of tree/rel below tree, checked not to be a symbolic link.
Result<fs::path> checked_path(const fs::path& tree, const std::string& rel) {
  auto safe = safe_relative_path(rel);
  if (!safe) return fail(ExitCode::BadInput, fmt::format("{}: not a relative path inside the project", rel));
  fs::path p = tree;
  std::error_code ec;
  for (const auto& part : fs::path(*safe)) {
    p /= part;
    if (fs::is_symlink(fs::symlink_status(p, ec)))
      return fail(ExitCode::BadInput,
                  fmt::format("{}: is or passes through a symbolic link; keet does not write there", rel));
  }
  return p;
}

}  // namespace

Result<void> copy_tree(const fs::path& root, const fs::path& dest, const std::vector<fs::path>& skip) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return fail(ExitCode::BadInput, fmt::format("cannot create {}: {}", dest.string(), ec.message()));
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec)
    return fail(ExitCode::BadInput, fmt::format("{}: cannot read the project tree: {}", root.string(), ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(ExitCode::BadInput, fmt::format("{}: {}", root.string(), ec.message()));
    if (skipped(it->path(), skip)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    // Lexically: fs::relative() resolves links, and a link's copy would land where it points.
    if (auto r = copy_entry(*it, dest / it->path().lexically_relative(root)); !r) return r;
  }
  return {};
}

Result<void> write_in_tree(const fs::path& tree, const std::string& rel, const std::string& text) {
  KEET_TRY(p, checked_path(tree, rel));
  fs::path temp = p->parent_path() / (".keet-tune-" + std::to_string(getpid()) + "-" + p->filename().string());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return fail(ExitCode::BadInput, fmt::format("{}: cannot write", temp.string()));
  }
  std::error_code ec;
  auto perms = fs::status(*p, ec).permissions();
  if (!ec) fs::permissions(temp, perms, ec);
  fs::rename(temp, *p, ec);
  if (ec) {
    fs::remove(temp, ec);
    return fail(ExitCode::BadInput, fmt::format("{}: cannot replace: {}", p->string(), ec.message()));
  }
  return {};
}

Result<std::string> read_in_tree(const fs::path& tree, const std::string& rel) {
  KEET_TRY(p, checked_path(tree, rel));
  std::ifstream in(*p, std::ios::binary);
  if (!in) return fail(ExitCode::BadInput, fmt::format("{}: cannot read", rel));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> shell_in(const fs::path& dir, const std::string& command) {
  // The command is the user's, run as they would type it; the directory is
  // passed as an argument, never spliced into the script.
  return {"/bin/sh", "-c", "cd -- \"$1\" || exit 97\neval \"$2\"", "keet-tune", dir.string(), command};
}

StepResult run_step(ProcessRunner& runner, const fs::path& dir, const std::string& command, int timeout_s,
                    const fs::path& log) {
  constexpr size_t kMaxLog = 64u << 20;
  std::ofstream out(log, std::ios::binary | std::ios::trunc);
  size_t written = 0;
  auto start = std::chrono::steady_clock::now();
  auto status = runner.run(
      shell_in(dir, command),
      [&](std::string_view chunk) {
        if (written >= kMaxLog) return;
        chunk = chunk.substr(0, std::min(chunk.size(), kMaxLog - written));
        out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        written += chunk.size();
      },
      std::chrono::seconds(timeout_s));
  StepResult r;
  if (!status) {
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (timeout_s > 0 && elapsed >= std::chrono::seconds(timeout_s))
      r.timed_out = true;
    else
      r.error = status.error().message;
    return r;
  }
  r.status = *status;
  r.interrupted = *status == 128 + SIGINT || tune_interrupted();
  if (r.interrupted) g_interrupted = 1;
  return r;
}

std::optional<size_t> first_difference(const fs::path& a, const fs::path& b) {
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  size_t line = 1;
  for (;;) {
    int ca = fa.get(), cb = fb.get();
    if (ca != cb) return line;
    if (ca == EOF) return std::nullopt;
    if (ca == '\n') ++line;
  }
}

bool tune_interrupted() { return g_interrupted != 0; }

InterruptGuard::InterruptGuard() : old_(std::signal(SIGINT, on_interrupt)) { g_interrupted = 0; }
InterruptGuard::~InterruptGuard() { std::signal(SIGINT, old_); }

}  // namespace keet::app
