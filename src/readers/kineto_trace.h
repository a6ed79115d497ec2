// PyTorch profiler (Kineto) traces: the Chrome-trace JSON that
// torch.profiler writes (`export_chrome_trace`, `tensorboard_trace_handler`,
// `*.pt.trace.json[.gz]`), streamed into the same model::TimelineSink as an
// Nsight Systems export, so both get the same summary and verdicts.
//
// What maps to what: `kernel` events are kernels (device and stream from
// their args, launching call through `correlation`, else the `ac2g` flow),
// `gpu_memcpy`/`gpu_memset` are copies and memsets (direction and host
// memory kinds from the event name, "Memcpy HtoD (Pageable -> Device)"),
// `cuda_runtime`/`cuda_driver` are API calls (HIP traces use the same
// categories with hip* names; 2021 traces `Kernel`, `Memcpy`, `Runtime`),
// `user_annotation` ranges and `ProfilerStep#N` are NVTX-like ranges,
// `deviceProperties` names the GPUs and `distributedInfo` the rank. A trace
// is one process's: its GPU operations are given process 0.
//
// The file is untrusted and may be large: it is read as a stream (gzip
// decompressed on the way, recognised by its magic, never its name), the
// top-level object walked by a small scanner and `traceEvents` handed to
// simdjson's On Demand parser a few MiB of whole events at a time. What is
// kept is one compact record per GPU operation and runtime call (they must
// reach the sink in start order, after the span and per-device ranges are
// known), never the text.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "model/timeline.h"
#include "readers/reader.h"

namespace keet::readers {

struct KinetoLimits {
  uint64_t max_events = 50'000'000;    // records kept (GPU operations, calls, ranges): ~64 bytes each
  size_t max_value_bytes = 64u << 20;  // one event, or one top-level member other than traceEvents
  size_t batch_bytes = 4u << 20;       // whole events handed to simdjson at once
};

// The first bytes of a file (gzip-compressed or not, at most 64 KiB of them
// decompressed): a JSON object that names "traceEvents" or "schemaVersion".
bool looks_like_kineto(std::string_view head);

ReadResult<void> read_kineto_trace(const std::string& path, model::TimelineSink& sink, const KinetoLimits& limits = {});
// The same from bytes in memory (standard input, the fuzz target).
ReadResult<void> read_kineto_trace_bytes(std::string_view bytes, const std::string& name, model::TimelineSink& sink,
                                         const KinetoLimits& limits = {});

// The base function name of a demangled kernel name, as --name-base function
// prints it: "void at::native::foo<4, bar>(int, float*)" -> "foo".
std::string kernel_function_name(std::string_view demangled);

}  // namespace keet::readers
