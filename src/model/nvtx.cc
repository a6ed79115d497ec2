#include "model/nvtx.h"
#include "util/error.h"

#include <algorithm>

namespace keet::model {
namespace {

std::vector<std::string> split_ranges(std::string_view path) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t slash = path.find('/', start);
    out.emplace_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (!out.empty() && out.back().empty()) out.pop_back();  // "A/": the trailing slash marks push/pop
  return out;
}

// parts[i..] against stack[j..]: "*" takes any run of ranges (none too).
bool match_from(const std::vector<std::string>& parts, size_t i, const std::vector<std::string>& stack, size_t j,
                bool to_top) {
  if (i == parts.size()) return !to_top || j == stack.size();
  if (parts[i] == "*") {
    for (size_t k = j; k <= stack.size(); ++k)
      if (match_from(parts, i + 1, stack, k, to_top)) return true;
    return false;
  }
  return j < stack.size() && stack[j] == parts[i] && match_from(parts, i + 1, stack, j + 1, to_top);
}

}  // namespace

Result<NvtxExpression> NvtxExpression::parse(std::string_view text) {
  NvtxExpression e;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    e.domain_ = std::string(rest.substr(0, at));
    rest.remove_prefix(at + 1);
  }
  e.bottom_ = rest.starts_with('[');
  if (e.bottom_) rest.remove_prefix(1);
  e.top_ = rest.ends_with(']');
  if (e.top_) rest.remove_suffix(1);
  e.push_pop_ = e.bottom_ || e.top_ || rest.find('/') != std::string_view::npos;
  e.parts_ = e.push_pop_ ? split_ranges(rest) : std::vector<std::string>{std::string(rest)};
  bool empty_part = std::ranges::any_of(e.parts_, [](const std::string& p) { return p.empty(); });
  if (e.parts_.empty() || empty_part)
    return fail(ExitCode::BadInput, "NVTX filter '" + std::string(text) +
                                        "': expected Range, Domain@Range, Range/, "
                                        "[Range, Range], or ranges separated by / (as ncu)");
  return e;
}

bool NvtxExpression::matches_stack(const std::vector<std::string>& stack) const {
  if (bottom_) return match_from(parts_, 0, stack, 0, top_);
  for (size_t j = 0; j <= stack.size(); ++j)
    if (match_from(parts_, 0, stack, j, top_)) return true;
  return false;
}

bool NvtxExpression::matches(const NvtxState& s) const {
  if (!push_pop_)
    return std::ranges::any_of(s.start_end, [&](const auto& r) { return r.domain == domain_ && r.name == parts_[0]; });
  return std::ranges::any_of(s.push_pop,
                             [&](const auto& st) { return st.domain == domain_ && matches_stack(st.ranges); });
}

Result<NvtxFilter> NvtxFilter::parse(const std::vector<std::string>& include, const std::vector<std::string>& exclude) {
  NvtxFilter f;
  for (auto [texts, into] : {std::pair{&include, &f.include_}, std::pair{&exclude, &f.exclude_}})
    for (const auto& t : *texts) {
      KEET_TRY(e, NvtxExpression::parse(t));
      into->push_back(std::move(*e));
    }
  return f;
}

bool NvtxFilter::matches(const NvtxState& s) const {
  return std::ranges::all_of(include_, [&](const auto& e) { return e.matches(s); }) &&
         std::ranges::none_of(exclude_, [&](const auto& e) { return e.matches(s); });
}

}  // namespace keet::model
