// The stream buffer behind keet's real stdout and stderr: every byte passes
// the terminal sanitiser (util/terminal.h) on its way out, and a failed write
// (full disk, closed pipe) is remembered so that keet can exit non-zero
// instead of reporting success over a half-written answer.
#pragma once
#include <streambuf>
#include <string>

namespace keet::app {

class SafeOutput : public std::streambuf {
 public:
  // keep_sgr: let colour sequences through (only when KEET paints, on a tty).
  SafeOutput(std::streambuf* to, bool keep_sgr) : to_(to), keep_sgr_(keep_sgr) {}
  ~SafeOutput() override { sync(); }
  // False once any write to the underlying buffer came up short.
  bool ok() const { return !failed_; }
  int error() const { return errno_; }  // errno of the first failed write, 0 if unknown

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool drain(bool final);
  void fail();

  static constexpr size_t kChunk = 64 * 1024;
  std::streambuf* to_;
  bool keep_sgr_;
  bool failed_ = false;
  int errno_ = 0;
  std::string pending_;  // written to us, not yet filtered
  std::string out_;      // filtered, being written
};

}  // namespace keet::app
