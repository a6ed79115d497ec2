#include "util/unified_diff.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "util/strings.h"

namespace keet {
namespace {

std::vector<std::string_view> text_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = end + 1;
  }
  return out;
}

// "a/src/k.cu\t2024-01-01 ..." -> "a/src/k.cu"
std::string header_path(std::string_view rest) {
  rest = trim(rest);
  if (auto tab = rest.find('\t'); tab != std::string_view::npos) rest = rest.substr(0, tab);
  if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') rest = rest.substr(1, rest.size() - 2);
  return std::string(trim(rest));
}

std::string strip_git_prefix(const std::string& p, char side) {
  if (p.size() > 2 && p[0] == side && p[1] == '/') return p.substr(2);
  return p;
}

std::optional<int> number(std::string_view s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0 || v > 100000000) return std::nullopt;
  return v;
}

// "-12,3" -> {12, 3}; "-12" -> {12, 1}
std::optional<std::pair<int, int>> range_of(std::string_view s, char sign) {
  if (s.empty() || s[0] != sign) return std::nullopt;
  s.remove_prefix(1);
  auto comma = s.find(',');
  auto start = number(s.substr(0, comma));
  if (!start) return std::nullopt;
  if (comma == std::string_view::npos) return std::pair{*start, 1};
  auto count = number(s.substr(comma + 1));
  if (!count) return std::nullopt;
  return std::pair{*start, *count};
}

std::optional<DiffHunk> hunk_header(std::string_view line) {
  // "@@ -a,b +c,d @@ optional section"
  if (!line.starts_with("@@ ")) return std::nullopt;
  auto parts = split(line.substr(3), ' ');
  if (parts.size() < 3 || parts[2] != "@@") return std::nullopt;
  auto old_range = range_of(parts[0], '-');
  auto new_range = range_of(parts[1], '+');
  if (!old_range || !new_range) return std::nullopt;
  DiffHunk h;
  std::tie(h.old_start, h.old_count) = *old_range;
  std::tie(h.new_start, h.new_count) = *new_range;
  return h;
}

bool body_line(std::string_view line) {
  return line.empty() || line[0] == ' ' || line[0] == '-' || line[0] == '+' || line[0] == '\\';
}

// Reads a hunk body from lines[i]; the stated counts end it, and a body that
// stops short of them (models miscount) is taken as it is.
void read_body(const std::vector<std::string_view>& lines, size_t& i, DiffHunk& h) {
  int old_seen = 0, new_seen = 0;
  while (i < lines.size() && (old_seen < h.old_count || new_seen < h.new_count)) {
    std::string_view l = lines[i];
    if (!body_line(l) || l.starts_with("@@ ")) break;
    if (l.starts_with("--- ") && i + 1 < lines.size() && lines[i + 1].starts_with("+++ ")) break;
    ++i;
    if (l.starts_with('\\')) continue;  // "\ No newline at end of file"
    char op = l.empty() ? ' ' : l[0];
    std::string rest = l.empty() ? "" : std::string(l.substr(1));
    if (op != '+') ++old_seen;
    if (op != '-') ++new_seen;
    h.lines.push_back(op + rest);
  }
  while (i < lines.size() && lines[i].starts_with('\\')) ++i;
  h.old_count = old_seen;
  h.new_count = new_seen;
}

bool same_line(std::string_view a, std::string_view b, bool loose) {
  if (!loose) return a == b;
  auto rstrip = [](std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  return rstrip(a) == rstrip(b);
}

bool matches_at(const std::vector<std::string_view>& file, const std::vector<std::string_view>& old, size_t pos,
                bool loose) {
  if (pos + old.size() > file.size()) return false;
  for (size_t j = 0; j < old.size(); ++j)
    if (!same_line(file[pos + j], old[j], loose)) return false;
  return true;
}

// Where the hunk's old lines are: at `expected`, else the nearest position
// within max_offset lines (exact first, then ignoring trailing blanks).
std::optional<size_t> locate(const std::vector<std::string_view>& file, const std::vector<std::string_view>& old,
                             long expected, size_t floor, int max_offset) {
  for (bool loose : {false, true})
    for (long d = 0; d <= max_offset; ++d)
      for (long pos : {expected - d, expected + d}) {
        if (pos < static_cast<long>(floor) || pos > static_cast<long>(file.size())) continue;
        if (matches_at(file, old, static_cast<size_t>(pos), loose)) return static_cast<size_t>(pos);
      }
  return std::nullopt;
}

}  // namespace

