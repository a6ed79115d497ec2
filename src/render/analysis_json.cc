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

json unit_json(const analysis::UnitLoad& u) {
  return {{"unit", u.id}, {"label", u.label}, {"kind", analysis::class_name(u.kind)}, {"pct", u.pct},
          {"metric", u.evidence.metric}};
}

json limiter_json(const analysis::Limiter& lim) {
  json units = json::array();
  for (const auto& u : lim.units) units.push_back(unit_json(u));
  return {{"binding", lim.binding() ? unit_json(*lim.binding()) : json(nullptr)},
          {"next", lim.next() ? unit_json(*lim.next()) : json(nullptr)},
          {"units", units}};
}

}  // namespace

json evidence_json(const analysis::Evidence& e) {
  json j = {{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}};
  if (!e.threshold.empty()) j["threshold"] = e.threshold;
  if (!e.formula.empty()) j["formula"] = e.formula;
  return j;
}

std::string_view outcome_name(const analysis::DataQuality& q) {
  return q.sufficient ? (q.degraded() ? "degraded" : "ok") : "insufficient_data";
}

json data_quality_json(const analysis::DataQuality& q) {
  json invalid = json::array();
  for (const auto& bad : q.invalid)
    invalid.push_back({{"metric", bad.metric}, {"value", optional_number(bad.value)}, {"why", bad.why}});
  return {{"outcome", outcome_name(q)},
          {"sections_present", q.sections_present},
          {"sections_missing", q.sections_missing},
          {"collect", q.collect},
          {"missing", q.missing},
          {"below_floor", q.below_floor},
          {"invalid", invalid},
          {"problems", q.problems},
          {"ncu_errors", q.ncu_errors},
          {"stalls",
           {{"reasons", q.stall_reasons},
            {"unit", q.stall_unit.empty() ? json(nullptr) : json(q.stall_unit)},
            {"shares", q.stall_shares}}}};
}

json finding_json(const analysis::Finding& f) {
  return {{"id", f.id},
          {"relieves", f.relieves},
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
          {"limiter", limiter_json(k.limiter)},
          {"data_quality", data_quality_json(k.data_quality)},
          {"library", k.library.empty() ? json(nullptr) : json(k.library)},
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
