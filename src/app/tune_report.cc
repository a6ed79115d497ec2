// keet tune's report: the candidates table and the winner (text), keet.tune/1 (JSON).
#include <fmt/format.h>

#include "app/common.h"
#include "app/tune.h"
#include "util/json.h"

namespace keet::app {
namespace {

std::string speedup_text(std::optional<double> s) { return s ? fmt::format("{:.2f}x", *s) : "-"; }

std::string outcome_id(Outcome o) {
  std::string s(outcome_name(o));
  for (auto& ch : s)
    if (ch == ' ') ch = '_';
  return s;
}

nlohmann::json optional_number(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json candidate_json(const Candidate& c) {
  return {{"id", c.id},
          {"round", c.round},
          {"origin", c.origin},
          {"target_finding", c.target.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.target)},
          {"defines", c.defines},
          {"outcome", outcome_id(c.outcome)},
          {"reason", c.reason},
          {"duration_ns", optional_number(c.duration_ns)},
          {"measured_speedup", optional_number(c.measured_speedup)},
          {"predicted_speedup", optional_number(c.predicted_speedup)},
          {"artefacts", c.dir}};
}

}  // namespace

nlohmann::json tune_json(const TuneResult& r) {
  nlohmann::json findings = nlohmann::json::array(), candidates = nlohmann::json::array();
  for (const auto& f : r.baseline_findings)
    findings.push_back({{"id", f.id}, {"estimated_speedup", optional_number(f.estimated_speedup)}});
  for (const auto& c : r.candidates) candidates.push_back(candidate_json(c));
  nlohmann::json winner = nullptr;
  if (r.winner) {
    const auto& w = r.candidates[*r.winner];
    winner = {{"id", w.id},
              {"duration_ns", optional_number(w.duration_ns)},
              {"total_speedup", optional_number(r.total_speedup)},
              {"diff", r.winner_diff},
              {"defines", w.defines}};
  }
  return {{"schema", "keet.tune/1"},
          {"mode", r.mode},
          {"threshold", r.threshold},
          {"baseline",
           {{"report", r.baseline_report}, {"duration_ns", optional_number(r.baseline_ns)}, {"findings", findings}}},
          {"candidates", candidates},
          {"winner", winner},
          {"applied", r.applied},
          {"interrupted", r.interrupted},
          {"output_dir", r.out_dir}};
}

std::string tune_document(const TuneResult& r) { return json_text(tune_json(r), 2) + "\n"; }

std::string tune_text(const TuneResult& r) {
  std::string out =
      fmt::format("baseline: {} in its profiled kernels ({})\n", duration_text(r.baseline_ns), r.baseline_report);
  out += fmt::format("{:<24} {:<15} {:>10} {:>10} {:>9}  {}\n", "candidate", "outcome", "measured", "predicted", "time",
                     "target / reason");
  for (const auto& c : r.candidates) {
    std::string note = c.target;
    if (!c.reason.empty()) note += (note.empty() ? "" : ": ") + c.reason;
    out += fmt::format("{:<24} {:<15} {:>10} {:>10} {:>9}  {}\n", c.id, outcome_name(c.outcome),
                       speedup_text(c.measured_speedup), speedup_text(c.predicted_speedup),
                       duration_text(c.duration_ns), note);
  }
  if (r.candidates.empty()) out += "(no candidate)\n";
  if (!r.winner) {
    out += fmt::format("no candidate was correct and faster than the baseline beyond the {:.0f}% noise threshold\n",
                       r.threshold * 100);
  } else {
    const auto& w = r.candidates[*r.winner];
    out += fmt::format("winner: {} — {} faster than the baseline (measured){}\n", w.id, speedup_text(r.total_speedup),
                       r.applied ? "; applied to the project" : "; the project was not changed (--apply changes it)");
    if (!r.winner_diff.empty()) out += fmt::format("winning diff ({}/winner.diff):\n{}", r.out_dir, r.winner_diff);
  }
  out += fmt::format("artefacts: {}/\n", r.out_dir);
  return out;
}

}  // namespace keet::app
