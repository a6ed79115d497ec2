// The analysis result: what the expert engine concludes about one kernel.
// Field names follow docs/contracts.md ("keet.analysis/1").
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

enum class Severity { High, Medium, Low, Info };
std::string_view severity_name(Severity s);

enum class BottleneckClass { Memory, Compute, Latency, Launch, Unknown };
std::string_view class_name(BottleneckClass c);

// A value taken from the report (after unit conversion) or derived from report
// values by a documented formula (then `formula` says how).
struct Evidence {
  std::string metric;  // ncu metric name, or "derived:<name>"
  double value = 0;
  std::string unit;
  std::string threshold;  // optional, e.g. "> 60 %"
  std::string formula;    // for derived values
  std::string label;      // what a reader sees beside the value ("DRAM throughput"); metric names stay in JSON
};

// A source line, or (line 0: the cubin has no line table) one SASS instruction.
struct SourceRef {
  std::string file;
  int line = 0;
  double share = 0;     // fraction of the finding's cost on this line
  std::string text;     // the line's code when the report embeds the source; "SASS +0x110" for an instruction
  uint64_t offset = 0;  // lowest instruction offset on the line (bytes from the kernel's start)
  std::string sass;     // line 0: the instruction there ("LDG.E.64 R2, [R2.64]") when a disassembler gave it
  bool is_sass() const { return line == 0; }
};

struct Finding {
  std::string id;                     // e.g. "memory.uncoalesced_global"
  std::vector<std::string> relieves;  // unit ids this fix takes work off (catalogue "units")
  Severity severity = Severity::Info;
  std::string title;
  std::string explanation;
  std::vector<Evidence> evidence;
  std::optional<double> estimated_speedup;  // whole kernel, >= 1.0
  std::string speedup_formula;              // how the estimate was made
  std::vector<std::string> advice;
  std::vector<SourceRef> source;
  std::vector<std::string> references;  // knowledge-base entry ids
  std::vector<std::string> ncu_rules;   // ncu rule ids that agree with it
  // Findings that rested on the same evidence and merged into this one (their
  // ids; their title is a sentence of the explanation): one finding per fact.
  std::vector<std::string> merged;
  // False when its estimate gains nothing worth showing (estimates.listed_min_speedup):
  // pages name it in one "also noted" line; --verbose and JSON keep it whole.
  bool listed = true;
};

struct Bottleneck {
  BottleneckClass cls = BottleneckClass::Latency;
  double confidence = 0;  // 0..1
  std::vector<Evidence> evidence;
  std::string summary;  // one line
};

// The finding's own id and those merged into it.
inline bool finding_is(const Finding& f, std::string_view id) {
  return f.id == id || std::ranges::find(f.merged, id) != f.merged.end();
}

// One hardware unit's utilisation, % of its peak, as the report measured it.
struct UnitLoad {
  std::string id;     // "dram", "l1tex", "pipe_fma", "issue", ... (data/metrics/quantities.json "units")
  std::string label;  // "L1/TEX cache"
  BottleneckClass kind = BottleneckClass::Memory;  // Memory or Compute
  double pct = 0;
  Evidence evidence;  // the metric the utilisation came from
  // On a grid that leaves SMs without work: the same unit's utilisation over
  // the cycles the SMs that ran were active (the metric's
  // pct_of_peak_sustained_active form, as ncu's HighPipeUtilization reads it).
  std::optional<double> pct_on_active_sms;
};

// Which unit binds the kernel and which would bind next: every unit the
// report measures, busiest first.
struct Limiter {
  std::vector<UnitLoad> units;
  // Whether each side of the GPU is measured well enough to say nothing on it
  // is near peak: memory needs the speed-of-light number or DRAM plus a cache;
  // compute needs the speed-of-light number, issue slots or a pipe.
  bool memory_measured = false, compute_measured = false;
  const UnitLoad* binding() const { return units.empty() ? nullptr : &units[0]; }
  const UnitLoad* next() const { return units.size() < 2 ? nullptr : &units[1]; }
};

struct InvalidMetric {
  std::string metric;
  std::optional<double> value;  // absent when not finite
  std::string why;              // "not a number", "negative", ...
};

// What the report holds for this kernel, and whether it can support a class.
struct DataQuality {
  std::vector<std::string> sections_present, sections_missing;  // ncu section ids
  std::vector<std::string> collect;                             // ncu options that add what is missing
  std::vector<std::string> missing;                             // key quantities absent
  std::vector<std::string> below_floor;                         // quantities dropped: too few events to be evidence
  std::vector<InvalidMetric> invalid;
  std::vector<std::string> problems;    // grid (0,0,0), zero duration, ...
  std::vector<std::string> ncu_errors;  // ncu rule results of type ERROR ("Rule: message")
  std::string stall_unit;               // unit of the stall values, when any
  std::vector<std::string> stall_reasons;
  std::vector<double> stall_values;  // per reason above, in stall_unit
  bool stall_shares = false;         // every reason of the form's complete set is present
  bool sufficient = true;            // false: outcome insufficient_data, class unknown
  bool degraded() const { return !invalid.empty() || !problems.empty() || !ncu_errors.empty(); }
};

struct DeviceInfo {
  std::string name;
  std::string compute_capability;  // "8.6"
};

// The identity's device is the kernel's, else the report session's GPU.
struct KernelDiagnosis : model::KernelIdentity {
  std::string compute_capability;  // "8.6"; "" when neither the kernel nor the GPU tables say
  DeviceInfo device_info() const { return {device, compute_capability}; }
  Bottleneck bottleneck;
  Limiter limiter;
  DataQuality data_quality;
  std::string library;    // "cuBLAS", "CUTLASS", ... when the name says so: advice is about calling it
  std::string primitive;  // the library operation it runs ("GEMV (FP64)", "merge sort"), "" when not known
  std::vector<std::string> library_advice;  // how to call it, once for the kernel (findings then carry none)
  std::vector<Finding> findings;            // most impactful first
  std::vector<std::string> notes;           // missing metrics, lowered confidence, ...
  // Derived numbers the LLM verifier may accept as "from the report".
  std::vector<Evidence> derived;
};

struct Diagnosis {
  std::string report_path;
  std::string report_format;  // "ncu-rep" | "ncu-csv" | "nvprof-csv"
  std::string ncu_version;    // may be empty
  std::vector<KernelDiagnosis> kernels;
};

}  // namespace keet::analysis
