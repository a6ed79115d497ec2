// The model: what KEET read from a report, independent of the file format.
//
// Every reader (ncu-rep, ncu CSV, nvprof CSV) fills these structs; analysis,
// LLM, diff and renderers only ever see this layer. See ARCHITECTURE.md.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "model/nvtx.h"

namespace keet::model {

// One metric value as stored: ncu writes exactly one of these (or none).
struct Value {
  enum class Kind : uint8_t { None, Double, Float, Uint64, Uint32, String };
  Kind kind = Kind::None;
  double number = 0;     // valid for every numeric kind
  uint64_t integer = 0;  // exact value for Uint64/Uint32 (PCs need all 64 bits)
  std::string text;      // String kind

  static Value of_double(double v);
  static Value of_float(float v);
  static Value of_uint(uint64_t v, bool is32 = false);
  static Value of_string(std::string v);
  bool is_number() const { return kind != Kind::None && kind != Kind::String; }
  bool empty() const { return kind == Kind::None; }
  std::optional<double> as_number() const;
};

struct Instance {
  Value key;  // PC, opcode, register count, ... (meaning depends on the metric)
  Value value;
};

// A metric's per-instance list. Readers may hand it over undecoded: the
// bytes the list was stored in (owned jointly by the lists of one kernel) and
// the reader's decoder, run on first access, so a read that never looks at
// the lists (most of a report's bytes when it has source counters) never
// builds them. Reads like a const std::vector<Instance>; like the kernel's
// metric index, the first access is not safe to race from two threads.
class InstanceList {
 public:
  // Appends the decoded instances of `bytes` to `out`.
  using Decoder = void (*)(std::string_view bytes, std::vector<Instance>& out);

  InstanceList() = default;
  InstanceList(std::vector<Instance> items) : items_(std::move(items)) {}
  InstanceList(std::initializer_list<Instance> items) : items_(items) {}
  // `count` instances stored in `bytes`, which `owner` keeps alive.
  static InstanceList lazy(std::shared_ptr<const std::string> owner, std::string_view bytes, uint32_t count,
                           Decoder decode);

  bool empty() const { return pending_ == 0 && items_.empty(); }
  size_t size() const { return pending_ != 0 ? pending_ : items_.size(); }
  const std::vector<Instance>& items() const {
    if (pending_ != 0) decode();
    return items_;
  }
  operator const std::vector<Instance>&() const { return items(); }
  auto begin() const { return items().begin(); }
  auto end() const { return items().end(); }
  const Instance& operator[](size_t i) const { return items()[i]; }
  const Instance& front() const { return items().front(); }
  const Instance& back() const { return items().back(); }

  // Editing (readers of text formats, tests) works on the decoded list.
  std::vector<Instance>& mutable_items() {
    if (pending_ != 0) decode();
    owner_.reset();
    return items_;
  }
  void push_back(Instance i) { mutable_items().push_back(std::move(i)); }
  template <typename... A>
  Instance& emplace_back(A&&... a) {
    return mutable_items().emplace_back(std::forward<A>(a)...);
  }
  void reserve(size_t n) { mutable_items().reserve(n); }
  void clear() noexcept {
    items_.clear();
    owner_.reset();
    raw_ = {};
    pending_ = 0;
  }

 private:
  void decode() const;
  mutable std::vector<Instance> items_;
  std::shared_ptr<const std::string> owner_;
  std::string_view raw_;          // inside *owner_
  mutable uint32_t pending_ = 0;  // instances in raw_ not decoded yet
  Decoder decode_ = nullptr;
};

struct Metric {
  std::string name;
  Value value;
  InstanceList instances;
  // Unit as written by a CSV export; empty for ncu-rep (units come from the
  // metric database in analysis/units).
  std::string unit;
  // The report holds per-instance values for this metric, even when the reader
  // was told not to keep them (ReadOptions::instances false).
  bool listed = false;
  // The name's id in the report's string table (.ncu-rep), the same in every
  // kernel of one report, so a consumer can key per-name state by it;
  // kNoNameId for formats without one.
  static constexpr uint32_t kNoNameId = UINT32_MAX;
  uint32_t name_id = kNoNameId;
};

struct FocusMetric {
  int message_id = 0;
  std::string metric;
  double value = 0;
  int severity = 0;  // 0 default, 1 low, 2 high
  std::string info;
};

struct RuleMessage {
  int type = 0;  // 0 none, 1 ok, 2 warning, 3 error, 4 optimization (2023.2+)
  int id = 0;
  std::string name;
  std::string text;
  std::optional<double> estimated_speedup;  // percent, as ncu writes it
  int speedup_type = 0;                     // 0 local/unknown, 1 global
};

struct RuleResult {
  std::string id;  // e.g. "UncoalescedGlobalAccess"
  std::string display_name;
  std::string section;  // SectionIdentifier
  std::vector<RuleMessage> messages;
  std::vector<FocusMetric> focus;
};

struct Dim3 {
  uint64_t x = 0, y = 0, z = 0;
  uint64_t product() const { return x * y * z; }
  bool operator==(const Dim3&) const = default;
};

// Which kernel launch a result is about, named one way everywhere: the
// diagnosis, the compare layer's snapshot, the launch folds and the ranking
// (their first or representative launch) and the timeline join each hold one.
struct KernelIdentity {
  int index = 0;        // order in its report
  std::string display;  // demangled, else the function name, else mangled (Kernel::display_name)
  std::string mangled;  // "" when the report does not give it
  Dim3 grid, block;
  std::string device;  // the GPU's name; "" when the report does not say
  std::optional<double> duration_ns;

