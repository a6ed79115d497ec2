// Unified diffs as an LLM writes them (`keet tune`): found in free text,
// parsed, checked against the files a change may touch, and applied to a
// file's text in memory. Nothing here touches the file system, so a hostile
// diff can only ever produce text; the caller decides where text may go.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet {

struct DiffHunk {
  int old_start = 0, old_count = 0, new_start = 0, new_count = 0;
  // Each line starts with ' ', '-' or '+'; the rest is the line without its newline.
  std::vector<std::string> lines;
};

struct FilePatch {
  std::string old_path, new_path;  // as written, "a/" and "b/" prefixes removed
  std::vector<DiffHunk> hunks;
  const std::string& path() const { return new_path == "/dev/null" ? old_path : new_path; }
};

// The limits a diff from outside is held to.
constexpr size_t kMaxPatchBytes = 1 << 20;
constexpr size_t kMaxPatchFiles = 64;

// The unified diffs in an LLM's answer: the bodies of ```diff / ```patch
// fences, or, when there is no fence, the answer from its first "--- " line.
// `preface` is the text between the previous block and this one (where a
// model says what the change is for).
struct DiffBlock {
  std::string diff, preface;
};
std::vector<DiffBlock> extract_diff_blocks(std::string_view text);

// Parses one unified diff (several files allowed). Errors name the line.
Result<std::vector<FilePatch>> parse_unified_diff(std::string_view text);

// A relative path with no "..", no empty or "." parts and no leading '/':
// "src/k.cu" yes; "/etc/passwd", "../x", "a/../../x", "a\\b" no. Returns the
// normalised form.
std::optional<std::string> safe_relative_path(std::string_view path);

// Applies the hunks to `original`. A hunk whose context is not at its stated
// line is looked for nearby (as patch(1) does, up to `max_offset` lines); one
// that matches nowhere is an error naming it. Creating or deleting whole
// files is not supported (the caller refuses /dev/null sides).
// The patch in canonical form ("--- a/P", "+++ b/P", exact hunk counts), as
// `patch -p1` and `git apply` read it.
std::string format_unified_diff(const FilePatch& patch);

Result<std::string> apply_patch(std::string_view original, const FilePatch& patch, int max_offset = 200);

}  // namespace keet
