#include "render/analysis_json.h"

namespace keet::render {
namespace {

using json = nlohmann::json;

// Every object below lists its members sorted by key, as nlohmann orders
// them, so the text is that of the tree the contract describes.

void write_evidence(JsonWriter& w, const analysis::Evidence& e) {
  w.begin_object();
  if (!e.formula.empty()) w.member("formula", e.formula);
  if (!e.label.empty()) w.member("label", e.label);
  w.member("metric", e.metric);
  if (!e.threshold.empty()) w.member("threshold", e.threshold);
  w.member("unit", e.unit).member("value", e.value);
  w.end_object();
}

void write_evidence_list(JsonWriter& w, const std::vector<analysis::Evidence>& list) {
  w.begin_array();
  for (const auto& e : list) write_evidence(w, e);
  w.end_array();
}

void write_source(JsonWriter& w, const std::vector<analysis::SourceRef>& refs) {
  w.begin_array();
  for (const auto& s : refs) {
    // A SASS instruction (line 0) adds its offset, and the instruction when known.
    w.begin_object().member("file", s.file).member("line", s.line);
    if (s.is_sass()) w.member("offset", s.offset);
    if (s.is_sass() && !s.sass.empty()) w.member("sass", s.sass);
    w.member("share", s.share);
    if (!s.text.empty()) w.member("text", s.text);
    w.end_object();
  }
  w.end_array();
}

void write_unit(JsonWriter& w, const analysis::UnitLoad* u) {
  if (!u) {
    w.null();
    return;
  }
  w.begin_object()
      .member("kind", analysis::class_name(u->kind))
      .member("label", u->label)
      .member("metric", u->evidence.metric)
      .member("pct", u->pct);
  if (u->pct_on_active_sms) w.member("pct_on_active_sms", *u->pct_on_active_sms);
  w.member("unit", u->id).end_object();
}

void write_limiter(JsonWriter& w, const analysis::Limiter& lim) {
  w.begin_object().key("binding");
  write_unit(w, lim.binding());
  w.key("next");
  write_unit(w, lim.next());
  w.key("units").begin_array();
  for (const auto& u : lim.units) write_unit(w, &u);
  w.end_array().end_object();
}

void write_finding(JsonWriter& w, const analysis::Finding& f) {
  w.begin_object().member("advice", f.advice).member("estimated_speedup", f.estimated_speedup).key("evidence");
  write_evidence_list(w, f.evidence);
  w.member("explanation", f.explanation).member("id", f.id);
  if (!f.merged.empty()) w.member("merged", f.merged);
  w.member("ncu_rules", f.ncu_rules)
      .member("references", f.references)
      .member("relieves", f.relieves)
      .member("severity", analysis::severity_name(f.severity))
      .key("source");
  write_source(w, f.source);
  w.member("speedup_formula", f.speedup_formula).member("title", f.title).end_object();
}

void write_dim3(JsonWriter& w, const model::Dim3& d) { w.begin_array().value(d.x).value(d.y).value(d.z).end_array(); }

void write_optional_string(JsonWriter& w, const std::string& s) {
  if (s.empty())
    w.null();
  else
    w.value(s);
}

// The tree form of what `write` writes: its one-line text parsed back.
template <class T>
json read_back(void (*write)(JsonWriter&, const T&), const T& value) {
  std::string text;
  JsonWriter w(text, -1);
  write(w, value);
  return json::parse(text);
}

}  // namespace

std::string_view outcome_name(const analysis::DataQuality& q) {
  return q.sufficient ? (q.degraded() ? "degraded" : "ok") : "insufficient_data";
}

void write_data_quality(JsonWriter& w, const analysis::DataQuality& q) {
  w.begin_object().member("below_floor", q.below_floor).member("collect", q.collect).key("invalid").begin_array();
  for (const auto& bad : q.invalid)
    w.begin_object().member("metric", bad.metric).member("value", bad.value).member("why", bad.why).end_object();
  w.end_array()
      .member("missing", q.missing)
      .member("ncu_errors", q.ncu_errors)
      .member("outcome", outcome_name(q))
      .member("problems", q.problems)
      .member("sections_missing", q.sections_missing)
      .member("sections_present", q.sections_present)
      .key("stalls")
      .begin_object()
      .member("reasons", q.stall_reasons)
      .member("shares", q.stall_shares)
      .key("unit");
  write_optional_string(w, q.stall_unit);
  w.end_object().end_object();
}

void write_kernel_diagnosis(JsonWriter& w, const analysis::KernelDiagnosis& k, const KernelJsonExtras& extras) {
  w.begin_object().key("block");
  write_dim3(w, k.block);
  w.key("bottleneck")
      .begin_object()
      .member("class", analysis::class_name(k.bottleneck.cls))
      .member("confidence", k.bottleneck.confidence)
      .key("evidence");
  write_evidence_list(w, k.bottleneck.evidence);
  w.member("summary", k.bottleneck.summary).end_object().key("data_quality");
  write_data_quality(w, k.data_quality);
  w.member("demangled", k.display)
      .key("device")
      .begin_object()
      .member("compute_capability", k.compute_capability)
      .member("name", k.device)
      .end_object()
      .member("duration_ns", k.duration_ns)
      .key("findings")
      .begin_array();
  for (const auto& f : k.findings) write_finding(w, f);
  w.end_array().key("grid");
  write_dim3(w, k.grid);
  w.member("index", k.index);
  if (extras.launches) w.member("launches", *extras.launches);
  w.key("library");
  write_optional_string(w, k.library);
  w.member("library_advice", k.library_advice).key("limiter");
  write_limiter(w, k.limiter);
  if (extras.llm) w.member("llm", *extras.llm);
  w.member("name", k.report_name()).member("notes", k.notes);
  if (!k.library.empty()) {
    w.key("primitive");
    write_optional_string(w, k.primitive);
  }
  w.end_object();
}

void write_analysis(JsonWriter& w, const analysis::Diagnosis& d) {
  w.begin_object().key("kernels").begin_array();
  for (const auto& k : d.kernels) write_kernel_diagnosis(w, k);
  w.end_array().key("report").begin_object().member("format", d.report_format).key("ncu_version");
  write_optional_string(w, d.ncu_version);
  w.member("path", d.report_path)
      .end_object()
      .member("schema", "keet.analysis/1")
      .key("tool")
      .begin_object()
      .member("name", "keet")
      .member("version", KEET_VERSION)
      .end_object()
      .end_object();
}

json data_quality_json(const analysis::DataQuality& q) { return read_back(write_data_quality, q); }

json analysis_json(const analysis::Diagnosis& d) { return read_back(write_analysis, d); }

json report_view_json(const analysis::ReportView& v) {
  auto dim = [](const model::Dim3& d) { return json::array({d.x, d.y, d.z}); };
  json out = {{"comparisons", json::array()}, {"launch_shapes", json::array()}};
  for (const auto& c : v.comparisons)
    out["comparisons"].push_back({{"kind", c.kind}, {"text", c.text}, {"indices", c.indices}});
  for (const auto& series : v.shapes) {
    json rows = json::array();
    for (const auto& r : series.rows)
      rows.push_back({{"index", r.index},
                      {"grid", dim(r.grid)},
                      {"block", dim(r.block)},
                      {"launches", r.launches},
                      {"median_ns", r.median_ns},
                      {"vs_fastest", r.vs_fastest}});
    out["launch_shapes"].push_back({{"name", series.display}, {"rows", rows}, {"verdict", series.verdict}});
  }
  return out;
}

}  // namespace keet::render
