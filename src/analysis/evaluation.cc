#include "analysis/evaluation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "analysis/engine.h"
#include "readers/reader.h"

namespace keet::analysis {
namespace {

std::string resolve(const std::string& report, const std::string& root, const std::string& oracle) {
  if (report.starts_with("oracle:")) return oracle.empty() ? "" : oracle + "/" + report.substr(7);
  return root + "/" + report;
}

void score(LabelResult& r, const KernelDiagnosis& d) {
  r.predicted_class = std::string(class_name(d.bottleneck.cls));
  for (size_t i = 0; i < d.findings.size() && i < 3; ++i) r.top3.push_back(d.findings[i].id);
  r.class_ok = r.predicted_class == r.label.cls;
  int found = 0;
  for (const auto& e : r.label.expect)
    if (std::find(r.top3.begin(), r.top3.end(), e) != r.top3.end()) ++found;
  r.top3_hit = found > 0;
  r.recall3 = r.label.expect.empty() ? 1.0 : static_cast<double>(found) / r.label.expect.size();
}

LabelResult evaluate_one(const Label& l, const std::string& root, const std::string& oracle) {
  LabelResult r{l, "", "", {}, false, false, 0};
  std::string path = resolve(l.report, root, oracle);
  if (path.empty()) {
    r.error = "oracle examples unavailable";
    return r;
  }
  auto report = readers::load_file(path);
  if (!report) {
    r.error = report.error().message;
    return r;
  }
  auto it = std::find_if(report->kernels.begin(), report->kernels.end(), [&](const auto& k) { return k.index == l.kernel; });
  if (it == report->kernels.end()) {
    r.error = "kernel index not in report";
    return r;
  }
  score(r, analyze_kernel(*report, *it, {3}));
  return r;
}

}  // namespace

Result<std::vector<Label>> parse_labels(const std::string& json_text) {
  try {
    std::vector<Label> out;
    const auto doc = nlohmann::json::parse(json_text);  // must outlive the loop
    for (const auto& j : doc.at("labels"))
      out.push_back({j.at("report"), j.at("kernel"), j.at("class"), j.at("expect").get<std::vector<std::string>>(),
                     j.value("notes", "")});
    return out;
  } catch (const std::exception& e) {
    return fail(ExitCode::BadInput, std::string("labels: ") + e.what());
  }
}

EvalSummary evaluate_labels(const std::vector<Label>& labels, const std::string& root, const std::string& oracle) {
  EvalSummary s;
  int class_ok = 0, hits = 0;
  double recall = 0;
  for (const auto& l : labels) {
    s.results.push_back(evaluate_one(l, root, oracle));
    const auto& r = s.results.back();
    if (!r.error.empty()) continue;
    ++s.scored;
    class_ok += r.class_ok;
    hits += r.top3_hit;
    recall += r.recall3;
  }
  if (s.scored > 0) {
    s.class_accuracy = static_cast<double>(class_ok) / s.scored;
    s.top3_accuracy = static_cast<double>(hits) / s.scored;
    s.mean_recall3 = recall / s.scored;
  }
  return s;
}

}  // namespace keet::analysis
