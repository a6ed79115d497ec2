#include "service/runner.h"
#include "io/file.h"
#include "io/process.h"
#include "util/error.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>

namespace keet::service {
namespace {

constexpr size_t kMaxOutput = 64u << 20;  // a result larger than this is refused
constexpr auto kPoll = std::chrono::milliseconds(20);

class KeetProcessRunner final : public KeetRunner {
 public:
  KeetProcessRunner(std::string exe, std::string dir) : exe_(std::move(exe)), dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
  }

  Result<RunOutcome> run(const std::vector<std::string>& args, const std::string& cwd, std::chrono::milliseconds limit,
                         const std::function<bool()>& keep_going) override {
    std::string base = dir_ + "/run-" + std::to_string(getpid()) + "-" + std::to_string(++counter_);
    io::SpawnOptions opt{
        .argv = {exe_}, .cwd = cwd, .stdin_null = true, .stdout_file = base + ".out", .stderr_file = base + ".err"};
    opt.argv.insert(opt.argv.end(), args.begin(), args.end());
    auto child = io::spawn(opt);
    if (!child) return fail(ExitCode::Dependency, "cannot start " + exe_ + ": " + child.error().message);
    RunOutcome o;
    if (auto code = child->wait_for(limit, keep_going, o.timed_out, kPoll))
      o.exit_code = *code;
    else
      o.stopped = !o.timed_out;
    // Sized to what the child wrote (at most the bound), never preallocated:
    // a worker holds its result, not 64 MiB of zeros.
    o.out = io::read_prefix(opt.stdout_file, kMaxOutput);
    o.err = io::read_prefix(opt.stderr_file, 64 * 1024);
    std::error_code ec;
    std::filesystem::remove(opt.stdout_file, ec);
    std::filesystem::remove(opt.stderr_file, ec);
    return o;
  }

 private:
  std::string exe_, dir_;
  std::atomic<int> counter_{0};
};

}  // namespace

std::unique_ptr<KeetRunner> make_process_runner(std::string executable, std::string scratch_dir) {
  return std::make_unique<KeetProcessRunner>(std::move(executable), std::move(scratch_dir));
}

std::string read_output(const std::string& path) { return io::read_prefix(path, kMaxOutput); }

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.string();
}

}  // namespace keet::service
