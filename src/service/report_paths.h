// Where the MCP tools may read reports: the client names a path, the server
// reads it only when, with every symlink resolved, it lies under one of the
// allowed roots and is a regular file no larger than the limit.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::service {

class ReportRoots {
 public:
  // Each root must exist; an empty list allows the current directory only.
  static Result<ReportRoots> create(const std::vector<std::string>& roots);
  // The canonical path of `path` (a relative path is looked for under each
  // root in turn), or a one-line reason: not found, outside the roots, not a
  // file, too large.
  Result<std::string> resolve(std::string_view path, uint64_t max_bytes) const;
  // A canonical path as answers show it: relative to the first root that
  // holds it (a server's own folders stay out of what a client reads).
  std::string shown(const std::string& canonical) const;
  // `text` (an error line) with each root's folder left out of the paths in it.
  std::string shown_in(std::string text) const;
  const std::vector<std::string>& roots() const { return roots_; }

 private:
  std::vector<std::string> roots_;  // canonical
};

}  // namespace keet::service
