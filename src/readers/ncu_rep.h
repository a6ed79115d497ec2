// The .ncu-rep / .nsight-cuprof-report reader (protobuf, see ncu_report.proto).
#pragma once
#include "readers/reader.h"

namespace keet::readers::ncurep {

bool detect(std::string_view bytes);
ReadResult<void> read(const io::ByteSource& src, const ReadOptions& opt, model::Report& report, const KernelSink& sink);

// The same report inside a zstd container (.ncu-repz), decompressed as a stream.
bool detect_compressed(std::string_view bytes);
ReadResult<void> read_compressed(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                                 const KernelSink& sink);

}  // namespace keet::readers::ncurep
