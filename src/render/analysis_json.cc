#include "render/analysis_json.h"

namespace keet::render {
namespace {

using json = nlohmann::json;

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json evidence_list(const std::vector<analysis::Evidence>& list) {
  json out = json::array();
  for (const auto& e : list) out.push_back(evidence_json(e));
  return out;
}

json source_json(const std::vector<analysis::SourceRef>& refs) {
  json out = json::array();
  for (const auto& s : refs) {
    json j = {{"file", s.file}, {"line", s.line}, {"share", s.share}};
    if (!s.text.empty()) j["text"] = s.text;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

json evidence_json(const analysis::Evidence& e) {
  json j = {{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}};
  if (!e.threshold.empty()) j["threshold"] = e.threshold;
  if (!e.formula.empty()) j["formula"] = e.formula;
  return j;
}

json finding_json(const analysis::Finding& f) {
  return {{"id", f.id},
          {"severity", analysis::severity_name(f.severity)},
          {"title", f.title},
          {"explanation", f.explanation},
          {"evidence", evidence_list(f.evidence)},
          {"estimated_speedup", optional_number(f.estimated_speedup)},
          {"speedup_formula", f.speedup_formula},
          {"advice", f.advice},
          {"source", source_json(f.source)},
          {"references", f.references},
          {"ncu_rules", f.ncu_rules}};
}

json kernel_diagnosis_json(const analysis::KernelDiagnosis& k) {
  json findings = json::array();
  for (const auto& f : k.findings) findings.push_back(finding_json(f));
  return {{"index", k.index},
          {"name", k.name},
          {"demangled", k.demangled},
          {"device", {{"name", k.device.name}, {"compute_capability", k.device.compute_capability}}},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"duration_ns", optional_number(k.duration_ns)},
          {"bottleneck",
           {{"class", analysis::class_name(k.bottleneck.cls)},
            {"confidence", k.bottleneck.confidence},
            {"summary", k.bottleneck.summary},
            {"evidence", evidence_list(k.bottleneck.evidence)}}},
          {"findings", findings},
          {"notes", k.notes}};
}

json analysis_json(const analysis::Diagnosis& d) {
  json kernels = json::array();
  for (const auto& k : d.kernels) kernels.push_back(kernel_diagnosis_json(k));
  return {{"schema", "keet.analysis/1"},
          {"tool", {{"name", "keet"}, {"version", KEET_VERSION}}},
          {"report",
           {{"path", d.report_path},
            {"format", d.report_format},
            {"ncu_version", d.ncu_version.empty() ? json(nullptr) : json(d.ncu_version)}}},
          {"kernels", kernels}};
}

}  // namespace keet::render
