#include "readers/reader.h"
#include "util/error.h"

#include <fmt/format.h>

#include <algorithm>

#include "readers/csv_reader.h"
#include "readers/ncu_rep.h"

namespace keet::readers {

std::string ReadError::message() const {
  if (line != 0) return fmt::format("{}: line {}: {}", file, line, what);
  if (offset == 0 && (what.starts_with("not ") || what.starts_with("unsupported compressed") ||
                      what.starts_with("truncated compressed")))
    return fmt::format("{}: {}", file, what);
  return fmt::format("{}: at byte {}: {}", file, offset, what);
}

model::Dim3 grid_in_blocks(const model::Dim3& g, const model::Dim3& b, std::optional<double> blocks) {
  if (!blocks || b.x == 0 || b.y == 0 || b.z == 0 || b.product() == 1) return g;
  if (static_cast<double>(g.product()) == *blocks) return g;
  if (g.x % b.x || g.y % b.y || g.z % b.z) return g;
  model::Dim3 in_blocks{g.x / b.x, g.y / b.y, g.z / b.z};
  return static_cast<double>(in_blocks.product()) == *blocks ? in_blocks : g;
}

// Order matters: the first reader whose sniff accepts the bytes wins.
const std::vector<Reader>& registry() {
  static const std::vector<Reader> readers = {
      {"ncu-rep", "Nsight Compute binary report (.ncu-rep, .nsight-cuprof-report)", ncurep::detect, ncurep::read},
      {"ncu-repz", "zstd-compressed Nsight Compute report (.ncu-repz, ncu 2025.4+)", ncurep::detect_compressed,
       ncurep::read_compressed},
      {"ncu-csv", "ncu --csv export (--page raw or --page details)", csv::detect_ncu, csv::read_ncu},
      {"nvprof-csv", "nvprof --csv output (metrics or events)", csv::detect_nvprof, csv::read_nvprof},
  };
  return readers;
}

const Reader* find_reader(std::string_view bytes) {
  for (const auto& r : registry())
    if (r.detect(bytes)) return &r;
  return nullptr;
}

ReadResult<void> stream_into(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                             const KernelSink& sink) {
  report.path = src.name();
  const Reader* reader = find_reader(src.bytes());
  if (reader == nullptr) {
    std::string what = src.bytes().empty()
                           ? "empty file"
                           : "not a report KEET can read (not .ncu-rep, .ncu-repz, ncu CSV or nvprof CSV)";
    return std::unexpected(ReadError{src.name(), 0, what, false});
  }
  // A compressed report holds far more kernels than its bytes suggest: only
  // the overall cap bounds it (its decoder streams, so memory stays bounded).
  bool compressed = std::string_view(reader->name) == "ncu-repz";
  size_t by_size = compressed ? opt.max_kernels
                              : std::max(ReadOptions::kFreeKernels, src.bytes().size() / ReadOptions::kMinKernelBytes);
  size_t limit = std::min(opt.max_kernels, by_size);
  size_t kernels = 0;
  auto capped = [&](model::Kernel&& k) {
    k.shown = opt.name_shown;
    return ++kernels <= limit && (!opt.kernels || sink(std::move(k)));
  };
  auto ok = reader->read(src, opt, report, capped);
  if (src.changed())  // the bytes read past the new end were zeros: nothing read can be trusted
    return std::unexpected(ReadError{src.name(), 0, "not read: the file was truncated while keet read it", false});
  if (ok && kernels > limit && limit == opt.max_kernels)
    return std::unexpected(ReadError{src.name(), 0,
                                     fmt::format("not read: it holds more than {} kernels, the most KEET reads "
                                                 "from one report (a report that large is most likely damaged)",
                                                 opt.max_kernels),
                                     false});
  if (ok && kernels > limit)
    return std::unexpected(ReadError{src.name(), 0,
                                     fmt::format("not read: it claims more than {} kernels in {} bytes, more than "
                                                 "real kernel results can fit (damaged or crafted)",
                                                 limit, src.bytes().size()),
                                     false});
  return ok;
}

ReadResult<model::Report> stream(const io::ByteSource& src, const ReadOptions& opt, const KernelSink& sink) {
  model::Report report;
  KEET_TRY(ok, stream_into(src, opt, report, sink));
  return report;
}

ReadResult<model::Report> load(const io::ByteSource& src, const ReadOptions& opt) {
  std::vector<model::Kernel> kernels;
  auto report = stream(src, opt, [&](model::Kernel&& k) {
    kernels.push_back(std::move(k));
    return true;
  });
  if (report) report->kernels = std::move(kernels);
  return report;
}

Result<model::Report> load_file(const std::string& path, const ReadOptions& opt) {
  KEET_TRY(src, io::open_file(path));
  auto report = load(**src, opt);
  if (!report) return fail(ExitCode::BadInput, report.error().message());
  return std::move(*report);
}

}  // namespace keet::readers
