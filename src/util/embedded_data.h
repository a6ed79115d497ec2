// Data files (data/**/*.json) compiled into the library by cmake/embed_data.cmake.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace keet {

struct EmbeddedFile {
  std::string_view path;  // relative to data/, e.g. "kb/metrics.json"
  std::string_view content;
};

const std::vector<EmbeddedFile>& embedded_files();
std::optional<std::string_view> embedded_file(std::string_view path);

}  // namespace keet
