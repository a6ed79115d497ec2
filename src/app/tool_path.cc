#include "app/tool_path.h"

#include <unistd.h>

#include "util/strings.h"

namespace keet::app {

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

std::optional<std::string> on_path(std::string_view name, const std::string& path_var) {
  for (auto dir : split(path_var, ':'))
    if (auto p = std::filesystem::path(dir) / name; !dir.empty() && executable(p)) return p.string();
  return std::nullopt;
}

}  // namespace keet::app
