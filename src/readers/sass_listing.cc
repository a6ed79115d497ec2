#include "readers/sass_listing.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace keet::readers {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> hex_offset(std::string_view digits) {
  if (digits.empty() || digits.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// Printable ASCII with single spaces: SASS is ASCII, and anything else in an
// outside program's output must not reach a terminal, JSON or HTML as is.
std::string clean_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (out.size() >= SassListing::kMaxInstructionText) break;
    auto u = static_cast<unsigned char>(c);
    if (is_space(c)) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(u >= 0x21 && u < 0x7f ? c : '?');
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// "/*0090*/   LDG.E.64 R2, [R2.64] ;   /* 0x... */" -> (0x90, "LDG.E.64 R2, [R2.64]").
// A line of only an encoding ("/* 0x000fe4... */") has no offset and is not one.
std::optional<SassInstruction> instruction_line(std::string_view line) {
  if (!line.starts_with("/*")) return std::nullopt;
  auto close = line.find("*/", 2);
  if (close == std::string_view::npos) return std::nullopt;
  auto offset = hex_offset(line.substr(2, close - 2));
  if (!offset) return std::nullopt;
  std::string_view rest = line.substr(close + 2);
  if (auto comment = rest.find("/*"); comment != std::string_view::npos) rest = rest.substr(0, comment);
  rest = trim(rest);
  while (!rest.empty() && (rest.back() == ';' || is_space(rest.back()))) rest.remove_suffix(1);
  std::string text = clean_text(rest);
  if (text.empty()) return std::nullopt;
  return SassInstruction{*offset, std::move(text)};
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > SassListing::kMaxNameBytes) return false;
  return std::ranges::all_of(name, [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f;
  });
}

// A function's first line: "Function : NAME" (cuobjdump) or ".text.NAME:"
// (nvdisasm). nullopt: not such a line; "" inside: such a line whose name
// cannot be kept.
std::optional<std::string_view> function_line(std::string_view line) {
  std::string_view name;
  if (line.starts_with("Function")) {
    std::string_view rest = trim(line.substr(8));
    if (!rest.starts_with(':')) return std::nullopt;
    name = trim(rest.substr(1));
  } else if (line.starts_with(".text.") && line.ends_with(':')) {
    name = line.substr(6, line.size() - 7);
  } else {
    return std::nullopt;
  }
  return valid_name(name) ? name : std::string_view();
}

class Builder {
 public:
  // False once the listing holds as many instructions as it may.
  bool add(std::string_view line) {
    if (auto name = function_line(line)) {
      start(*name);
      return true;
    }
    auto ins = instruction_line(line);
    if (!ins) return true;
    if (!current_) start_unnamed();
    if (!*current_) return true;  // inside a function whose name was refused
    out_.functions[**current_].instructions.push_back(std::move(*ins));
    return ++count_ < SassListing::kMaxInstructions;
  }

  SassListing finish(bool truncated) && {
    for (auto& f : out_.functions) {
      auto& list = f.instructions;
      std::ranges::stable_sort(list, {}, &SassInstruction::offset);
      auto dup = std::ranges::unique(list, {}, &SassInstruction::offset);  // keeps the first of each offset
      list.erase(dup.begin(), dup.end());
    }
    std::erase_if(out_.functions, [](const SassFunction& f) { return f.instructions.empty(); });
    out_.truncated = truncated;
    return std::move(out_);
  }

 private:
  void start(std::string_view name) {
    if (name.empty()) {
      current_ = std::optional<size_t>();  // skip until the next function
      return;
    }
    auto [it, added] = index_.try_emplace(std::string(name), out_.functions.size());
    if (added) out_.functions.push_back({std::string(name), {}});
    current_ = it->second;
  }
  void start_unnamed() {
    current_ = out_.functions.size();
    out_.functions.push_back({"", {}});
  }

  SassListing out_;
  std::unordered_map<std::string, size_t> index_;
  // Unset before the first function line; set to nullopt inside a function
  // being skipped; else the function being filled.
  std::optional<std::optional<size_t>> current_;
  size_t count_ = 0;
};

}  // namespace

const SassFunction* SassListing::function(std::string_view name) const {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return functions.size() == 1 && functions.front().name.empty() ? &functions.front() : nullptr;
}

const SassInstruction* SassListing::at(std::string_view name, uint64_t offset) const {
  const SassFunction* f = function(name);
  if (!f) return nullptr;
  auto it = std::ranges::lower_bound(f->instructions, offset, {}, &SassInstruction::offset);
  return it != f->instructions.end() && it->offset == offset ? &*it : nullptr;
}

size_t SassListing::instruction_count() const {
  size_t n = 0;
  for (const auto& f : functions) n += f.instructions.size();
  return n;
}

SassListing parse_sass_listing(std::string_view text) {
  Builder b;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.size() > SassListing::kMaxLineBytes) continue;
    if (!b.add(trim(line))) return std::move(b).finish(true);
  }
  return std::move(b).finish(false);
}

}  // namespace keet::readers
