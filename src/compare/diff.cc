#include "compare/diff.h"

#include <ostream>

#include "util/json.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/source_costs.h"
#include "model/select.h"
#include "util/embedded_data.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::compare {
namespace {

std::vector<KeyMetric> load_key_metrics() {
  std::vector<KeyMetric> out;
  auto text = embedded_file("diff/key_metrics.json");
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return out;
  for (const auto& m : j.value("metrics", nlohmann::json::array()))
    out.push_back({m.value("metric", ""), m.value("quantity", ""), m.value("label", ""), m.value("unit", ""),
                   m.value("better", "") == "lower"});
  return out;
}

// The hottest source lines a finding names (SASS-only refs have no line).
constexpr size_t kFindingLinesKept = 3;

FindingSummary summarize(const analysis::Finding& f) {
  FindingSummary out{f.id, f.title, std::string(analysis::severity_name(f.severity)), f.estimated_speedup, {}};
  for (const auto& ref : f.source)
    if (!ref.file.empty() && ref.line > 0 && out.lines.size() < kFindingLinesKept)
      out.lines.push_back({ref.file, ref.line});
  return out;
}

nlohmann::json locations_json(const std::vector<SourceLocation>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : v) out.push_back({{"file", l.file}, {"line", l.line}});
  return out;
}

std::vector<std::string> finding_ids(const KernelSnapshot& s) {
  std::vector<std::string> ids;
  for (const auto& f : s.findings) ids.push_back(f.id);
  return ids;
}

// Ids of `a` missing from `b` (kept in `a`'s order, which is most impactful first).
std::vector<std::string> missing_from(const KernelSnapshot& a, const KernelSnapshot& b) {
  auto theirs = finding_ids(b);
  std::set<std::string> other(theirs.begin(), theirs.end());
  std::vector<std::string> out;
  for (const auto& id : finding_ids(a))
    if (!other.contains(id)) out.push_back(id);
  return out;
}

std::vector<MetricDelta> metric_deltas(const KernelSnapshot& a, const KernelSnapshot& b) {
  std::vector<MetricDelta> out;
  for (const auto& key : key_metrics()) {
    auto x = a.metrics.find(key.metric), y = b.metrics.find(key.metric);
    if (x == a.metrics.end() || y == b.metrics.end()) continue;
    MetricDelta d{key, x->second, y->second, std::nullopt};
    if (x->second != 0) d.change = y->second / x->second - 1;
    out.push_back(d);
  }
  // The largest value of each unit in the pair: 95 KB written more is nothing
  // beside 500 MB read, and ranks so.
  std::map<std::string, double> scale;
  for (const auto& d : out) scale[d.key.unit] = std::max({scale[d.key.unit], std::fabs(d.before), std::fabs(d.after)});
  for (auto& d : out) {
    double unit_scale = scale[d.key.unit];
    if (d.key.quantity == "duration_ns")
      d.weight = 0;  // the change itself, not a reason for it: listed last
    else if (d.rate())
      d.weight = std::fabs(d.points()) / 100;
    else
      d.weight = unit_scale > 0 ? std::fabs(d.after - d.before) / unit_scale : 0;
  }
  std::stable_sort(out.begin(), out.end(), [](auto& l, auto& r) { return l.weight > r.weight; });
  return out;
}

Verdict verdict_for(const PairDiff& p, double threshold, double min_delta_ns) {
  if (!p.change) return Verdict::Unknown;
  if (std::fabs(*p.change) <= threshold) return Verdict::Unchanged;
  if (std::fabs(*p.after.duration_ns - *p.before.duration_ns) < min_delta_ns) return Verdict::Unchanged;
  return *p.change < 0 ? Verdict::Faster : Verdict::Slower;
}

std::vector<PredictedGain> predicted_gains(const PairDiff& p) {
  std::vector<PredictedGain> out;
  if (!p.speedup) return out;
  for (const auto& f : p.before.findings) {
    bool resolved = std::ranges::find(p.resolved, f.id) != p.resolved.end();
    if (resolved && f.estimated_speedup) out.push_back({f.id, *f.estimated_speedup, *p.speedup});
  }
  return out;
}

