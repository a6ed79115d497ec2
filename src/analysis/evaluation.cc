#include "analysis/evaluation.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis/engine.h"

namespace keet::analysis {
namespace {

constexpr std::string_view kOracle = "oracle:";
constexpr std::string_view kOracle2024 = "oracle-2024.1:";

std::string resolve(const std::string& report, const std::string& root, const std::string& oracle,
                    const std::string& oracle2024) {
  if (report.starts_with(kOracle2024))
    return oracle2024.empty() ? "" : oracle2024 + "/" + report.substr(kOracle2024.size());
  if (report.starts_with(kOracle)) return oracle.empty() ? "" : oracle + "/" + report.substr(kOracle.size());
  return root + "/" + report;
}

// The engine's binding unit. The limiter field arrives with the engine rework;
// until then this compiles to "" so the eval still builds and scores classes.
template <class D>
std::string binding_unit(const D& d) {
  if constexpr (requires { d.limiter.binding(); }) {
    const auto* u = d.limiter.binding();
    return u ? u->id : "";
  } else {
    return "";
  }
}

void score(LabelResult& r, const KernelDiagnosis& d) {
  r.predicted_class = std::string(class_name(d.bottleneck.cls));
  r.predicted_limiter = binding_unit(d);
  for (size_t i = 0; i < d.findings.size() && i < 3; ++i) {
    r.top3.push_back(d.findings[i].id);
    // Findings merged into one of the top three are there too (one finding per fact).
    r.top3.insert(r.top3.end(), d.findings[i].merged.begin(), d.findings[i].merged.end());
  }
  r.class_ok = r.predicted_class == r.label.cls;
  r.limiter_ok = !r.label.limiter.empty() && r.predicted_limiter == r.label.limiter;
  int found = 0;
  for (const auto& e : r.label.expect)
    if (std::find(r.top3.begin(), r.top3.end(), e) != r.top3.end()) ++found;
  r.top3_hit = found > 0;
  r.recall3 = r.label.expect.empty() ? 1.0 : static_cast<double>(found) / r.label.expect.size();
}

// Labels come grouped by report; keeping the last one loaded avoids reading a
// report once per label without holding every report in memory.
struct ReportCache {
  const OpenReport& open;
  std::string path;
  std::optional<Result<model::Report>> report;
  const Result<model::Report>& get(const std::string& p) {
    if (!report || path != p) {
      path = p;
      report.emplace(open(p));
    }
    return *report;
  }
};

std::string missing_launch(const model::Report& report, const Label& l) {
  auto has = [&](int i) {
    return std::any_of(report.kernels.begin(), report.kernels.end(), [&](const auto& k) { return k.index == i; });
  };
  if (!has(l.kernel)) return "kernel index not in report";
  for (int i : l.also)
    if (!has(i)) return "folded launch " + std::to_string(i) + " not in report";
  return "";
}

LabelResult evaluate_one(const Label& l, const std::string& path, ReportCache& cache, const Diagnose& diagnose) {
  LabelResult r;
  r.label = l;
  if (path.empty()) {
    r.error = "oracle examples unavailable";
    return r;
  }
  const auto& report = cache.get(path);
  if (!report) {
    r.error = report.error().message;
    return r;
  }
  r.error = missing_launch(*report, l);
  if (!r.error.empty()) return r;
  auto it =
      std::find_if(report->kernels.begin(), report->kernels.end(), [&](const auto& k) { return k.index == l.kernel; });
  score(r, diagnose(*report, *it, {3}));
  return r;
}

void add(EvalStats& s, const LabelResult& r) {
  ++s.labels;
  if (!r.error.empty()) return;
  ++s.scored;
  s.launches += 1 + static_cast<int>(r.label.also.size());
  s.class_ok += r.class_ok;
  if (!r.label.expect.empty()) {
    ++s.top3_scored;
    s.top3_hits += r.top3_hit;
    s.recall_sum += r.recall3;
  }
  if (!r.label.limiter.empty()) {
    ++s.limiter_scored;
    s.limiter_ok += r.limiter_ok;
    s.limiter_answered += !r.predicted_limiter.empty();
  }
}

}  // namespace

bool is_miss(const LabelResult& r) {
  if (!r.error.empty()) return false;
  return !r.class_ok || (!r.label.limiter.empty() && !r.limiter_ok) || (!r.label.expect.empty() && !r.top3_hit);
}

std::string repository(const std::string& report) {
  if (report.starts_with(kOracle2024)) return "oracle-2024.1";
  if (report.starts_with(kOracle)) return "oracle";
  return report.substr(0, report.find('/'));
}

Result<std::vector<Label>> parse_labels(const std::string& json_text) {
  try {
    std::vector<Label> out;
    const auto doc = nlohmann::json::parse(json_text);  // must outlive the loop
    for (const auto& j : doc.at("labels")) {
      Label l;
      l.report = j.at("report");
      l.kernel = j.at("kernel");
      l.cls = j.at("class");
      l.limiter = j.value("limiter", "");
      l.expect = j.value("expect", std::vector<std::string>{});
      l.also = j.value("also", std::vector<int>{});
      l.sets = j.value("sets", std::vector<std::string>{});
      l.notes = j.value("notes", "");
      static const std::vector<std::string> kClasses{"memory", "compute", "latency", "launch", "unknown"};
      if (std::find(kClasses.begin(), kClasses.end(), l.cls) == kClasses.end())
        return fail(ExitCode::BadInput, "labels: " + l.report + " kernel " + std::to_string(l.kernel) + ": class \"" +
                                            l.cls + "\" is not memory, compute, latency, launch or unknown");
      out.push_back(std::move(l));
    }
    return out;
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("labels: ") + e.what());
  }
}

std::vector<Label> select_set(const std::vector<Label>& labels, const std::string& set) {
  if (set.empty()) return labels;
  std::vector<Label> out;
  for (const auto& l : labels)
    if (std::find(l.sets.begin(), l.sets.end(), set) != l.sets.end()) out.push_back(l);
  return out;
}

EvalSummary summarize(std::vector<LabelResult> results) {
  EvalSummary s;
  s.results = std::move(results);
  for (const auto& r : s.results) {
    add(s.overall, r);
    add(s.by_repository[repository(r.label.report)], r);
    if (r.error.empty()) ++s.confusion[r.label.cls][r.predicted_class];
  }
  s.scored = s.overall.scored;
  s.class_accuracy = s.overall.class_accuracy();
  s.top3_accuracy = s.overall.top3_accuracy();
  s.mean_recall3 = s.overall.mean_recall3();
  return s;
}

EvalSummary evaluate_labels(const std::vector<Label>& labels, const std::string& root, const std::string& oracle,
                            const std::string& oracle2024, const OpenReport& open, const Diagnose& diagnose) {
  std::vector<LabelResult> results;
  ReportCache cache{open};
  for (const auto& l : labels)
    results.push_back(evaluate_one(l, resolve(l.report, root, oracle, oracle2024), cache, diagnose));
  return summarize(std::move(results));
}

}  // namespace keet::analysis
