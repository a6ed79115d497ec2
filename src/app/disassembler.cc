#include "app/disassembler.h"
#include "app/tool_path.h"
#include "util/error.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "util/strings.h"

namespace fs = std::filesystem;

namespace keet::app {
namespace {

std::vector<std::string> search_dirs(const GetEnv& getenv, const std::vector<std::string>& cuda_bins) {
  std::vector<std::string> dirs;
  const std::string path = getenv("PATH");
  for (const auto& d : split(path, ':'))
    if (!d.empty()) dirs.emplace_back(d);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (auto root = getenv(var); !root.empty()) dirs.push_back((fs::path(root) / "bin").string());
  dirs.insert(dirs.end(), cuda_bins.begin(), cuda_bins.end());
  return dirs;
}

// A private temporary file holding `bytes`, removed when this goes.
class TempFile {
 public:
  static Result<TempFile> write(const std::string& dir, std::string_view bytes) {
    std::string path = (fs::path(dir.empty() ? "/tmp" : dir) / "keet-sass-XXXXXX").string();
    int fd = mkstemp(path.data());
    if (fd < 0) return fail(ExitCode::Dependency, fmt::format("cannot create a temporary file in {}", dir));
    TempFile f(path);
    for (size_t done = 0; done < bytes.size();) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) {
        close(fd);
        return fail(ExitCode::Dependency, "cannot write the cubin to a temporary file");
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
    return f;
  }
  TempFile(TempFile&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The first line of a failed run's output, short, printable and with single
// spaces: its reason.
std::string first_line(std::string_view output) {
  std::string line;
  for (char c : output) {
    if (c == '\n' && !line.empty()) break;
    if (line.size() >= 200) break;
    auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '\t') {
      if (!line.empty() && line.back() != ' ') line.push_back(' ');
    } else if (u > 0x20 && u < 0x7f) {
      line.push_back(c);
    }
  }
  return std::string(trim(line));
}

}  // namespace

const std::vector<std::string>& default_cuda_bins() {
  static const std::vector<std::string> dirs{"/usr/local/cuda/bin"};
  return dirs;
}

std::optional<DisassemblerTool> find_disassembler(const GetEnv& getenv, const std::vector<std::string>& cuda_bins) {
  auto dirs = search_dirs(getenv, cuda_bins);
  for (bool nvdisasm : {true, false})
    for (const auto& d : dirs)
      if (auto p = fs::path(d) / (nvdisasm ? "nvdisasm" : "cuobjdump"); executable(p))
        return DisassemblerTool{p.string(), nvdisasm};
  return std::nullopt;
}

ToolDisassembler::ToolDisassembler(GetEnv getenv, ProcessRunner& runner, std::chrono::seconds timeout,
                                   std::vector<std::string> cuda_bins)
    : getenv_(std::move(getenv)), runner_(runner), timeout_(timeout), cuda_bins_(std::move(cuda_bins)) {}

const std::optional<DisassemblerTool>& ToolDisassembler::tool() {
  if (!tool_) tool_ = find_disassembler(getenv_, cuda_bins_);
  return *tool_;
}

std::optional<std::string> ToolDisassembler::unavailable() {
  if (!tool()) return std::string(kNoDisassembler);
  if (stuck_) return stuck_->message;
  return std::nullopt;
}

Result<std::string> ToolDisassembler::disassemble(const analysis::SassCode& code) {
  const auto& t = tool();
  if (!t) return fail(ExitCode::Dependency, std::string(kNoDisassembler));
  if (stuck_) return std::unexpected(*stuck_);
  std::string name = fs::path(t->path).filename().string();
  if (t->nvdisasm && code.sm <= 0)
    return fail(ExitCode::Dependency, "nvdisasm needs the kernel's SM, which neither the report nor the cubin gives");
  KEET_TRY(file, TempFile::write(getenv_("TMPDIR"), t->nvdisasm ? code.code : code.cubin));
  std::vector<std::string> argv =
      t->nvdisasm ? std::vector<std::string>{t->path, "-b", fmt::format("SM{}", code.sm), file->path()}
                  : std::vector<std::string>{t->path, "-sass", "-fun", std::string(code.function), file->path()};
  std::string out;
  auto status = runner_.run(
      argv,
      [&](std::string_view chunk) {
        if (out.size() < kMaxListingBytes) out.append(chunk.substr(0, kMaxListingBytes - out.size()));
      },
      timeout_);
  if (!status) {  // could not start, or ran past the timeout
    stuck_ = status.error();
    return std::unexpected(*stuck_);
  }
  if (*status != 0) {
    std::string why = first_line(out);
    return fail(ExitCode::Dependency,
                fmt::format("{} failed (exit {}){}", name, *status, why.empty() ? "" : ": " + why));
  }
  return out;
}

RunSass::RunSass(const Context& ctx, ProcessRunner& runner) : tool_(ctx.getenv, runner), instructions_(tool_) {}

}  // namespace keet::app