std::vector<DiffBlock> extract_diff_blocks(std::string_view text) {
  std::vector<DiffBlock> blocks;
  auto lines = text_lines(text);
  std::string preface;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view fence = trim(lines[i]);
    if (!fence.starts_with("```")) {
      preface += std::string(lines[i]) + "\n";
      continue;
    }
    std::string lang = to_lower(trim(fence.substr(3)));
    size_t end = i + 1;
    while (end < lines.size() && !trim(lines[end]).starts_with("```")) ++end;
    if (lang == "diff" || lang == "patch" || lang == "udiff") {
      std::string body;
      for (size_t j = i + 1; j < end; ++j) body += std::string(lines[j]) + "\n";
      blocks.push_back({std::move(body), std::move(preface)});
    }
    preface.clear();
    i = end;
  }
  if (!blocks.empty()) return blocks;
  auto start = text.find("--- ");
  if (start != std::string_view::npos && (start == 0 || text[start - 1] == '\n'))
    blocks.push_back({std::string(text.substr(start)), std::string(text.substr(0, start))});
  return blocks;
}

std::string format_unified_diff(const FilePatch& patch) {
  std::string out = fmt::format("--- a/{}\n+++ b/{}\n", patch.old_path, patch.new_path);
  for (const auto& h : patch.hunks) {
    out += fmt::format("@@ -{},{} +{},{} @@\n", h.old_start, h.old_count, h.new_start, h.new_count);
    for (const auto& l : h.lines) out += l + "\n";
  }
  return out;
}

Result<std::vector<FilePatch>> parse_unified_diff(std::string_view text) {
  if (text.size() > kMaxPatchBytes) return fail(ExitCode::BadInput, "diff is larger than 1 MiB");
  auto lines = text_lines(text);
  std::vector<FilePatch> out;
  size_t i = 0;
  while (i < lines.size()) {
    if (!(lines[i].starts_with("--- ") && i + 1 < lines.size() && lines[i + 1].starts_with("+++ "))) {
      if (lines[i].starts_with("@@ ") && out.empty())
        return fail(ExitCode::BadInput, fmt::format("line {}: hunk before any '--- '/'+++ ' file header", i + 1));
      ++i;
      continue;
    }
    if (out.size() == kMaxPatchFiles) return fail(ExitCode::BadInput, "diff changes more than 64 files");
    FilePatch p;
    p.old_path = strip_git_prefix(header_path(lines[i].substr(4)), 'a');
    p.new_path = strip_git_prefix(header_path(lines[i + 1].substr(4)), 'b');
    i += 2;
    while (i < lines.size()) {
      auto h = hunk_header(lines[i]);
      if (!h) break;
      ++i;
      read_body(lines, i, *h);
      p.hunks.push_back(std::move(*h));
    }
    if (p.hunks.empty())
      return fail(ExitCode::BadInput, fmt::format("line {}: file header for {} has no '@@' hunk", i, p.path()));
    out.push_back(std::move(p));
  }
  if (out.empty()) return fail(ExitCode::BadInput, "no '--- '/'+++ ' file header: not a unified diff");
  return out;
}

std::optional<std::string> safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\\') != std::string_view::npos ||
      path.find('\0') != std::string_view::npos)
    return std::nullopt;
  std::string out;
  for (auto part : split(path, '/')) {
    if (part.empty() || part == "." || part == "..") return std::nullopt;
    out += (out.empty() ? "" : "/") + std::string(part);
  }
  return out;
}

Result<std::string> apply_patch(std::string_view original, const FilePatch& patch, int max_offset) {
  auto file = text_lines(original);
  bool final_newline = original.empty() || original.back() == '\n';
  std::vector<std::string> result;
  size_t done = 0;  // file lines already copied or replaced
  long delta = 0;   // how far earlier hunks moved later ones
  for (size_t n = 0; n < patch.hunks.size(); ++n) {
    const auto& h = patch.hunks[n];
    std::vector<std::string_view> old;
    for (const auto& l : h.lines)
      if (l[0] != '+') old.emplace_back(std::string_view(l).substr(1));
    long expected = (old.empty() ? h.old_start : h.old_start - 1) + delta;
    auto pos = locate(file, old, expected, done, max_offset);
    if (!pos)
      return fail(ExitCode::BadInput, fmt::format("{}: hunk {} (@@ -{},{}) does not match the file", patch.path(),
                                                  n + 1, h.old_start, h.old_count));
    delta += static_cast<long>(*pos) - expected;
    for (; done < *pos; ++done) result.emplace_back(file[done]);
    for (const auto& l : h.lines)
      if (l[0] != '-') result.push_back(l.substr(1));
    done += old.size();
  }
  for (; done < file.size(); ++done) result.emplace_back(file[done]);
  std::string text;
  for (size_t j = 0; j < result.size(); ++j) text += result[j] + (j + 1 < result.size() || final_newline ? "\n" : "");
  return text;
}

}  // namespace keet
