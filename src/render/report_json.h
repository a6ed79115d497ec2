// The whole model as JSON (`keet export --format json`).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace keet::render {

nlohmann::json value_json(const model::Value& v);
nlohmann::json report_json(const model::Report& r, const std::vector<const model::Kernel*>& kernels);

}  // namespace keet::render