// Index of the first unused kernel in `pool` that `want` accepts.
std::optional<size_t> first_unused(const std::vector<KernelSnapshot>& pool, const std::vector<bool>& used,
                                   const std::function<bool(const KernelSnapshot&)>& want) {
  for (size_t i = 0; i < pool.size(); ++i)
    if (!used[i] && want(pool[i])) return i;
  return std::nullopt;
}

std::optional<size_t> position_of(const std::vector<KernelSnapshot>& v, int index) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].index == index) return i;
  return std::nullopt;
}

struct Pairing {
  const std::vector<KernelSnapshot>& before;
  const std::vector<KernelSnapshot>& after;
  std::vector<bool> used_before, used_after;
  std::vector<KernelPair> pairs;

  void take(size_t i, size_t j, PairedBy by) {
    used_before[i] = used_after[j] = true;
    pairs.push_back({i, j, by});
  }
  // Pairs every unused BEFORE kernel with the first unused AFTER one `same` accepts.
  void match(const std::function<bool(const KernelSnapshot&, const KernelSnapshot&)>& same, PairedBy by) {
    for (size_t i = 0; i < before.size(); ++i) {
      if (used_before[i]) continue;
      auto j = first_unused(after, used_after, [&](const KernelSnapshot& s) { return same(before[i], s); });
      if (j) take(i, *j, by);
    }
  }
};

// Whether a report has a kernel of the same function (same_function) as `s`,
// answered from name sets so that two 20,000-kernel reports are never
// compared kernel by kernel. The views point into the report's snapshots.
class FunctionIndex {
 public:
  explicit FunctionIndex(const std::vector<KernelSnapshot>& report) {
    for (const auto& k : report) {
      names_.insert(k.display);
      if (k.mangled.empty())
        names_without_mangled_.insert(k.display);
      else
        mangled_.insert(k.mangled);
    }
  }
  bool has(const KernelSnapshot& s) const {
    // Two mangled names decide; a side without one falls back to display names.
    if (s.mangled.empty()) return names_.contains(s.display);
    return mangled_.contains(s.mangled) || names_without_mangled_.contains(s.display);
  }

 private:
  std::unordered_set<std::string_view> names_, names_without_mangled_, mangled_;
};

using LaunchKey = std::array<uint64_t, 6>;
LaunchKey launch_key(const KernelSnapshot& s) {
  return {s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z};
}

// Kernels whose function the other report lacks are what a rename leaves:
// the only kernel of each report pairs; else each pairs with the first one of
// the same launch configuration on the other side, in order of appearance.
// A kernel whose function the other report still has (a launch more or less
// of a kept kernel) is never taken for a renamed one.
void pair_renamed(Pairing& p) {
  if (p.before.size() == 1 && p.after.size() == 1) {
    if (!p.used_before[0] && !p.used_after[0]) p.take(0, 0, PairedBy::OnlyKernel);
    return;
  }
  FunctionIndex in_before(p.before), in_after(p.after);
  std::map<std::string, std::deque<size_t>> new_by_family;
  for (size_t j = 0; j < p.after.size(); ++j)
    if (!p.used_after[j] && !in_before.has(p.after[j])) new_by_family[function_family(p.after[j].display)].push_back(j);
  for (size_t i = 0; i < p.before.size(); ++i) {
    if (p.used_before[i] || in_after.has(p.before[i])) continue;
    auto it = new_by_family.find(function_family(p.before[i].display));
    if (it == new_by_family.end() || it->second.empty() || it->first.empty()) continue;
    p.take(i, it->second.front(), PairedBy::Family);
    it->second.pop_front();
  }
  std::map<LaunchKey, std::deque<size_t>> new_by_launch;
  for (size_t j = 0; j < p.after.size(); ++j)
    if (!p.used_after[j] && !in_before.has(p.after[j])) new_by_launch[launch_key(p.after[j])].push_back(j);
  for (size_t i = 0; i < p.before.size(); ++i) {
    if (p.used_before[i] || in_after.has(p.before[i])) continue;
    auto it = new_by_launch.find(launch_key(p.before[i]));
    if (it == new_by_launch.end() || it->second.empty()) continue;
    p.take(i, it->second.front(), PairedBy::LaunchConfigOrder);
    it->second.pop_front();
  }
}

