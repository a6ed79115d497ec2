// Finding the NVIDIA tools keet runs (ncu, nsys, nvdisasm, cuobjdump): the
// checks each lookup shares.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace keet::app {

// A regular file this process may execute.
bool executable(const std::filesystem::path& p);
// DIR/name for the first DIR of a colon-separated PATH value where it is executable.
std::optional<std::string> on_path(std::string_view name, const std::string& path_var);

}  // namespace keet::app
