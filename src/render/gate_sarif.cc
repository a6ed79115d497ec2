// The gate's SARIF 2.1.0 log, for code-scanning upload: each result sits on
// the kernel's source line (from the cubin's line table) with a path relative
// to --source-root, and carries a fingerprint that stays the same across runs.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "render/diff_format.h"
#include "render/diff_gate.h"
#include "util/json.h"

#ifndef KEET_HOMEPAGE_URL
#define KEET_HOMEPAGE_URL "https://keet.invalid/"
#endif

namespace keet::render {
using namespace compare;
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kRootId = "SRCROOT";

struct Rule {
  std::string_view id, level, short_text, full_text, help;
};

// Index = GateStatus (Ok has no rule: a passing kernel is not a result).
constexpr Rule kRules[] = {
    {"keet.regression", "error", "Kernel slower than its baseline",
     "A kernel's duration grew by more than the allowed slowdown (--max-slowdown) and by at least the minimum "
     "absolute change (--min-delta) over the recorded baseline run on the same device.",
     "The message names the likely cause: findings the kernel has now and did not have before, key metrics that "
     "moved the wrong way, a bottleneck shift or a changed launch configuration. Run `keet diff` on the two "
     "reports for the whole comparison. If the change is noise, raise --max-slowdown or --min-delta."},
    {"", "", "", "", ""},
    {"keet.kernel-missing", "warning", "Kernel missing since the baseline",
     "A kernel of the baseline run has no kernel of the same name in the checked report: it was removed, renamed "
     "or not launched.",
     "Kernels pair by name (then launch order), never a kernel with a differently named one, so a renamed kernel "
     "shows as missing plus new. Record a new baseline once the rename is intended."},
    {"keet.kernel-new", "note", "New kernel without a baseline",
     "The checked report has a kernel that the baseline run does not: it is listed, not gated.",
     "Record a new baseline (keet record) so later runs gate this kernel."},
};

// RFC 3986: unreserved characters and '/' stay, every other byte is %XX.
std::string uri_path(std::string_view path) {
  std::string out;
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    bool keep = std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    out += keep ? std::string(1, c) : fmt::format("%{:02X}", u);
  }
  return out;
}

std::string file_uri(const fs::path& absolute) { return "file://" + uri_path(absolute.generic_string()); }

fs::path absolute_of(const std::string& path) {
  std::error_code ec;
  auto p = fs::absolute(fs::path(path), ec);
  return (ec ? fs::path(path) : p).lexically_normal();
}

// An artifactLocation: relative to SRCROOT when the path lies under the
// source root (or is relative, as a line table may name it), else file://
// for an absolute path. A relative report path without a root stays relative.
json artifact(const std::string& path, const std::string& root, bool relative_to_cwd) {
  fs::path p = fs::path(path).lexically_normal();
  if (!root.empty()) {
    if (p.is_relative() && !relative_to_cwd) return {{"uri", uri_path(p.generic_string())}, {"uriBaseId", kRootId}};
    fs::path rel = absolute_of(path).lexically_relative(absolute_of(root));
    if (!rel.empty() && *rel.begin() != "..") return {{"uri", uri_path(rel.generic_string())}, {"uriBaseId", kRootId}};
  }
  if (p.is_absolute()) return {{"uri", file_uri(p)}};
  if (!root.empty()) return {{"uri", file_uri(absolute_of(path))}};
  return {{"uri", uri_path(p.generic_string())}};
}

// FNV-1a, 64 bits: stable across runs, machines and standard libraries.
std::string fingerprint(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return fmt::format("{:016x}", h);
}

// Which launch of its function `k` is (0 = first) among the kernels of its report.
int occurrence(const GateResult& g, const KernelSnapshot& k, bool after) {
  int n = 0;
  auto count = [&](const KernelSnapshot& s) { n += s.index < k.index && s.same_function(k); };
  for (const auto& p : g.diff.pairs) count(after ? p.after : p.before);
  for (const auto& s : after ? g.diff.unmatched_after : g.diff.unmatched_before) count(s);
  return n;
}

json location(const GateResult& g, const KernelSnapshot& k) {
  json physical;
  if (!k.source.empty()) {
    physical["artifactLocation"] = artifact(k.source.file, g.source_root, false);
    physical["region"] = {{"startLine", k.source.line}};
  } else {
    physical["artifactLocation"] = artifact(g.report, g.source_root, true);
  }
  json logical = {{"name", k.display}, {"fullyQualifiedName", k.display}, {"kind", "function"}};
  if (!k.mangled.empty()) logical["decoratedName"] = k.mangled;
  return {{"physicalLocation", physical}, {"logicalLocations", json::array({logical})}};
}

