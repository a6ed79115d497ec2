#include "util/pattern.h"

#include <re2/re2.h>

#include <algorithm>

namespace keet {

std::expected<Pattern, std::string> Pattern::compile(std::string_view pattern, Options opt) {
  if (pattern.size() > kMaxPatternBytes)
    return std::unexpected("pattern longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  RE2::Options o;
  o.set_log_errors(false);  // the error is returned, not printed on stderr
  o.set_case_sensitive(!opt.case_insensitive);
  o.set_max_mem(kMaxMemBytes);
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), o);
  if (!re->ok()) {
    // "pattern too large - compile failed" when a repetition blows the budget.
    return std::unexpected(re->error());
  }
  Pattern p;
  p.source_ = std::string(pattern);
  p.re_ = std::move(re);
  return p;
}

bool Pattern::search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

std::optional<Pattern::Match> Pattern::find(std::string_view text, size_t from) const {
  std::array<re2::StringPiece, 3> m;
  int n = std::min(1 + re_->NumberOfCapturingGroups(), static_cast<int>(m.size()));
  re2::StringPiece all(text.data(), text.size());
  if (from > text.size() || !re_->Match(all, from, text.size(), RE2::UNANCHORED, m.data(), n)) return std::nullopt;
  Match out{static_cast<size_t>(m[0].data() - text.data()), m[0].size(), {}};
  for (int i = 0; i < n; ++i)
    if (m[i].data()) out.groups[i] = std::string_view(m[i].data(), m[i].size());
  return out;
}

std::string Pattern::replace_all(std::string_view text, std::string_view with) const {
  std::string out;
  size_t at = 0;
  while (auto m = find(text, at)) {
    out.append(text.substr(at, m->pos - at));
    out.append(with);
    if (m->len == 0) {  // an empty match: keep one byte so the scan moves on
      if (m->pos < text.size()) out.push_back(text[m->pos]);
      at = m->pos + 1;
    } else {
      at = m->pos + m->len;
    }
    if (at > text.size()) return out;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace keet