  const std::string& display_name() const { return display; }
  // As the report names it: the mangled name when known, else the display name.
  const std::string& report_name() const { return mangled.empty() ? display : mangled; }
  std::string launch_text() const;  // "grid (x, y, z) block (x, y, z)"
  // Whether `other` is the same kernel function: the mangled names when both
  // know them, else the display names. Launch configurations may differ.
  bool same_function(const KernelIdentity& other) const;
};

// A metric name with its hash worked out once, for names looked up in every
// kernel of a report (the analysis's metric tables).
struct MetricName {
  explicit MetricName(std::string n) : name(std::move(n)), hash(std::hash<std::string_view>{}(name)) {}
  std::string name;
  size_t hash;
};

// Which of a kernel's names stands for it, as ncu's --kernel-name-base (what
// -k matches) and --print-kernel-base (what is printed): "function"
// (`addConstDouble3`), "demangled" (`addConstDouble3(int, double3 *)`) or
// "mangled". A kernel without the chosen name (a CSV export keeps one) goes
// by the name it has.
enum class NameBase { Function, Demangled, Mangled };

struct Kernel {
  int index = 0;  // order in the report
  std::string mangled;
  std::string function;
  std::string demangled;
  NameBase shown = NameBase::Demangled;  // which name display_name() gives (keet --name-base)
  Dim3 grid, block;
  uint64_t context_id = 0, stream_id = 0;
  uint64_t creation_time = 0;  // unix seconds
  uint64_t process_id = 0;
  std::string process_name;
  std::string host_name;               // of the profiled process: ncu's "Host Name" column
  std::optional<uint64_t> source_ref;  // key into Report::modules
  // Launches this kernel's values summarise: nvprof's "Invocations" (its
  // tables give one row of min/max/avg per kernel name). 0: one launch, as
  // every ncu result is.
  uint64_t invocations = 0;
  uint64_t launches() const { return invocations == 0 ? 1 : invocations; }
  // The NVTX ranges open at the launch, when the report holds them (ncu --nvtx).
  std::optional<NvtxState> nvtx;

  std::vector<Metric> metrics;
  std::vector<RuleResult> rules;

  // Lookup by exact metric name (index built lazily on first use; the first
  // metric of a repeated name wins).
  const Metric* find(std::string_view name) const;
  const Metric* find(const MetricName& name) const;
  std::optional<double> number(std::string_view name) const;
  std::optional<double> number(const MetricName& name) const;
  std::optional<std::string> text(std::string_view name) const;
  const std::string& display_name() const;
  // Forgets the lookup index: for code that edits `metrics` in place with
  // the count unchanged (a reader refilling a kernel it recycles).
  void reset_index() const noexcept { index_.reset(); }

 private:
  // Open addressing over metric positions: one allocation per kernel instead
  // of a node per metric, which matters when every kernel of a large report
  // is analysed. A copied or moved kernel starts with an empty index.
  struct LazyIndex {
    struct Slot {
      uint32_t position = 0;  // in `metrics`, plus one; 0: empty
      uint32_t hash = 0;      // high bits of the name's hash, compared before the name
    };
    std::vector<Slot> slots;  // size is a power of two, at least twice the metrics
    size_t indexed = 0;       // metrics covered
    LazyIndex() = default;
    LazyIndex(const LazyIndex&) noexcept {}
    LazyIndex& operator=(const LazyIndex&) noexcept {
      reset();
      return *this;
    }
    // noexcept moves keep std::vector<Kernel> growth moving kernels, not copying them.
    LazyIndex(LazyIndex&&) noexcept {}
    LazyIndex& operator=(LazyIndex&&) noexcept {
      reset();
      return *this;
    }
    void reset() noexcept {
      slots.clear();
      indexed = 0;
    }
  };
  void build_index() const;
  size_t probe(std::string_view name, size_t hash) const;
  const Metric* find_hashed(std::string_view name, size_t hash) const;
  mutable LazyIndex index_;
};

struct SourceFile {
  std::string path;
  std::string content;
};

// Read-only bytes kept alive by their owner: a view into the mapped report
// (io::ByteSource::share) or a copy of their own. A cubin is megabytes, and
// copying it into fresh pages was most of reading a cubin-heavy report.
class Blob {
 public:
  Blob() = default;
  // Views `bytes` inside what `owner` keeps alive; with no owner, copies them.
  Blob(std::string_view bytes, std::shared_ptr<const void> owner);
  std::string_view view() const { return view_; }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  bool shared() const { return owner_ != nullptr && !copy_; }  // a view, not a copy

 private:
  std::shared_ptr<const void> owner_;
  std::string_view view_;
  bool copy_ = false;
};

// One loaded module (a cubin) with the source files ncu imported.
struct Module {
  uint64_t reference = 0;
  uint32_t sm_revision = 0;  // major << 16 | minor
  Blob binary;               // the cubin (ELF) bytes; may be empty
  std::vector<SourceFile> files;
};

struct Device {
  uint32_t id = 0;
  std::string name;
  std::map<std::string, Value> attributes;
};

struct Session {
  uint64_t creation_time = 0;
  std::string host_name;
  std::string os;
  std::string cmdline;
  std::vector<std::pair<std::string, std::string>> versions;  // provider, version
  std::vector<Device> devices;
};

enum class Format { NcuRep, NcuCsvRaw, NcuCsvDetails, NvprofCsv };
std::string_view format_name(Format f);

struct Report {
  std::string path;
  Format format = Format::NcuRep;
  uint32_t file_version = 0;
  Session session;
  std::vector<Kernel> kernels;
  std::map<uint64_t, Module> modules;
  std::vector<std::string> warnings;
  bool partial = false;  // truncated: holds what could be read

  // "Nsight Compute Target" version (e.g. "2022.1.1.0") or empty.
  std::string ncu_version() const;
  const Module* module_for(const Kernel& k) const;
};

}  // namespace keet::model
