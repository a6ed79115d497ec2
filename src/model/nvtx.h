// NVTX ranges open at a kernel's launch (ncu --nvtx stores them with each
// result) and ncu's --nvtx-include/--nvtx-exclude filters over them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace keet::model {

struct NvtxState {
  // The launching thread's push/pop stack in one domain, bottom first.
  struct Stack {
    std::string domain;  // "" for the default domain
    std::vector<std::string> ranges;
  };
  // A start/end range open at the launch (any thread).
  struct Range {
    std::string domain;
    std::string name;
  };
  std::vector<Stack> push_pop;
  std::vector<Range> start_end;
};

struct Kernel;

// ncu's filter expressions, as its --help and documentation give them:
//   "Domain A@Range A"  start/end range 'Range A' of 'Domain A' ("Range A":
//                       of the default domain);
//   "Range A/"          push/pop range 'Range A' anywhere on the stack;
//   "A/B/"              'B' pushed directly inside 'A'; "A/*/B/": any ranges
//                       between them;
//   "[A/"               'A' at the bottom of the stack; "A]" at its top;
//                       "[A/B]" the whole stack.
// A domain prefix applies to push/pop expressions too ("Domain@A/"). A kernel
// is taken when it matches every include expression and no exclude one.
class NvtxExpression {
 public:
  static Result<NvtxExpression> parse(std::string_view text);
  bool matches(const NvtxState& s) const;

 private:
  bool matches_stack(const std::vector<std::string>& stack) const;
  std::string domain_;
  bool push_pop_ = false, bottom_ = false, top_ = false;
  std::vector<std::string> parts_;  // push/pop ranges bottom first, "*" for any run; or one start/end name
};

class NvtxFilter {
 public:
  static Result<NvtxFilter> parse(const std::vector<std::string>& include, const std::vector<std::string>& exclude);
  bool active() const { return !include_.empty() || !exclude_.empty(); }
  bool matches(const NvtxState& s) const;

 private:
  std::vector<NvtxExpression> include_, exclude_;
};

}  // namespace keet::model
