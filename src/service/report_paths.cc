#include "service/report_paths.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace keet::service {
namespace fs = std::filesystem;

namespace {

// Component by component, so /data/reports2 is not inside /data/reports.
bool inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

Result<ReportRoots> ReportRoots::create(const std::vector<std::string>& roots) {
  ReportRoots out;
  for (const auto& r : roots.empty() ? std::vector<std::string>{"."} : roots) {
    std::error_code ec;
    auto canonical = fs::canonical(r, ec);
    if (ec || !fs::is_directory(canonical, ec))
      return fail(ExitCode::BadInput, fmt::format("--root {}: not a readable folder", r));
    out.roots_.push_back(canonical.string());
  }
  return out;
}

Result<std::string> ReportRoots::resolve(std::string_view path, uint64_t max_bytes) const {
  if (path.empty() || path.find('\0') != std::string_view::npos)
    return fail(ExitCode::BadInput, "report path is empty or holds a NUL byte");
  fs::path p(path);
  std::error_code ec;
  if (p.is_relative()) {
    auto under = [&](const std::string& root) { return fs::path(root) / path; };
    auto found = std::ranges::find_if(roots_, [&](const std::string& r) { return fs::exists(under(r), ec); });
    p = under(found == roots_.end() ? roots_.front() : *found);
  }
  auto canonical = fs::canonical(p, ec);  // resolves every symlink and ".."
  if (ec) return fail(ExitCode::BadInput, fmt::format("{}: no such report", path));
  bool allowed = false;
  for (const auto& root : roots_) allowed = allowed || inside(canonical, root);
  if (!allowed)
    return fail(ExitCode::BadInput,
                fmt::format("{}: outside the folders this server may read (keet mcp --root adds one)", path));
  if (!fs::is_regular_file(canonical, ec)) return fail(ExitCode::BadInput, fmt::format("{}: not a regular file", path));
  auto size = fs::file_size(canonical, ec);
  if (ec) return fail(ExitCode::BadInput, fmt::format("{}: cannot read its size", path));
  if (size > max_bytes)
    return fail(ExitCode::BadInput,
                fmt::format("{}: {} bytes, over this server's limit of {} bytes", path, size, max_bytes));
  return canonical.string();
}

std::string ReportRoots::shown_in(std::string text) const {
  for (const auto& root : roots_) {
    std::string prefix = root.ends_with('/') ? root : root + "/";
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
      text.erase(at, prefix.size());
  }
  return text;
}

std::string ReportRoots::shown(const std::string& canonical) const {
  for (const auto& root : roots_)
    if (inside(canonical, root)) return fs::path(canonical).lexically_relative(root).string();
  return canonical;
}

}  // namespace keet::service