// Each unmatched kernel before, in order, with the first unmatched one after
// of the same block size (a rename often changes the grid, seldom the block),
// else the first one left.
std::vector<std::pair<int, int>> suggest_pairs(const std::vector<KernelSnapshot>& before,
                                               const std::vector<KernelSnapshot>& after) {
  std::vector<std::pair<int, int>> out;
  std::vector<bool> taken(after.size());
  for (const auto& b : before) {
    if (out.size() == kSuggestedPairs) break;
    auto j = first_unused(after, taken, [&](const KernelSnapshot& a) { return a.block == b.block; });
    if (!j) j = first_unused(after, taken, [](const KernelSnapshot&) { return true; });
    if (!j) break;
    taken[*j] = true;
    out.emplace_back(b.index, after[*j].index);
  }
  return out;
}

nlohmann::json opt_number(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json metric_delta_json(const MetricDelta& d) {
  nlohmann::json j = {{"metric", d.key.metric}, {"label", d.key.label}, {"unit", d.key.unit},
                      {"before", d.before},     {"after", d.after},     {"change", opt_number(d.change)},
                      {"weight", d.weight}};
  if (d.rate()) j["points"] = d.points();
  return j;
}

nlohmann::json pair_json(const PairDiff& p) {
  nlohmann::json metrics = nlohmann::json::array(), predicted = nlohmann::json::array();
  for (const auto& m : p.metrics) metrics.push_back(metric_delta_json(m));
  for (const auto& g : p.predicted)
    predicted.push_back({{"finding", g.finding}, {"predicted_speedup", g.predicted}, {"measured_speedup", g.measured}});
  return {{"before", snapshot_json(p.before)},
          {"after", snapshot_json(p.after)},
          {"paired_by", paired_by_name(p.paired_by)},
          {"speedup", opt_number(p.speedup)},
          {"change", opt_number(p.change)},
          {"verdict", verdict_name(p.verdict)},
          {"resolved", p.resolved},
          {"introduced", p.introduced},
          {"persisting", p.persisting},
          {"bottleneck", {{"before", p.before.bottleneck}, {"after", p.after.bottleneck}}},
          {"metrics", metrics},
          {"predicted_vs_measured", predicted}};
}

nlohmann::json snapshots_json(const std::vector<KernelSnapshot>& v) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& s : v) arr.push_back(snapshot_json(s));
  return arr;
}

nlohmann::json index_pairs_json(const std::vector<std::pair<int, int>>& v) {
  nlohmann::json arr = nlohmann::json::array();
  for (auto [i, j] : v) arr.push_back({i, j});
  return arr;
}

}  // namespace

std::string KernelSnapshot::identity() const { return display + " " + launch_text(); }

const std::vector<KeyMetric>& key_metrics() {
  static const std::vector<KeyMetric> table = load_key_metrics();
  return table;
}

KernelSnapshot snapshot(const model::Kernel& k, const analysis::KernelDiagnosis* d, const model::Report* report) {
  // Names as valid UTF-8, as the history store keeps them (JSON), so a fresh
  // snapshot and a stored one of the same kernel compare equal.
  KernelSnapshot s{analysis::identity_of(k), "", {}, {}, {}};
  s.display = valid_utf8(s.display);
  s.mangled = valid_utf8(s.mangled);
  for (const auto& key : key_metrics()) {
    auto id = analysis::quantity_id(key.quantity);
    if (auto v = id ? analysis::metric_quantity(k, *id) : k.number(key.metric)) s.metrics[key.metric] = *v;
  }
  if (auto at = report ? analysis::kernel_location(*report, k) : std::nullopt) s.source = {at->file, at->line};
  if (!d) return s;
  s.bottleneck = std::string(analysis::class_name(d->bottleneck.cls));
  for (const auto& f : d->findings) s.findings.push_back(summarize(f));
  if (s.device.empty()) s.device = d->device;
  return s;
}

