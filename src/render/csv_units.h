// ncu's `--print-units auto` for a raw CSV page written with base units.
#pragma once
#include <string>
#include <string_view>

namespace keet::render {

// `base_csv` is a raw page as `keet export --format csv` writes it (header
// row, units row, one row per kernel, every field quoted). Each column with a
// unit is scaled as ncu scales it: by the column's largest magnitude
// (model::auto_scale), its unit cell renamed and its numbers written with six
// decimals; columns without a unit and cells that are not numbers stay as
// they are.
std::string auto_units_csv(std::string_view base_csv);

}  // namespace keet::render
