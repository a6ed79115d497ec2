#include "app/safe_output.h"

#include <algorithm>
#include <cerrno>

#include "util/terminal.h"

namespace keet::app {

std::streambuf::int_type SafeOutput::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  pending_.push_back(traits_type::to_char_type(c));
  if (pending_.size() >= kChunk && !drain(false)) return traits_type::eof();
  return c;
}

// Taken in chunks: a command that writes its whole answer at once (hundreds
// of megabytes of JSON) must not have it copied here whole.
std::streamsize SafeOutput::xsputn(const char* s, std::streamsize n) {
  std::streamsize done = 0;
  if (pending_.empty()) {  // what needs no filtering goes straight through, uncopied
    auto clean = static_cast<std::streamsize>(terminal_clean_prefix({s, static_cast<size_t>(n)}));
    if (clean > 0) {
      if (failed_) return 0;
      if (to_->sputn(s, clean) != clean) {
        fail();
        return 0;
      }
      done = clean;
    }
  }
  while (done < n) {
    auto part = std::min<std::streamsize>(n - done, kChunk);
    pending_.append(s + done, static_cast<size_t>(part));
    done += part;
    if (pending_.size() >= kChunk && !drain(false)) return 0;
  }
  return n;
}

int SafeOutput::sync() {
  if (!drain(true)) return -1;
  if (to_->pubsync() != 0) fail();
  return failed_ ? -1 : 0;
}

void SafeOutput::fail() {
  if (!failed_) errno_ = errno;
  failed_ = true;
}

bool SafeOutput::drain(bool final) {
  out_.clear();
  size_t used = append_terminal_safe(out_, pending_, keep_sgr_, final);
  pending_.erase(0, used);
  if (failed_) return false;  // never write after a gap: the output would lie
  auto n = static_cast<std::streamsize>(out_.size());
  if (to_->sputn(out_.data(), n) != n) fail();
  return !failed_;
}

}  // namespace keet::app
