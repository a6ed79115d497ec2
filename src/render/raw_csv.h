// The raw-page CSV, column for column like `ncu --import R --page raw --csv
// --print-units base`: 8 ID columns, every metric column (sorted), a units row,
// then one row per kernel.
#pragma once
#include <string>
#include <vector>

#include "model/report.h"

namespace keet::render {

std::string raw_csv(const model::Report& r, const std::vector<const model::Kernel*>& kernels);

}  // namespace keet::render
