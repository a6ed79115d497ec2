#include "render/report_json.h"

#include "model/units.h"

namespace keet::render {
namespace {

nlohmann::json metric_json(const model::Metric& m) {
  nlohmann::json j = {{"value", value_json(m.value)}, {"unit", model::unit_of(m.name)}};
  if (!m.instances.empty()) {
    nlohmann::json inst = nlohmann::json::array();
    for (const auto& i : m.instances) inst.push_back({value_json(i.key), value_json(i.value)});
    j["instances"] = std::move(inst);
  }
  return j;
}

nlohmann::json rule_json(const model::RuleResult& r) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : r.messages) {
    nlohmann::json jm = {{"type", m.type}, {"id", m.id}, {"name", m.name}, {"text", m.text}};
    jm["estimated_speedup"] = m.estimated_speedup ? nlohmann::json(*m.estimated_speedup) : nlohmann::json(nullptr);
    msgs.push_back(std::move(jm));
  }
  return {{"id", r.id}, {"name", r.display_name}, {"section", r.section}, {"messages", msgs}};
}

}  // namespace

nlohmann::json kernel_identity_json(const model::Kernel& k) {
  return {{"index", k.index},
          {"name", k.display_name()},
          {"mangled", k.mangled},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"invocations", k.launches()}};
}

nlohmann::json export_kernel_json(const model::Kernel& k) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& m : k.metrics) metrics[m.name] = metric_json(m);
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : k.rules) rules.push_back(rule_json(r));
  nlohmann::json out = kernel_identity_json(k);
  out["context"] = k.context_id;
  out["stream"] = k.stream_id;
  out["process_id"] = k.process_id;
  out["metrics"] = std::move(metrics);
  out["rules"] = std::move(rules);
  return out;
}

nlohmann::json value_json(const model::Value& v) {
  using K = model::Value::Kind;
  if (v.kind == K::String) return v.text;
  if (v.kind == K::Uint64 || v.kind == K::Uint32) return v.integer;
  if (v.is_number()) return v.number;
  return nullptr;
}

nlohmann::json report_json(const model::Report& r, const std::vector<const model::Kernel*>& kernels) {
  nlohmann::json ks = nlohmann::json::array();
  for (const auto* k : kernels) ks.push_back(export_kernel_json(*k));
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [p, v] : r.session.versions) versions[p] = v;
  return {{"schema", "keet.export/1"},
          {"report", {{"path", r.path}, {"format", model::format_name(r.format)}, {"file_version", r.file_version}}},
          {"versions", versions},
          {"kernels", std::move(ks)}};
}

}  // namespace keet::render
