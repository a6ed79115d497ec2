// The analysis as JSON, exactly per docs/contracts.md and schemas/analysis.schema.json
// ("schema": "keet.analysis/1").
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/report_view.h"
#include "util/json.h"

namespace keet::render {

// "ok", "degraded" (implausible values, broken launch data or ncu errors) or "insufficient_data".
std::string_view outcome_name(const analysis::DataQuality& q);

// Members a command adds to a kernel's object (each placed in key order).
struct KernelJsonExtras {
  const nlohmann::json* launches = nullptr;  // analyze --per-kernel's summary of the launches
  const nlohmann::json* llm = nullptr;       // the narrative of analyze --llm
};

// The writers are the one definition of the layout; the tree forms below
// are their text read back, for callers that edit or embed the document.
void write_data_quality(JsonWriter& w, const analysis::DataQuality& q);
void write_kernel_diagnosis(JsonWriter& w, const analysis::KernelDiagnosis& k, const KernelJsonExtras& extras = {});
void write_analysis(JsonWriter& w, const analysis::Diagnosis& d);

nlohmann::json data_quality_json(const analysis::DataQuality& q);
nlohmann::json analysis_json(const analysis::Diagnosis& d);
// analyze's "whole_report" member: the report-level comparisons and launch-shape tables.
nlohmann::json report_view_json(const analysis::ReportView& v);

}  // namespace keet::render
