// Nsight Systems timelines: the SQLite file `nsys export --type sqlite` writes,
// in both schema generations (EXPORT_META_DATA before nsys 2023, then
// META_DATA_EXPORT), streamed into a model::TimelineSink.
//
// The file is untrusted: it is opened read-only and immutable (no journal,
// no locks, nothing written beside it), with SQLite's defensive mode, no
// triggers or views from the file, bounded string lengths and a check that
// the file holds every page its header announces (a truncated export is an
// error, not a shorter timeline). The exporter writes only tables that have
// data, so every table but StringIds may be absent; what is absent is listed
// in TimelineMeta::absent_tables.
#pragma once
#include <string>
#include <string_view>

#include "model/timeline.h"
#include "readers/reader.h"

namespace keet::readers {

enum class TimelineFile { NsysExport, NsysReport, Kineto, Other };
// From a file's first bytes: an SQLite database, an .nsys-rep/.qdrep report
// ("NVIDIA Tegra Profiler Report"), a PyTorch profiler (Kineto) trace,
// gzip-compressed or not (readers/kineto_trace.h: give it kTimelineHead
// bytes), or something else.
TimelineFile sniff_timeline(std::string_view head);
// How many first bytes sniff_timeline wants: a Kineto trace may open with
// tens of KiB of metadata before it names "traceEvents".
constexpr size_t kTimelineHead = 65536;
// The nsys version a report's header names ("2026.1.3.425"), or "" when the
// header does not say (reports before 2024 write "Report 1.").
std::string nsys_report_version(std::string_view head);

ReadResult<void> read_nsys_export(const std::string& path, model::TimelineSink& sink);
// The same from bytes in memory (the fuzz target; standard input).
ReadResult<void> read_nsys_export_bytes(std::string_view bytes, const std::string& name, model::TimelineSink& sink);

// "FILE: what" (the reader's errors locate nothing by byte offset).
std::string timeline_error_message(const ReadError& e);

}  // namespace keet::readers
