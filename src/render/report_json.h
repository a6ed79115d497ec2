// The whole model as JSON (`keet export --format json`).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace keet::render {

nlohmann::json value_json(const model::Value& v);
// A kernel launch as `list` and `export` name it: index, name, mangled name,
// grid, block and invocations.
nlohmann::json kernel_identity_json(const model::Kernel& k);
// One kernel of the export (metrics with instances, rules).
nlohmann::json export_kernel_json(const model::Kernel& k);
nlohmann::json report_json(const model::Report& r, const std::vector<const model::Kernel*>& kernels);

}  // namespace keet::render
