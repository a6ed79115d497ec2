#include "analysis/report_view.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/libraries.h"
#include "model/units.h"
#include "util/strings.h"

namespace keet::analysis {
namespace {

// A comparison needs a difference larger than launch jitter to say anything.
constexpr double kSlowerAtLeast = 1.5;
// Setup and fill kernels are worth a sentence once they take this much of the run.
constexpr double kSetupShareAtLeast = 0.10;
// A launch-shape table says something only with two shapes that both ran long
// enough to be timed apart from launch jitter.
constexpr double kShapeMinNs = 2000;
constexpr size_t kShapeRows = 8;
// "More blocks" means at least this many times as many.
constexpr double kMoreBlocks = 1.5;
// Hand-written kernels compared with a library kernel, the longest first.
constexpr size_t kBesideShown = 3;

std::string short_name(const std::string& display) { return abbreviate_name(display, 60); }

double threads(const model::Dim3& grid, const model::Dim3& block) {
  return static_cast<double>(grid.product()) * static_cast<double>(block.product());
}

std::string shape_text(const LaunchShapeRow& r) {
  return fmt::format("grid ({},{},{}) x block ({},{},{})", r.grid.x, r.grid.y, r.grid.z, r.block.x, r.block.y,
                     r.block.z);
}

// What a kernel's shapes prove: whether more blocks over the same threads (the
// classic small-grid fix) helped; otherwise which shape does a thread's work
// fastest (the shapes may launch different amounts of work).
std::string shape_verdict(const std::vector<LaunchShapeRow>& rows) {
  for (const auto& a : rows)
    for (const auto& b : rows) {
      if (static_cast<double>(b.grid.product()) < kMoreBlocks * static_cast<double>(a.grid.product())) continue;
      double ta = threads(a.grid, a.block), tb = threads(b.grid, b.block);
      if (ta <= 0 || std::abs(tb - ta) > 0.1 * ta) continue;
      std::string what =
          fmt::format("{} blocks over the same {:.0f} threads took {} against {} with {}", b.grid.product(), ta,
                      model::readable_duration(b.median_ns), model::readable_duration(a.median_ns), a.grid.product());
      if (b.median_ns >= 0.9 * a.median_ns)
        return what + ": more blocks did not help, each thread's own work sets the time";
      return what + fmt::format(": {:.2f}x faster with more blocks", a.median_ns / b.median_ns);
    }
  const LaunchShapeRow* best = &rows.front();
  double lo = threads(rows.front().grid, rows.front().block), hi = lo;
  for (const auto& r : rows) {
    double t = threads(r.grid, r.block);
    lo = std::min(lo, t), hi = std::max(hi, t);
    if (t > 0 && r.median_ns / t < best->median_ns / threads(best->grid, best->block)) best = &r;
  }
  if (hi > 1.1 * lo)
    return fmt::format(
        "The shapes launch {:.0f} to {:.0f} threads, so they may do different work; per thread, #{} ({}) is fastest "
        "at {:.3g} ns",
        lo, hi, best->index, shape_text(*best), best->median_ns / threads(best->grid, best->block));
  return fmt::format("Fastest: {} at {}; the slowest shape takes {:.2f}x as long", shape_text(rows.front()),
                     model::readable_duration(rows.front().median_ns), rows.back().vs_fastest);
}

}  // namespace

void ReportSurvey::add(const model::Kernel& k) {
  configurations_.add(k);
  const std::string& name = k.display_name();
  auto it = position_.find(name);
  if (it == position_.end()) {
    it = position_.emplace(name, families_.size()).first;
    Family f{name, "", "", false, k.index, 0, 0, 0};
    if (auto lib = library_kernel(k)) f.library = lib->library, f.primitive = lib->primitive, f.setup = lib->setup;
    families_.push_back(std::move(f));
  }
  Family& f = families_[it->second];
  ++f.launches;
  if (auto d = kernel_duration_ns(k)) f.total_ns += *d, ++f.timed, total_ns_ += *d;
}

ReportView ReportSurvey::view() const {
  ReportView v;
  auto mean = [](const Family& f) { return f.total_ns / f.timed; };
  // A hand-written kernel beside the library kernel of the same operation.
  std::vector<const Family*> users;
  for (const auto& f : families_)
    if (f.library.empty() && f.timed > 0) users.push_back(&f);
  std::ranges::stable_sort(users, [](const Family* a, const Family* b) { return a->total_ns > b->total_ns; });
  size_t beside = 0;
  for (const Family* u : users) {
    if (beside == kBesideShown) break;
    const Family& user = *u;
    const UserFamily* fam = user_family(user.display);
    if (!fam) continue;
    for (const auto& lib : families_) {
      if (lib.timed == 0 || lib.library.empty() || !lib.primitive.starts_with(fam->primitive)) continue;
      double ratio = mean(user) / mean(lib);
      if (ratio < kSlowerAtLeast) continue;
      v.comparisons.push_back(
          {"library_beside_user",
           fmt::format("#{} {} takes {:.1f}x as long as {}'s {} #{} here ({} against {} a launch): {}.", user.index,
                       short_name(user.display), ratio, lib.library, lib.primitive, lib.index,
                       model::readable_duration(mean(user)), model::readable_duration(mean(lib)), fam->advice),
           {user.index, lib.index}});
      ++beside;
      break;
    }
  }
  // Setup and fill kernels against the work they serve.
  double setup_ns = 0;
  std::vector<const Family*> setup;
  for (const auto& f : families_)
    if (f.setup && f.timed) setup.push_back(&f), setup_ns += f.total_ns;
  if (total_ns_ > 0 && setup_ns / total_ns_ >= kSetupShareAtLeast) {
    std::ranges::sort(setup, [](const Family* a, const Family* b) { return a->total_ns > b->total_ns; });
    std::string parts;
    std::vector<int> indices;
    for (const Family* f : setup) {
      parts += fmt::format("{}{} {} #{} {:.1f}%", parts.empty() ? "" : ", ", f->library, f->primitive, f->index,
                           100 * f->total_ns / total_ns_);
      indices.push_back(f->index);
    }
    v.comparisons.push_back(
        {"setup_share",
         fmt::format("Setup and fill kernels take {:.1f}% of the kernel time ({}), against {:.1f}% for the work they "
                     "serve: make them once and reuse what they prepare, or skip a fill the next kernel overwrites.",
                     100 * setup_ns / total_ns_, parts, 100 * (total_ns_ - setup_ns) / total_ns_),
         indices});
  }
  // One kernel at several launch shapes.
  std::map<std::string, std::vector<LaunchShapeRow>, std::less<>> by_name;
  std::vector<std::string> order;
  for (const auto& c : configurations_.summaries()) {
    if (c.timed == 0 || c.median_ns < kShapeMinNs) continue;
    auto [it, fresh] = by_name.try_emplace(c.display);
    if (fresh) order.push_back(c.display);
    it->second.push_back({c.index, c.grid, c.block, c.indices.size(), c.median_ns, 1});
  }
  for (const auto& name : order) {
    auto rows = by_name[name];
    if (rows.size() < 2) continue;
    std::ranges::sort(rows, {}, &LaunchShapeRow::median_ns);
    for (auto& r : rows) r.vs_fastest = r.median_ns / rows.front().median_ns;
    if (rows.size() > kShapeRows) rows.resize(kShapeRows);
    auto verdict = shape_verdict(rows);
    v.shapes.push_back({name, std::move(rows), std::move(verdict)});
  }
  return v;
}

}  // namespace keet::analysis
