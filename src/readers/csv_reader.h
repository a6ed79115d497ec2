// Readers for text exports: ncu --csv (raw and details pages) and nvprof --csv.
#pragma once
#include "readers/reader.h"

namespace keet::readers::csv {

bool detect_ncu(std::string_view bytes);
ReadResult<void> read_ncu(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                          const KernelSink& sink);
bool detect_nvprof(std::string_view bytes);
ReadResult<void> read_nvprof(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                             const KernelSink& sink);

}  // namespace keet::readers::csv
