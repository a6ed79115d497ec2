// The analysis result: what the expert engine concludes about one kernel.
// Field names follow shared/docs/analysis-contract.md ("keet.analysis/1").
#pragma once
#include <optional>
#include <string>
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
  std::string metric;   // ncu metric name, or "derived:<name>"
  double value = 0;
  std::string unit;
  std::string threshold;  // optional, e.g. "> 60 %"
  std::string formula;    // for derived values
};

struct SourceRef {
  std::string file;
  int line = 0;
  double share = 0;  // fraction of the finding's cost on this line
  std::string text;  // the line's code when the report embeds the source
};

struct Finding {
  std::string id;  // e.g. "memory.uncoalesced_global"
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
};

struct Bottleneck {
  BottleneckClass cls = BottleneckClass::Latency;
  double confidence = 0;  // 0..1
  std::vector<Evidence> evidence;
  std::string summary;    // one line
};

struct DeviceInfo {
  std::string name;
  std::string compute_capability;  // "8.6"
};

struct KernelDiagnosis {
  int index = 0;
  std::string name;       // as the report names it (mangled if known)
  std::string demangled;
  DeviceInfo device;
  model::Dim3 grid, block;
  std::optional<double> duration_ns;
  Bottleneck bottleneck;
  std::vector<Finding> findings;  // most impactful first
  std::vector<std::string> notes; // missing metrics, lowered confidence, ...
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
