// Readers: turn one input (a .ncu-rep, an ncu CSV export, an nvprof CSV) into
// the model. Formats are registered by name and detected from content.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/file.h"
#include "model/report.h"
#include "util/error.h"

namespace keet::readers {

// What a caller wants kept; everything else is skipped while parsing, which is
// what keeps `keet list` on a 20,000-kernel report small and fast.
struct ReadOptions {
  bool metrics = true;  // keep metric values
  // False: each kept metric carries its name (and string-table id) but no
  // value, and its bytes are not decoded (keet export's column pass). A
  // metric's damage inside its value then goes unnoticed by this read.
  bool metric_values = true;
  bool instances = true;  // keep per-instance lists (per-PC counters, ...)
  bool rules = true;      // keep ncu's rule results
  bool modules = true;    // keep cubins and embedded source files
  // False: deliver no kernel at all, only what the report says about itself
  // (session, modules, warnings). A .ncu-rep may hold its session and a
  // kernel's module after the kernel, so a command that streams kernels reads
  // this "head" first when the analysis needs them.
  bool kernels = true;
  // When set, only metrics whose name passes are kept. It is called for each
  // metric of a kernel, before that kernel reaches the sink (keet export relies
  // on this to collect column names without keeping values).
  std::function<bool(std::string_view)> metric_filter;
  // The filter's answer depends on the name alone (no side effects): a
  // .ncu-rep reader then asks it once per name of the report's string table
  // and remembers the answer, instead of once per metric of every kernel.
  bool metric_filter_by_name = false;
  bool allow_partial = false;  // a truncated report is not an error
  // The name each delivered kernel goes by (Kernel::shown; keet --name-base).
  model::NameBase name_shown = model::NameBase::Demangled;
  // A .ncu-rep kernel whose metric names are defined in a later block's string
  // table waits (undecoded) until they arrive; so do the kernels after it, to
  // keep report order. Past this many waiting bytes the oldest goes out
  // without the names it lacks (counted in a warning), so memory stays bounded.
  uint64_t max_deferred_bytes = uint64_t{64} << 20;
  // A damaged or hostile report can claim millions of tiny kernels, each of
  // which costs far more memory than its bytes in the file: past this many the
  // read stops with an error (bad input) instead of exhausting memory.
  // A report may also hold at most one kernel per kMinKernelBytes of file
  // (past the first kFreeKernels): real kernel results take kilobytes
  // (11.7 KB the smallest average in the fixtures), so only damage or malice
  // packs them tighter, and each costs about 900 bytes of model.
  size_t max_kernels = kMaxKernels;
  static constexpr size_t kMaxKernels = 1'000'000;
  static constexpr size_t kMinKernelBytes = 64;
  static constexpr size_t kFreeKernels = 1000;
};

// Streaming consumer: called once per kernel as soon as it is read. Returning
// false stops the read early. The sink may move the kernel away; if it does
// not, the reader may decode the next kernel into the same object (reusing its
// buffers), so a sink must not keep references into it past the call.
using KernelSink = std::function<bool(model::Kernel&&)>;

// The reader's error: which file, where, and what. `partial` marks a report
// that was cut short after some kernels were delivered.
struct ReadError {
  std::string file;
  uint64_t offset = 0;
  std::string what;
  bool partial = false;
  uint64_t line = 0;  // 1-based line in a text export (CSV); 0: `offset` locates it
  std::string message() const;
};

template <typename T>
using ReadResult = std::expected<T, ReadError>;

struct Reader {
  std::string_view name;  // "ncu-rep", "ncu-csv", "nvprof-csv"
  std::string_view description;
  // Cheap content sniff: does this look like our format?
  std::function<bool(std::string_view bytes)> detect;
  // Reads everything but the kernels into `report`, calling `sink` per kernel.
  std::function<ReadResult<void>(const io::ByteSource&, const ReadOptions&, model::Report& report,
                                 const KernelSink& sink)>
      read;
};

// Reports written before ncu 2020.3 (.nsight-cuprof-report and early
// .ncu-rep) store the CUDA launch in OpenCL terms: GridSize (then called
// GlobalWorkSize) counts threads, not blocks; ncu's header line and raw-page
// "Grid Size" column repeat the stored field, while its Launch Statistics
// (launch__grid_size) count blocks. Returns `stored` in blocks when the
// kernel's own launch__grid_size says it was in threads (each dimension
// divisible by the block's), else `stored` unchanged.
model::Dim3 grid_in_blocks(const model::Dim3& stored, const model::Dim3& block, std::optional<double> launch_grid_size);

const std::vector<Reader>& registry();
const Reader* find_reader(std::string_view bytes);

// Reads the whole report into memory (kernels included).
ReadResult<model::Report> load(const io::ByteSource& src, const ReadOptions& opt = {});
// Streams kernels to `sink`; the returned report holds session, modules, warnings.
ReadResult<model::Report> stream(const io::ByteSource& src, const ReadOptions& opt, const KernelSink& sink);
// Like stream(), but fills a caller-owned report, so the sink can use what was
// read before each kernel (modules, warnings) while streaming.
ReadResult<void> stream_into(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                             const KernelSink& sink);
// Opens a path, then load(). Errors carry the file name.
Result<model::Report> load_file(const std::string& path, const ReadOptions& opt = {});

}  // namespace keet::readers