std::vector<KernelSnapshot> snapshots(const model::Report& r, const analysis::Diagnosis& d) {
  std::vector<KernelSnapshot> out;
  for (const auto& k : r.kernels) {
    auto it = std::ranges::find_if(d.kernels, [&](const auto& kd) { return kd.index == k.index; });
    if (!d.kernels.empty() && it == d.kernels.end()) continue;
    out.push_back(snapshot(k, it == d.kernels.end() ? nullptr : &*it, &r));
  }
  return out;
}

std::vector<KernelSnapshot> select_snapshots(const std::vector<KernelSnapshot>& v, std::string_view spec) {
  auto sel = model::KernelSelector::parse(spec);
  if (!sel || sel->all()) return v;  // a bad -k already failed on the report
  std::vector<KernelSnapshot> out;
  for (const auto& s : v) {
    model::Kernel k;
    k.index = s.index;
    k.demangled = s.display;
    k.mangled = s.mangled;
    if (sel->matches(k)) out.push_back(s);
  }
  return out;
}

std::string_view verdict_name(Verdict v) {
  static constexpr std::string_view names[] = {"faster", "slower", "unchanged", "unknown"};
  return names[static_cast<int>(v)];
}

std::string_view paired_by_name(PairedBy b) {
  static constexpr std::string_view names[] = {"name", "forced", "only_kernel", "launch_config_order", "family"};
  return names[static_cast<int>(b)];
}

