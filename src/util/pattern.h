// Regular expressions from outside (-k regex:, metrics --grep, a model's
// get_metrics pattern, data files) go through RE2, never std::regex: RE2 runs
// in time linear in the text and in bounded memory, so a pattern such as
// "(.*)*zq" on a 100 KB kernel name neither hangs nor overflows the stack (as
// std::regex's recursive matcher did).
#pragma once
#include <array>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace keet {

class Pattern {
 public:
  // A pattern longer than this is refused: nobody types one, and its compiled
  // program would be large.
  static constexpr size_t kMaxPatternBytes = 4096;
  // The most memory RE2 may use for the compiled program and its DFA caches.
  static constexpr int64_t kMaxMemBytes = 8 << 20;

  struct Options {
    bool case_insensitive = false;
  };
  // RE2 syntax (Perl-like: \b \d \w, (?:...), no backreferences, no lookaround).
  // The error is one line: "<why>" without the pattern, for the caller to name it.
  static std::expected<Pattern, std::string> compile(std::string_view pattern, Options opt);
  static std::expected<Pattern, std::string> compile(std::string_view pattern) { return compile(pattern, {}); }

  // True when the pattern matches anywhere in `text`.
  bool search(std::string_view text) const;
  // The first match in text[from..]: its start and length and the text of
  // its first capturing groups (empty when absent), or nullopt.
  struct Match {
    size_t pos = 0, len = 0;
    std::array<std::string_view, 3> groups;  // [0] the whole match
  };
  std::optional<Match> find(std::string_view text, size_t from = 0) const;
  // Every non-overlapping match replaced by `with` (taken literally).
  std::string replace_all(std::string_view text, std::string_view with) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const re2::RE2> re_;  // shared: copies are cheap and thread-safe to use
};

}  // namespace keet