// A regression's related locations: the source lines of the findings it
// introduced (else of the kernel's top finding), where the time now goes.
constexpr size_t kRelatedShown = 5;

json related_locations(const GateResult& g, const PairDiff& p) {
  std::vector<const FindingSummary*> shown;
  for (const auto& f : p.after.findings)
    if (std::ranges::find(p.introduced, f.id) != p.introduced.end()) shown.push_back(&f);
  if (shown.empty() && !p.after.findings.empty()) shown.push_back(&p.after.findings.front());
  json out = json::array();
  for (const auto* f : shown) {
    bool introduced = std::ranges::find(p.introduced, f->id) != p.introduced.end();
    for (const auto& line : f->lines) {
      if (out.size() >= kRelatedShown) return out;
      json loc = {{"id", out.size() + 1}};
      loc["physicalLocation"] = {{"artifactLocation", artifact(line.file, g.source_root, false)},
                                 {"region", {{"startLine", line.line}}}};
      loc["message"]["text"] = fmt::format("{}: {}{}", introduced ? "finding introduced" : "top finding", f->id,
                                           f->title.empty() ? "" : " (" + f->title + ")");
      out.push_back(std::move(loc));
    }
  }
  return out;
}

json duration_json(const KernelSnapshot* s) { return s && s->duration_ns ? json(*s->duration_ns) : json(nullptr); }

json result(const GateResult& g, const GateRow& r) {
  int s = static_cast<int>(r.status);
  const auto& k = r.kernel();
  std::string key = k.report_name();
  std::string file = source_path_under(k.source, g.source_root);
  int nth = occurrence(g, k, r.after != nullptr);
  json out = {{"ruleId", kRules[s].id}, {"ruleIndex", s == 0 ? 0 : s - 1}, {"level", kRules[s].level}};
  out["message"]["text"] = gate_row_message(r);
  out["locations"] = json::array({location(g, k)});
  out["partialFingerprints"]["keetKernel/v1"] =
      fingerprint(fmt::format("{}\n{}\n{}\n{}", kRules[s].id, key, file, nth));
  out["properties"] = {{"kernel", k.display},
                       {"launch", k.launch_text()},
                       {"baseline_ns", duration_json(r.before)},
                       {"current_ns", duration_json(r.after)},
                       {"change", r.pair && r.pair->change ? json(*r.pair->change) : json(nullptr)}};
  if (r.pair) out["properties"]["introduced"] = r.pair->introduced;
  if (r.status == GateStatus::Regression)
    if (auto related = related_locations(g, *r.pair); !related.empty()) out["relatedLocations"] = related;
  return out;
}

json rules_json(const GateResult& g) {
  json rules = json::array();
  for (const auto& rule : kRules) {
    if (rule.id.empty()) continue;
    std::string full(rule.full_text);
    if (rule.id == "keet.regression") full += fmt::format(" This run: {}.", gate_limits(g));
    json r = {{"id", rule.id},
              {"name", rule.id.substr(rule.id.find('.') + 1)},
              {"shortDescription", {{"text", rule.short_text}}},
              {"fullDescription", {{"text", full}}},
              {"help", {{"text", rule.help}, {"markdown", rule.help}}},
              {"helpUri", std::string(KEET_HOMEPAGE_URL)},
              {"defaultConfiguration", {{"level", rule.level}}}};
    rules.push_back(std::move(r));
  }
  return rules;
}

}  // namespace

std::string gate_sarif(const GateResult& g) {
  json results = json::array();
  for (const auto& r : gate_rows(g))
    if (r.status != GateStatus::Ok) results.push_back(result(g, r));
  json driver = {{"name", "keet"},
                 {"version", KEET_VERSION},
                 {"semanticVersion", KEET_VERSION},
                 {"informationUri", std::string(KEET_HOMEPAGE_URL)},
                 {"rules", rules_json(g)}};
  json run = {{"tool", {{"driver", driver}}}, {"results", results}};
  if (!g.source_root.empty()) {
    std::string root = file_uri(absolute_of(g.source_root));
    if (root.back() != '/') root += '/';  // SARIF: a base URI ends with a slash
    run["originalUriBaseIds"][std::string(kRootId)] = {{"uri", root}};
  }
  run["properties"] = {{"report", g.report},
                       {"baseline", g.baseline},
                       {"max_slowdown", g.max_slowdown},
                       {"min_delta_ns", g.min_delta_ns},
                       {"paired", g.diff.pairs.size()},
                       {"passed", !g.failed()}};
  json sarif = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"}, {"version", "2.1.0"}, {"runs", json::array({run})}};
  return json_text(sarif, 2) + "\n";
}

}  // namespace keet::render
