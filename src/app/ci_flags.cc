#include "app/ci_flags.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace keet::app {

Result<double> duration_flag(const std::string& flag, const std::string& text) {
  auto v = compare::parse_duration_ns(text);
  if (!v)
    return fail(ExitCode::BadInput,
                fmt::format("{}: '{}' is not a duration (e.g. 2us; units ns, us, ms, s)", flag, text));
  return *v;
}

Result<std::vector<std::pair<int, int>>> pair_flags(const std::vector<std::string>& texts) {
  std::vector<std::pair<int, int>> out;
  for (const auto& t : texts) {
    auto p = compare::parse_pair(t);
    if (!p) return fail(ExitCode::BadInput, fmt::format("--pair: '{}' is not BEFORE_INDEX:AFTER_INDEX (e.g. 0:2)", t));
    out.push_back(*p);
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

}  // namespace keet::app
