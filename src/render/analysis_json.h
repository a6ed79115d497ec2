// The analysis as JSON, exactly per docs/contracts.md and schemas/analysis.schema.json
// ("schema": "keet.analysis/1").
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"

namespace keet::render {

nlohmann::json evidence_json(const analysis::Evidence& e);
nlohmann::json finding_json(const analysis::Finding& f);
nlohmann::json data_quality_json(const analysis::DataQuality& q);
// "ok", "degraded" (implausible values, broken launch data or ncu errors) or "insufficient_data".
std::string_view outcome_name(const analysis::DataQuality& q);
nlohmann::json kernel_diagnosis_json(const analysis::KernelDiagnosis& k);
nlohmann::json analysis_json(const analysis::Diagnosis& d);

}  // namespace keet::render