std::string function_family(std::string_view display) {
  std::string name(display.substr(0, display.find('(')));
  std::string out;
  int depth = 0;
  for (char c : name) {
    if (c == '<')
      ++depth;
    else if (c == '>')
      depth = std::max(0, depth - 1);
    else if (depth == 0)
      out += c;
  }
  // "void f", "std::enable_if<...>::type f": the last word is the function.
  if (auto space = out.find_last_of(' '); space != std::string::npos) out.erase(0, space + 1);
  // Library namespaces that carry their version (CUB_200301_SM_800_NS) name one library.
  static const Pattern version = *Pattern::compile(R"(CUB_\d+_[A-Za-z0-9_]*?_NS)");
  static const Pattern policy = *Pattern::compile(R"(_policy\d+)");
  out = policy.replace_all(version.replace_all(out, "CUB"), "");
  while (!out.empty() && std::isdigit(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

std::optional<PairedBy> paired_by_from_name(std::string_view name) {
  for (auto b : {PairedBy::Name, PairedBy::Forced, PairedBy::OnlyKernel, PairedBy::LaunchConfigOrder, PairedBy::Family})
    if (paired_by_name(b) == name) return b;
  return std::nullopt;
}

std::string PairDiff::bottleneck_shift() const {
  if (before.bottleneck == after.bottleneck || before.bottleneck.empty() || after.bottleneck.empty()) return "";
  return fmt::format("{}-bound -> {}-bound", before.bottleneck, after.bottleneck);
}

Result<void> check_forced_pairs(const std::vector<KernelSnapshot>& before, const std::vector<KernelSnapshot>& after,
                                const std::vector<std::pair<int, int>>& forced, std::string_view before_name,
                                std::string_view after_name) {
  std::set<int> seen_before, seen_after;
  for (auto [i, j] : forced) {
    std::string pair = fmt::format("--pair {}:{}", i, j);
    if (!position_of(before, i))
      return fail(ExitCode::BadInput,
                  fmt::format("{}: the {} has no kernel {} ({} kernels)", pair, before_name, i, before.size()));
    if (!position_of(after, j))
      return fail(ExitCode::BadInput,
                  fmt::format("{}: the {} has no kernel {} ({} kernels)", pair, after_name, j, after.size()));
    if (!seen_before.insert(i).second || !seen_after.insert(j).second)
      return fail(ExitCode::BadInput, fmt::format("{}: a kernel is paired twice", pair));
  }
  return {};
}

std::vector<KernelPair> pair_kernels(const std::vector<KernelSnapshot>& before,
                                     const std::vector<KernelSnapshot>& after,
                                     const std::vector<std::pair<int, int>>& forced, Matching matching) {
  Pairing p{before, after, std::vector<bool>(before.size()), std::vector<bool>(after.size()), {}};
  for (auto [i, j] : forced) {
    auto a = position_of(before, i), b = position_of(after, j);
    if (a && b && !p.used_before[*a] && !p.used_after[*b]) p.take(*a, *b, PairedBy::Forced);
  }
  p.match([](const auto& a, const auto& b) { return a.same_function(b); }, PairedBy::Name);
  if (matching == Matching::NameThenRenamed) pair_renamed(p);
  return p.pairs;
}

PairDiff compare_pair(KernelSnapshot before_in, KernelSnapshot after_in, double threshold, double min_delta_ns) {
  PairDiff p{std::move(before_in), std::move(after_in)};
  const KernelSnapshot& before = p.before;
  const KernelSnapshot& after = p.after;
  if (before.duration_ns && after.duration_ns && *before.duration_ns > 0 && *after.duration_ns > 0) {
    p.speedup = *before.duration_ns / *after.duration_ns;
    p.change = *after.duration_ns / *before.duration_ns - 1;
  }
  p.verdict = verdict_for(p, threshold, min_delta_ns);
  p.resolved = missing_from(before, after);
  p.introduced = missing_from(after, before);
  for (const auto& id : finding_ids(after))
    if (std::ranges::find(p.introduced, id) == p.introduced.end()) p.persisting.push_back(id);
  p.metrics = metric_deltas(before, after);
  p.predicted = predicted_gains(p);
  return p;
}

// The snapshots move into the result: two 20,000-kernel reports are held once.
DiffResult diff(std::vector<KernelSnapshot> before, std::vector<KernelSnapshot> after, const DiffOptions& opt) {
  DiffResult r{opt.threshold, opt.min_delta_ns, {}, {}, {}, {}};
  std::vector<bool> used_before(before.size()), used_after(after.size());
  for (auto [i, j, by] : pair_kernels(before, after, opt.forced, opt.matching)) {
    r.pairs.push_back(compare_pair(std::move(before[i]), std::move(after[j]), opt.threshold, opt.min_delta_ns));
    r.pairs.back().paired_by = by;
    used_before[i] = used_after[j] = true;
  }
  for (size_t i = 0; i < before.size(); ++i)
    if (!used_before[i]) r.unmatched_before.push_back(std::move(before[i]));
  for (size_t j = 0; j < after.size(); ++j)
    if (!used_after[j]) r.unmatched_after.push_back(std::move(after[j]));
  r.suggested_pairs = suggest_pairs(r.unmatched_before, r.unmatched_after);
  return r;
}

std::optional<double> parse_fraction(std::string_view text) {
  auto t = trim(text);
  bool percent = !t.empty() && t.back() == '%';
  auto v = parse_number(percent ? trim(t.substr(0, t.size() - 1)) : t);
  if (!v || *v < 0 || !std::isfinite(*v)) return std::nullopt;
  return (percent || *v > 1) ? *v / 100 : *v;
}

std::optional<double> parse_duration_ns(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1},        {"us", 1e3}, {"\u00b5s", 1e3},
                                                                   {"\u03bcs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  auto t = trim(text);
  for (auto [suffix, scale] : kUnits) {
    if (!t.ends_with(suffix)) continue;
    auto v = parse_number(trim(t.substr(0, t.size() - suffix.size())));
    if (!v || *v < 0 || !std::isfinite(*v)) return std::nullopt;
    return *v * scale;
  }
  auto bare = parse_number(t);
  if (bare && *bare == 0) return 0.0;
  return std::nullopt;
}

std::optional<std::pair<int, int>> parse_pair(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto index = [](std::string_view part) -> std::optional<int> {
    if (part.empty() || part.size() > 9 || !std::ranges::all_of(part, [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::stoi(std::string(part));
  };
  auto i = index(text.substr(0, colon)), j = index(text.substr(colon + 1));
  if (!i || !j) return std::nullopt;
  return std::pair{*i, *j};
}

nlohmann::json snapshot_json(const KernelSnapshot& s) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : s.findings)
    findings.push_back({{"id", f.id},
                        {"title", f.title},
                        {"severity", f.severity},
                        {"estimated_speedup", opt_number(f.estimated_speedup)},
                        {"lines", locations_json(f.lines)}});
  nlohmann::json source = nullptr;
  if (!s.source.empty()) source = {{"file", s.source.file}, {"line", s.source.line}};
  return {{"index", s.index},
          {"name", s.display},
          {"mangled", s.mangled},
          {"source", source},
          {"grid", {s.grid.x, s.grid.y, s.grid.z}},
          {"block", {s.block.x, s.block.y, s.block.z}},
          {"device", s.device},
          {"duration_ns", opt_number(s.duration_ns)},
          {"bottleneck", s.bottleneck.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.bottleneck)},
          {"metrics", s.metrics},
          {"findings", findings}};
}

std::optional<KernelSnapshot> snapshot_from_json(const nlohmann::json& j) {
  try {
    KernelSnapshot s;
    s.index = j.at("index").get<int>();
    s.display = j.at("name").get<std::string>();
    s.mangled = j.value("mangled", "");
    if (auto src = j.find("source"); src != j.end() && src->is_object())
      s.source = {src->value("file", ""), src->value("line", 0)};
    auto dim = [](const nlohmann::json& a) {
      return model::Dim3{a.at(0).get<uint64_t>(), a.at(1).get<uint64_t>(), a.at(2).get<uint64_t>()};
    };
    s.grid = dim(j.at("grid"));
    s.block = dim(j.at("block"));
    s.device = j.value("device", "");
    if (j.contains("duration_ns") && j["duration_ns"].is_number()) s.duration_ns = j["duration_ns"].get<double>();
    if (j.contains("bottleneck") && j["bottleneck"].is_string()) s.bottleneck = j["bottleneck"].get<std::string>();
    s.metrics = j.value("metrics", std::map<std::string, double>{});
    for (const auto& f : j.value("findings", nlohmann::json::array())) {
      FindingSummary fs{f.at("id").get<std::string>(), f.value("title", ""), f.value("severity", ""), std::nullopt, {}};
      if (f.contains("estimated_speedup") && f["estimated_speedup"].is_number())
        fs.estimated_speedup = f["estimated_speedup"].get<double>();
      for (const auto& l : f.value("lines", nlohmann::json::array()))
        fs.lines.push_back({l.at("file").get<std::string>(), l.at("line").get<int>()});
      s.findings.push_back(fs);
    }
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged stored record is skipped, never a crash
  }
}

namespace {
nlohmann::json diff_summary_json(const DiffResult& d) {
  int verdicts[4] = {};
  for (const auto& p : d.pairs) ++verdicts[static_cast<int>(p.verdict)];
  nlohmann::json summary = {
      {"pairs", d.pairs.size()}, {"missing", d.unmatched_before.size()}, {"new", d.unmatched_after.size()}};
  for (int v = 0; v < 4; ++v) summary[std::string(verdict_name(static_cast<Verdict>(v)))] = verdicts[v];
  return summary;
}
}  // namespace

// Member by member in the (sorted) order one dump of diff_json() writes them.
void write_diff_json(std::ostream& out, const DiffResult& d) {
  JsonObjectStream doc(out, 2);
  doc.member("min_delta_ns", d.min_delta_ns);
  auto pairs = doc.array_member("pairs");
  for (const auto& p : d.pairs) pairs.add(pair_json(p));
  pairs.close();
  doc.member("schema", "keet.diff/1");
  doc.member("suggested_pairs", index_pairs_json(d.suggested_pairs));
  doc.member("summary", diff_summary_json(d));
  doc.member("threshold", d.threshold);
  doc.member("unmatched_after", snapshots_json(d.unmatched_after));
  doc.member("unmatched_before", snapshots_json(d.unmatched_before));
  doc.close();
}

nlohmann::json diff_json(const DiffResult& d) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : d.pairs) pairs.push_back(pair_json(p));
  return {{"schema", "keet.diff/1"},
          {"threshold", d.threshold},
          {"min_delta_ns", d.min_delta_ns},
          {"summary", diff_summary_json(d)},
          {"pairs", pairs},
          {"unmatched_before", snapshots_json(d.unmatched_before)},
          {"unmatched_after", snapshots_json(d.unmatched_after)},
          {"suggested_pairs", index_pairs_json(d.suggested_pairs)}};
}

}  // namespace keet::compare
