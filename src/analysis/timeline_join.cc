#include "analysis/timeline_join.h"

#include "util/strings.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace keet::analysis {
namespace {

// ncu and nsys demangle with different spacing ("int *" / "int*").
std::string squeeze(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

// The timeline kernels one profiled kernel stands for: those with its
// demangled name, else those with its function (base) name.
std::vector<size_t> matches(const model::TimelineSummary& t, const ProfiledKernel& p) {
  std::vector<size_t> found;
  std::string demangled = squeeze(p.demangled);
  for (size_t i = 0; i < t.kernels.size() && !demangled.empty(); ++i)
    if (squeeze(t.kernels[i].name) == demangled) found.push_back(i);
  if (!found.empty() || p.function.empty()) return found;
  for (size_t i = 0; i < t.kernels.size(); ++i)
    if (t.kernels[i].short_name == p.function || t.kernels[i].name == p.function) found.push_back(i);
  return found;
}

std::vector<std::string> ncu_options(const model::KernelSummary& k) {
  std::vector<std::string> o = {"-k", k.short_name.empty() ? k.name : k.short_name};
  // The first launch runs cold (caches, clocks, lazy module loading).
  if (k.time.count > 1) o.insert(o.end(), {"--launch-skip", "1"});
  o.insert(o.end(), {"--launch-count", "1"});
  return o;
}

}  // namespace

std::optional<double> drift_growth(const model::KernelSummary& k) {
  if (k.time.count < kMinDriftLaunches) return std::nullopt;
  auto [early, late] = k.drift.early_late_means();
  if (early <= 0) return std::nullopt;
  return late / early - 1;
}

bool drifting(const model::KernelSummary& k, double threshold) {
  auto g = drift_growth(k);
  return g && *g >= threshold;
}

ProfiledKernel profiled_kernel(const model::Kernel& k, const KernelDiagnosis& d) {
  ProfiledKernel p{d, k.function, k.demangled, {}};
  for (const auto& f : d.findings)
    if (f.estimated_speedup && *f.estimated_speedup > 1) p.gains.push_back({f.id, f.title, *f.estimated_speedup});
  return p;
}

double app_speedup(double share, double kernel_speedup) {
  if (kernel_speedup <= 0) return 1;
  return 1 / ((1 - share) + share / kernel_speedup);
}

TimelineJoin join_timeline(const model::TimelineSummary& t, const std::vector<ProfiledKernel>& profiled,
                           double threshold) {
  TimelineJoin j{.timeline = t.meta.path,
                 .gpu_time_ns = t.kernel_ns,
                 .span_ns = t.span_ns(),
                 .busy_ns = t.gpu_busy_ns,
                 .threshold = threshold,
                 .run = diagnose_run(t)};
  auto busy_share = [&](int64_t ns) {
    return t.gpu_busy_ns > 0 ? static_cast<double>(ns) / static_cast<double>(t.gpu_busy_ns) : 0.0;
  };
  std::set<size_t> covered;
  for (const auto& p : profiled) {
    JoinedKernel jk{.index = p.index, .name = p.display_name()};
    for (size_t i : matches(t, p)) {
      covered.insert(i);
      jk.in_timeline = true;
      jk.gpu_share += t.gpu_share(t.kernels[i]);
      jk.span_share += t.span_share(t.kernels[i]);
      jk.launches += t.kernels[i].time.count;
      jk.total_ns += t.kernels[i].time.total_ns;
    }
    jk.busy_share = busy_share(jk.total_ns);
    for (const auto& g : p.gains)
      jk.gains.push_back({g.finding, g.title, g.kernel_speedup, app_speedup(jk.gpu_share, g.kernel_speedup)});
    std::ranges::stable_sort(jk.gains, [](const auto& a, const auto& b) { return a.app_speedup > b.app_speedup; });
    j.kernels.push_back(std::move(jk));
  }
  std::ranges::stable_sort(j.kernels, [](const auto& a, const auto& b) { return a.gpu_share > b.gpu_share; });
  for (size_t i : covered) {
    j.coverage += t.gpu_share(t.kernels[i]);
    j.span_coverage += t.span_share(t.kernels[i]);
    j.busy_coverage += busy_share(t.kernels[i].time.total_ns);
  }
  j.low_coverage = t.kernel_ns > 0 && j.coverage < threshold;
  for (size_t i = 0; i < t.kernels.size() && j.not_profiled.size() < TimelineJoin::kMaxHot; ++i) {
    if (covered.contains(i)) continue;
    const auto& k = t.kernels[i];  // t.kernels is hottest first
    if (t.gpu_share(k) <= 0) break;
    j.not_profiled.push_back({k.name, k.short_name, t.gpu_share(k), k.time.count, ncu_options(k)});
  }
  return j;
}

std::string coverage_warning(const TimelineJoin& j) {
  if (!j.low_coverage) return "";
  std::vector<std::string> hot;
  for (const auto& h : j.not_profiled) {
    if (hot.size() == 3) break;
    std::vector<std::string> words;
    for (const auto& o : h.ncu_options) words.push_back(shell_word(o));
    hot.push_back(fmt::format("{} ({:.1f}%, {} launches; ncu {})", h.short_name.empty() ? h.name : h.short_name,
                              100 * h.gpu_share, h.launches, fmt::join(words, " ")));
  }
  return fmt::format(
      "the profiled kernels cover {:.1f}% of the GPU kernel time in {} (threshold {:.0f}%): the diagnosis may "
      "miss where the time goes; not profiled: {}",
      100 * j.coverage, j.timeline, 100 * j.threshold,
      hot.empty() ? "(no other kernel ran)" : fmt::format("{}", fmt::join(hot, "; ")));
}

std::string function_of(std::string_view d) {
  auto paren = d.find('(');
  std::string_view head = d.substr(0, paren);
  int depth = 0;  // drop template arguments, then the return type and scopes
  std::string bare;
  for (char c : head) {
    if (c == '<')
      ++depth;
    else if (c == '>')
      depth = std::max(0, depth - 1);
    else if (depth == 0)
      bare += c;
  }
  auto cut = bare.find_last_of(" :");
  return cut == std::string::npos ? bare : bare.substr(cut + 1);
}

ChangeView weigh_changes(const model::TimelineSummary& t,
                         const std::vector<std::pair<std::string, std::optional<double>>>& name_change,
                         double threshold) {
  std::vector<ProfiledKernel> profiled;
  std::map<std::string, std::pair<double, int>> changes;  // name -> (sum, pairs)
  for (size_t i = 0; i < name_change.size(); ++i) {
    const auto& [name, change] = name_change[i];
    ProfiledKernel p;
    p.index = static_cast<int>(i);
    p.function = function_of(name);
    p.demangled = name;
    p.display = name.empty() ? p.function : name;
    profiled.push_back(std::move(p));
    if (!change) continue;
    auto& c = changes[name];
    c.first += *change;
    ++c.second;
  }
  ChangeView v{join_timeline(t, profiled, threshold), {}, 0};
  std::set<std::string> seen;
  for (const auto& k : v.join.kernels) {
    auto it = changes.find(k.name);
    if (!k.in_timeline || it == changes.end() || !seen.insert(k.name).second) continue;
    double change = it->second.first / it->second.second;
    v.kernels.push_back({k.name, k.gpu_share, change, k.gpu_share * change});
    v.app_change += k.gpu_share * change;
  }
  std::ranges::stable_sort(
      v.kernels, [](const auto& a, const auto& b) { return std::abs(a.app_change) > std::abs(b.app_change); });
  return v;
}

}  // namespace keet::analysis
