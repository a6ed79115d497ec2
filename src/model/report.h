// The model: what KEET read from a report, independent of the file format.
//
// Every reader (ncu-rep, ncu CSV, nvprof CSV) fills these structs; analysis,
// LLM, diff and renderers only ever see this layer. See ARCHITECTURE.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace keet::model {

// One metric value as stored: ncu writes exactly one of these (or none).
struct Value {
  enum class Kind : uint8_t { None, Double, Float, Uint64, Uint32, String };
  Kind kind = Kind::None;
  double number = 0;   // valid for every numeric kind
  uint64_t integer = 0;  // exact value for Uint64/Uint32 (PCs need all 64 bits)
  std::string text;    // String kind

  static Value of_double(double v);
  static Value of_float(float v);
  static Value of_uint(uint64_t v, bool is32 = false);
  static Value of_string(std::string v);
  bool is_number() const { return kind != Kind::None && kind != Kind::String; }
  bool empty() const { return kind == Kind::None; }
  std::optional<double> as_number() const;
};

struct Instance {
  Value key;    // PC, opcode, register count, ... (meaning depends on the metric)
  Value value;
};

struct Metric {
  std::string name;
  Value value;
  std::vector<Instance> instances;
  // Unit as written by a CSV export; empty for ncu-rep (units come from the
  // metric database in analysis/units).
  std::string unit;
  // The report holds per-instance values for this metric, even when the reader
  // was told not to keep them (ReadOptions::instances false).
  bool listed = false;
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
  int speedup_type = 0;                      // 0 local/unknown, 1 global
};

struct RuleResult {
  std::string id;            // e.g. "UncoalescedGlobalAccess"
  std::string display_name;
  std::string section;       // SectionIdentifier
  std::vector<RuleMessage> messages;
  std::vector<FocusMetric> focus;
};

struct Dim3 {
  uint64_t x = 0, y = 0, z = 0;
  uint64_t product() const { return x * y * z; }
  bool operator==(const Dim3&) const = default;
};

struct Kernel {
  int index = 0;             // order in the report
  std::string mangled;
  std::string function;
  std::string demangled;
  Dim3 grid, block;
  uint64_t context_id = 0, stream_id = 0;
  uint64_t creation_time = 0;  // unix seconds
  uint64_t process_id = 0;
  std::string process_name;
  std::string host_name;  // of the profiled process: ncu's "Host Name" column
  std::optional<uint64_t> source_ref;  // key into Report::modules

  std::vector<Metric> metrics;
  std::vector<RuleResult> rules;

  // Lookup by exact metric name (index built lazily on first use).
  const Metric* find(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  std::optional<std::string> text(std::string_view name) const;
  const std::string& display_name() const;

 private:
  // Name -> position in `metrics`. Views point into this kernel's own strings,
  // so a copied or moved kernel starts with an empty index and rebuilds it.
  struct LazyIndex {
    std::unordered_map<std::string_view, size_t> map;
    size_t indexed = 0;  // metrics covered (names can repeat, so not map.size())
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
      map.clear();
      indexed = 0;
    }
  };
  mutable LazyIndex index_;
};

struct SourceFile {
  std::string path;
  std::string content;
};

// One loaded module (a cubin) with the source files ncu imported.
struct Module {
  uint64_t reference = 0;
  uint32_t sm_revision = 0;  // major << 16 | minor
  std::string binary;        // the cubin (ELF) bytes; may be empty
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
