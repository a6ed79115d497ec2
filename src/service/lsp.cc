#include "service/lsp.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <istream>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "kb/knowledge_base.h"
#include "model/units.h"
#include "render/kb_entry.h"
#include "service/jsonrpc.h"
#include "util/pattern.h"
#include "util/strings.h"

namespace keet::service {
// Named, not anonymous: unity builds put this file beside mcp.cc and api.cc.
namespace lsp_impl {

using nlohmann::json;

// DiagnosticSeverity.
constexpr int kWarning = 2, kInformation = 3, kHint = 4;
constexpr size_t kLensesPerLine = 3;
// MessageType of window/showMessage and window/logMessage.
constexpr int kError = 1, kInfo = 3;
// The commands code actions run (workspace/executeCommand).
constexpr std::string_view kExplain = "keet.explain", kOpenHtml = "keet.openHtmlReport", kShowSass = "keet.showSass";
// The topic a diagnostic about a kernel that marks no line is about.
constexpr std::string_view kSourceLinesTopic = "topic:source_lines";
constexpr size_t kMaxShownBytes = 16 << 10;  // of a command's text in a message
constexpr int kRequestFailed = -32803;       // LSP's own error code

struct Document {
  std::string path;
  std::string text;
  std::vector<std::string_view> lines() const {
    std::vector<std::string_view> out;
    std::string_view t = text;
    size_t start = 0;
    while (start <= t.size()) {
      size_t end = t.find('\n', start);
      if (end == std::string_view::npos) end = t.size();
      auto line = t.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      out.push_back(line);
      if (end == t.size()) break;
      start = end + 1;
    }
    return out;
  }
};

// A line of a loaded report as it falls on an open file.
struct Placed {
  const LspIndex* report;
  const LspLine* line;
  const LspKernel& kernel() const { return report->kernels[line->kernel]; }
};

// Positions count UTF-16 code units (the protocol's default encoding).
size_t utf16_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    n += c >= 0xF0 ? 2 : 1;            // four-byte sequences are surrogate pairs
  }
  return n;
}

json line_range(int line, std::string_view text) {
  size_t indent = text.find_first_not_of(" \t");
  size_t first = indent == std::string_view::npos ? 0 : utf16_length(text.substr(0, indent));
  return {{"start", {{"line", line - 1}, {"character", first}}},
          {"end", {{"line", line - 1}, {"character", utf16_length(text)}}}};
}

std::string speedup_text(const std::optional<double>& s) {
  return s ? fmt::format("est. speedup {:.2f}x", *s) : std::string("gain not estimated");
}

std::string stalls_text(const LspLine& l) {
  std::vector<std::string> parts;
  for (const auto& [reason, share] : l.stalls) parts.push_back(fmt::format("{} {}", reason, percent(share)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string short_name(const LspKernel& k) { return k.function.empty() ? k.identity.display_name() : k.function; }

std::string duration_text(const LspKernel& k) {
  return k.identity.duration_ns ? model::readable_duration(*k.identity.duration_ns)
                                : std::string("duration not measured");
}

std::string basename(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

const LspLineFinding* strongest(const LspLine& l) {
  const LspLineFinding* best = nullptr;
  for (const auto& f : l.findings)
    if (!best || f.severity < best->severity || (f.severity == best->severity && f.share > best->share)) best = &f;
  return best;
}

// Warning: a high-severity finding whose cost sits largely here; information:
// any finding, or a fifth of the kernel; hint: a hot line and nothing more.
int severity_of(const LspLine& l) {
  const auto* f = strongest(l);
  if (f && f->severity == analysis::Severity::High && (l.share >= 0.10 || f->share >= 0.25)) return kWarning;
  if (f || l.share >= 0.20) return kInformation;
  return kHint;
}

std::string diagnostic_message(const Placed& p) {
  const auto& l = *p.line;
  const auto& k = p.kernel();
  std::string m = fmt::format("{} of {}'s {}", percent(l.share), short_name(k), k.cost_metric);
  if (!l.stalls.empty()) m += fmt::format(" (stalls: {})", stalls_text(l));
  if (const auto* f = strongest(l))
    m += fmt::format("; {}: {} of its cost on this line, {}", f->title, percent(f->share), speedup_text(f->speedup));
  return m;
}

std::string hover_text(const std::vector<Placed>& here) {
  std::string out;
  for (const auto& p : here) {
    const auto& l = *p.line;
    const auto& k = p.kernel();
    if (!out.empty()) out += "\n\n---\n\n";
    out += fmt::format("**keet** · `{}` ({}, kernel {}) · {} · {}\n\n", k.identity.display_name(), basename(k.report),
                       k.identity.index, duration_text(k), k.bottleneck);
    out += fmt::format("- this line: **{}** of the kernel's {} ({:.0f} of {:.0f})", percent(l.share), k.cost_metric,
                       l.cost, k.cost_total);
    if (l.samples > 0 && k.cost_metric != "stall samples") out += fmt::format("; {:.0f} stall samples", l.samples);
    if (l.instructions > 0 && k.cost_metric != "executed instructions")
      out += fmt::format("; {:.0f} executed instructions", l.instructions);
    out += "\n";
    if (!l.stalls.empty()) out += fmt::format("- stalls on this line: {}\n", stalls_text(l));
    for (const auto& f : l.findings)
      out += fmt::format("- **{}** ({}): {} of its cost is on this line; {} for the kernel\n", f.title,
                         analysis::severity_name(f.severity), percent(f.share), speedup_text(f.speedup));
    if (l.findings.empty() && !k.top_finding.empty())
      out += fmt::format("- the kernel's top finding: {} ({})\n", k.top_finding, speedup_text(k.top_speedup));
  }
  return out;
}

// `name` without "(anonymous namespace)::", whose parenthesis is not a
// parameter list.
std::string without_anonymous(std::string_view name) {
  constexpr std::string_view anon = "(anonymous namespace)::";
  std::string out;
  for (size_t at; (at = name.find(anon)) != std::string_view::npos; name.remove_prefix(at + anon.size()))
    out += name.substr(0, at);
  return out + std::string(name);
}

// Up to the parameter list: the first '(' outside template arguments, which
// a demangler may write with casts ("k<(int)32>(float*)").
std::string_view without_parameters(std::string_view name) {
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

// The kernel's own name as a source file spells it: no parameters, template
// arguments, namespaces or return type. "" when it is not an identifier.
std::string base_name(std::string_view full) {
  std::string plain = without_anonymous(full);
  std::string_view name = without_parameters(plain);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == '>') ++depth;
      if (name[i] == '<' && --depth == 0) {
        name = name.substr(0, i);
        break;
      }
    }
  }
  if (auto colons = name.rfind("::"); colons != std::string_view::npos) name = name.substr(colons + 2);
  if (auto space = name.find_last_of(" *&"); space != std::string_view::npos) name = name.substr(space + 1);
  bool ident = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
               std::all_of(name.begin(), name.end(),
                           [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  return ident ? std::string(name) : std::string();
}

// The 1-based line where `function` is defined as a kernel: a CUDA __global__
// function or a Python (Triton) def. 0 when the file does not define it.
int definition_line(const std::vector<std::string_view>& lines, const std::string& function) {
  if (function.empty()) return 0;
  auto call = Pattern::compile("(?:^|[^A-Za-z0-9_])" + function + R"(\s*(?:<[^;{()]*>)?\s*\()");
  auto def = Pattern::compile(R"(^\s*(?:async\s+)?def\s+)" + function + R"(\s*\()");
  if (!call || !def) return 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (def->search(lines[i])) return static_cast<int>(i + 1);
    if (!call->search(lines[i])) continue;
    for (size_t back = 0; back <= 3 && back <= i; ++back)
      if (lines[i - back].find("__global__") != std::string_view::npos) return static_cast<int>(i + 1);
  }
  return 0;
}

// Members of a client's message, of the expected type or empty: a message is
// untrusted input and a wrong type is an ordinary bad message.
const json& member(const json& j, std::string_view key) {
  static const json none;
  if (!j.is_object()) return none;
  auto it = j.find(key);
  return it == j.end() ? none : *it;
}
std::string string_member(const json& j, std::string_view key) {
  const json& m = member(j, key);
  return m.is_string() ? m.get<std::string>() : std::string();
}

std::string text_of(const json& j) { return j.dump(-1, ' ', true, json::error_handler_t::replace); }

// One diagnostic of an open file before it is JSON: what a code action needs
// to find its kernel and term again from the line and code a client echoes.
struct Diag {
  int line = 0;
  int severity = kHint;
  std::string code, message;
  std::string term;                   // the knowledge-base entry it is about; "" when none
  const LspKernel* kernel = nullptr;  // whose cost or gap it shows
};

// The knowledge base's entry `term` names exactly; null when none (or when
// the built-in base cannot load, which its own tests catch).
const kb::Entry* entry_of(std::string_view term) {
  if (term.empty()) return nullptr;
  auto base = kb::builtin();
  if (!base) return nullptr;
  auto entry = (*base)->lookup(term);
  return entry ? *entry : nullptr;
}

// What a line's diagnostic is about: its strongest finding, else its top stall reason.
std::string term_of(const LspLine& l) {
  if (const auto* f = strongest(l)) return "finding:" + f->id;
  return l.stalls.empty() ? std::string() : "stall:" + l.stalls.front().first;
}

std::string_view gap_code(LspLineGap gap) {
  switch (gap) {
    case LspLineGap::NoSourceCounters:
      return "no-source-counters";
    case LspLineGap::NoLineTable:
      return "no-lineinfo";
    case LspLineGap::Unmapped:
    case LspLineGap::None:
      break;
  }
  return "no-mapped-lines";
}

// A name every file system takes: "finding:memory.x" -> "finding-memory.x".
std::string file_safe(std::string_view name) {
  std::string out;
  for (unsigned char c : name) out.push_back(std::isalnum(c) || c == '.' || c == '_' || c == '-' ? c : '-');
  return out;
}

std::string first_line(std::string_view text) {
  text = trim(text);
  return std::string(text.substr(0, text.find('\n')));
}

std::string bounded(std::string text) {
  if (text.size() > kMaxShownBytes) text = text.substr(0, kMaxShownBytes) + "\n[...]";
  return text;
}

json show_message(int type, std::string text) {
  return jsonrpc::notification("window/showMessage", {{"type", type}, {"message", std::move(text)}});
}

struct StateImpl {
  LspOptions options;
  bool initialized = false, shutdown = false, exited = false;
  std::map<std::string, LspIndex> reports;  // by report path
  std::map<std::string, Document> open;     // by URI
  std::vector<std::string> held;            // log messages from before `initialize`
  bool show_document = false;               // the client takes window/showDocument
  int next_request = 0;                     // ids of our requests to the client
  // Knowledge entries written under output_dir: term -> file:// URI (nullopt: none to link).
  mutable std::map<std::string, std::optional<std::string>> hrefs;

  // How well a report's path names the file at `path`: 0 when it does not.
  int match(std::string_view report_path, std::string_view path) const {
    if (!options.source_root.empty()) return rooted_match(report_path, path, options.source_root);
    return shared_suffix(report_path, path);
  }

  // The report files that name `path`: those sharing the longest suffix with it.
  std::vector<Placed> placed(const std::string& path) const {
    std::map<std::string_view, int> score;
    int best = 0;
    for (const auto& [_, r] : reports)
      for (const auto& l : r.lines)
        if (auto [it, fresh] = score.try_emplace(l.file, 0); fresh)
          best = std::max(best, it->second = match(l.file, path));
    std::vector<Placed> out;
    if (best == 0) return out;
    for (const auto& [_, r] : reports)
      for (const auto& l : r.lines)
        if (score[l.file] == best) out.push_back({&r, &l});
    return out;
  }

  std::vector<Diag> records(const Document& doc) const {
    auto lines = doc.lines();
    std::vector<Placed> shown;
    for (const auto& p : placed(doc.path))
      if ((p.line->share >= options.min_share || !p.line->findings.empty()) && p.line->line >= 1 &&
          static_cast<size_t>(p.line->line) <= lines.size())
        shown.push_back(p);
    std::stable_sort(shown.begin(), shown.end(), [](const Placed& a, const Placed& b) {
      return severity_of(*a.line) != severity_of(*b.line) ? severity_of(*a.line) < severity_of(*b.line)
                                                          : a.line->share > b.line->share;
    });
    if (shown.size() > options.max_diagnostics) shown.resize(options.max_diagnostics);
    std::vector<Diag> out;
    for (const auto& p : shown) {
      const auto* f = strongest(*p.line);
      out.push_back({p.line->line, severity_of(*p.line), f ? f->id : std::string("hot-line"), diagnostic_message(p),
                     term_of(*p.line), &p.kernel()});
    }
    for (auto& d : gap_records(doc)) out.push_back(std::move(d));
    return out;
  }

  // One diagnostic per kernel name on its definition when that kernel marks
  // no line: without it the editor would show nothing and not say why.
  std::vector<Diag> gap_records(const Document& doc) const {
    std::vector<Diag> out;
    for (const auto& [line, kernels] : definitions(doc)) {
      std::set<std::string> said;
      for (const auto* k : kernels)
        if (k->line_gap != LspLineGap::None && said.insert(short_name(*k)).second)
          out.push_back({line, kInformation, std::string(gap_code(k->line_gap)),
                         fmt::format("no line of {} is marked: {}", short_name(*k), line_gap_text(k->line_gap)),
                         std::string(kSourceLinesTopic), k});
    }
    return out;
  }

  json diagnostics(const std::string& uri, const Document& doc) const {
    auto lines = doc.lines();
    json list = json::array();
    for (const auto& d : records(doc)) {
      json j = {{"range", line_range(d.line, lines[d.line - 1])},
                {"severity", d.severity},
                {"source", "keet"},
                {"code", d.code},
                {"message", d.message}};
      if (auto href = entry_href(d.term)) j["codeDescription"] = {{"href", *href}};
      list.push_back(std::move(j));
    }
    return jsonrpc::notification("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", std::move(list)}});
  }

  // A file:// URI of the knowledge entry `term` names, written as text under
  // output_dir on first use (the editor opens it like any file, offline, and
  // it is the text `keet explain` prints); nullopt when there is none.
  std::optional<std::string> entry_href(const std::string& term) const {
    if (term.empty() || options.output_dir.empty()) return std::nullopt;
    auto [it, fresh] = hrefs.try_emplace(term);
    if (!fresh) return it->second;
    const kb::Entry* e = entry_of(term);
    if (!e) return std::nullopt;
    std::string path = options.output_dir + "/kb/" + file_safe(term) + ".txt";
    std::error_code ec;
    std::filesystem::create_directories(options.output_dir + "/kb", ec);
    if (auto w = io::write_text_file(path, render::kb_entry_text(*e)); !w) {
      if (options.log) options.log(w.error().message);
      return std::nullopt;
    }
    return it->second = uri_of_path(path);
  }

  // The code actions on the client's diagnostics that are KEET's: found
  // again by line and code, so nothing but those two is taken from the client.
  json code_actions(const Document& doc, const json& params) const {
    json out = json::array();
    const json& theirs = member(member(params, "context"), "diagnostics");
    if (!theirs.is_array()) return out;
    auto mine = records(doc);
    for (const json& d : theirs) {
      const json& line = member(member(member(d, "range"), "start"), "line");
      if (string_member(d, "source") != "keet" || !line.is_number_unsigned()) continue;
      for (const auto& r : mine)
        if (static_cast<uint64_t>(r.line) == line.get<uint64_t>() + 1 && r.code == string_member(d, "code"))
          actions_for(r, d, out);
    }
    return out;
  }

  void actions_for(const Diag& r, const json& diagnostic, json& out) const {
    auto action = [&](const std::string& title, std::string_view command, json args) {
      out.push_back({{"title", title},
                     {"kind", "quickfix"},
                     {"diagnostics", json::array({diagnostic})},
                     {"command", {{"title", title}, {"command", command}, {"arguments", std::move(args)}}}});
    };
    if (entry_of(r.term)) action("Explain " + r.term, kExplain, json::array({r.term}));
    if (!r.kernel || !options.run) return;
    json kernel = json::array({r.kernel->report, r.kernel->identity.index});
    if (!options.output_dir.empty()) action("Open the HTML report for this kernel", kOpenHtml, kernel);
    if (options.disassembler && r.kernel->line_gap == LspLineGap::NoLineTable)
      action("Show SASS of this hot spot", kShowSass, kernel);
  }

  // The kernel a command's arguments name: [report, index], a report this
  // server has read and a kernel of it. A copy: commands run unlocked.
  std::optional<LspKernel> kernel_of(const json& args) const {
    if (!args.is_array() || args.size() != 2 || !args[0].is_string() || !args[1].is_number_unsigned())
      return std::nullopt;
    auto it = reports.find(args[0].get<std::string>());
    if (it == reports.end()) return std::nullopt;
    for (const auto& k : it->second.kernels)
      if (static_cast<uint64_t>(k.identity.index) == args[1].get<uint64_t>()) return k;
    return std::nullopt;
  }

  // Where a kernel's HTML report goes: one file per report and kernel,
  // written again each time (the report may have changed).
  std::string html_path(const LspKernel& k) const {
    auto stem = std::filesystem::path(k.report).stem().string();
    return fmt::format("{}/html/{}-{:08x}-k{}.html", options.output_dir, file_safe(stem),
                       std::hash<std::string>{}(k.report) & 0xffffffffu, k.identity.index);
  }

  json request(std::string method, json params) {
    return {{"jsonrpc", "2.0"},
            {"id", fmt::format("keet-{}", ++next_request)},
            {"method", std::move(method)},
            {"params", std::move(params)}};
  }

  json hover(const Document& doc, int line) const {
    std::vector<Placed> here;
    for (const auto& p : placed(doc.path))
      if (p.line->line == line) here.push_back(p);
    if (here.empty()) return nullptr;
    std::stable_sort(here.begin(), here.end(),
                     [](const Placed& a, const Placed& b) { return a.line->share > b.line->share; });
    auto lines = doc.lines();
    json h = {{"contents", {{"kind", "markdown"}, {"value", hover_text(here)}}}};
    if (line >= 1 && static_cast<size_t>(line) <= lines.size()) h["range"] = line_range(line, lines[line - 1]);
    return h;
  }

  // Where each loaded kernel is defined in this file, by its name in the
  // text, else by the line of its first instruction.
  std::map<int, std::vector<const LspKernel*>> definitions(const Document& doc) const {
    auto lines = doc.lines();
    std::map<std::string, int> found;  // function -> line
    std::map<int, std::vector<const LspKernel*>> at;
    for (const auto& [_, r] : reports)
      for (const auto& k : r.kernels) {
        std::string fn = base_name(short_name(k));
        auto [it, fresh] = found.try_emplace(fn, 0);
        if (fresh) it->second = definition_line(lines, fn);
        int line = it->second;
        if (line == 0 && k.start && k.start->line >= 1 && static_cast<size_t>(k.start->line) <= lines.size() &&
            match(k.start->file, doc.path) > 0)
          line = k.start->line;
        if (line > 0) at[line].push_back(&k);
      }
    return at;
  }

  json code_lenses(const Document& doc) const {
    auto lines = doc.lines();
    json out = json::array();
    for (auto& [line, kernels] : definitions(doc)) {
      // One lens per kernel name on the line, its longest launch first.
      std::map<std::string, std::vector<const LspKernel*>> by_name;
      for (const auto* k : kernels) by_name[k->identity.display_name()].push_back(k);
      std::vector<std::vector<const LspKernel*>> groups;
      for (auto& [_, g] : by_name) {
        std::stable_sort(g.begin(), g.end(), [](const LspKernel* a, const LspKernel* b) {
          return a->identity.duration_ns.value_or(0) > b->identity.duration_ns.value_or(0);
        });
        groups.push_back(std::move(g));
      }
      std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
        return a.front()->identity.duration_ns.value_or(0) > b.front()->identity.duration_ns.value_or(0);
      });
      size_t shown = 0;
      for (const auto& g : groups) {
        if (shown++ == kLensesPerLine) break;
        out.push_back({{"range", line_range(line, lines[line - 1])},
                       {"command", {{"title", lens_title(g, by_name.size() > 1)}, {"command", ""}}}});
      }
    }
    return out;
  }

  static std::string lens_title(const std::vector<const LspKernel*>& g, bool name_it) {
    const auto& k = *g.front();
    std::string t = "keet: ";
    if (name_it) t += short_name(k) + " ";
    if (g.size() == 1) {
      t += duration_text(k);
    } else {
      double sum = 0;
      for (const auto* x : g) sum += x->identity.duration_ns.value_or(0);
      t += fmt::format("{} launches profiled, {} in all, longest {}", g.size(), model::readable_duration(sum),
                       duration_text(k));
    }
    t += " · " + k.bottleneck;
    if (!k.top_finding.empty()) t += fmt::format(" · {} ({})", k.top_finding, speedup_text(k.top_speedup));
    return t;
  }
};

// What a command gives: messages to the client, then its answer or an error.
struct Executed {
  std::vector<json> messages;
  json result;
  std::optional<std::pair<int, std::string>> error;
};

Executed failed(int code, std::string why) { return {{}, nullptr, std::pair{code, std::move(why)}}; }

Executed explain(const json& args) {
  bool one = args.is_array() && args.size() == 1 && args[0].is_string();
  const kb::Entry* e = one ? entry_of(args[0].get<std::string>()) : nullptr;
  if (!e) return failed(jsonrpc::kInvalidParams, fmt::format("{} takes one knowledge-base id", kExplain));
  std::string text = render::kb_entry_text(*e);
  return {{show_message(kInfo, text)}, text, std::nullopt};
}

// The command lines, run in process: one kernel by its index in the report
// (-s skips the kernels before it, with no -k every kernel counts).
std::vector<std::string> html_command(const LspKernel& k, const std::string& path) {
  return {"analyze", k.report, "-s", std::to_string(k.identity.index), "-c", "1", "--format", "html", "-o", path};
}
std::vector<std::string> sass_command(const LspKernel& k) {
  return {"source", k.report, "-s", std::to_string(k.identity.index), "-c", "1", "--top", "10"};
}

// Runs a kernel's command without the server's lock: analysing a kernel takes
// a while, and the report watcher must not wait for it.
Executed run_kernel_command(StateImpl& s, std::unique_lock<std::mutex>& lock, const LspKernel& k, bool html) {
  std::string path = html ? s.html_path(k) : std::string();
  std::error_code ec;
  if (html) std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  lock.unlock();
  auto ran = s.options.run(html ? html_command(k, path) : sass_command(k));
  lock.lock();
  std::string name = short_name(k);
  if (ran.exit_code != 0) {
    std::string why = fmt::format("keet: {} of {} failed: {}", html ? "the HTML report" : "the SASS listing", name,
                                  first_line(ran.err));
    return {{show_message(kError, why)}, nullptr, std::pair{kRequestFailed, why}};
  }
  if (!html) {
    std::string text = bounded(fmt::format("keet: the costliest SASS instructions of {}:\n{}", name, ran.out));
    return {{show_message(kInfo, text)}, text, std::nullopt};
  }
  if (s.show_document)
    return {{s.request("window/showDocument", {{"uri", uri_of_path(path)}, {"external", true}})}, path, std::nullopt};
  return {{show_message(kInfo, fmt::format("keet: the HTML report of {} is {}", name, path))}, path, std::nullopt};
}

Executed execute(StateImpl& s, std::unique_lock<std::mutex>& lock, const json& params) {
  std::string command = string_member(params, "command");
  const json& args = member(params, "arguments");
  if (command == kExplain) return explain(args);
  bool html = command == kOpenHtml;
  if (!html && command != kShowSass) return failed(jsonrpc::kInvalidParams, fmt::format("no command {}", command));
  auto k = s.kernel_of(args);
  if (!k)
    return failed(jsonrpc::kInvalidParams, fmt::format("{} takes a report keet read and a kernel's index", command));
  bool offered = s.options.run && (html ? !s.options.output_dir.empty() : s.options.disassembler);
  if (!offered) return failed(kRequestFailed, fmt::format("{} is not available here", command));
  return run_kernel_command(s, lock, *k, html);
}

}  // namespace lsp_impl

struct LspServer::State : lsp_impl::StateImpl {};

LspServer::LspServer(LspOptions options) : state_(std::make_unique<State>()) { state_->options = std::move(options); }
LspServer::~LspServer() = default;

bool LspServer::exited() const {
  std::lock_guard lock(mutex_);
  return state_->exited;
}
int LspServer::exit_code() const {
  std::lock_guard lock(mutex_);
  return state_->shutdown ? 0 : 1;
}

std::vector<std::string> LspServer::log_message(std::string_view text, int type) {
  using lsp_impl::text_of;
  std::string m =
      text_of(jsonrpc::notification("window/logMessage", {{"type", type}, {"message", fmt::format("keet: {}", text)}}));
  std::lock_guard lock(mutex_);
  if (state_->initialized) return {std::move(m)};
  state_->held.push_back(std::move(m));
  return {};
}

std::vector<std::string> LspServer::set_report(const std::string& path, LspIndex index) {
  using lsp_impl::text_of;
  std::lock_guard lock(mutex_);
  auto& s = *state_;
  s.reports[path] = std::move(index);
  std::vector<std::string> out;
  if (!s.initialized) return out;
  for (const auto& [uri, doc] : s.open) out.push_back(text_of(s.diagnostics(uri, doc)));
  return out;
}

std::vector<std::string> LspServer::handle(std::string_view message) {
  using lsp_impl::kExplain;
  using lsp_impl::kOpenHtml;
  using lsp_impl::kShowSass;
  using lsp_impl::member;
  using lsp_impl::string_member;
  using lsp_impl::text_of;
  using nlohmann::json;
  json m = json::parse(message, nullptr, false);
  if (m.is_discarded() || !m.is_object())
    return {text_of(jsonrpc::error(nullptr, jsonrpc::kParseError, "not a JSON object"))};
  bool is_request = m.contains("id");
  json id = is_request ? m["id"] : json();
  if (!m.contains("method") || !m["method"].is_string()) {
    // A response to a request of ours (we send none), or garbage.
    return is_request && !m.contains("result") && !m.contains("error")
               ? std::vector<std::string>{text_of(jsonrpc::error(id, jsonrpc::kInvalidRequest, "no method"))}
               : std::vector<std::string>{};
  }
  std::string method = m["method"];
  const json& params = member(m, "params");
  std::unique_lock lock(mutex_);
  auto& s = *state_;
  std::vector<std::string> out;
  auto reply = [&](json result) { out.push_back(text_of(jsonrpc::result(id, std::move(result)))); };
  auto fail = [&](int code, std::string_view why) {
    if (is_request) out.push_back(text_of(jsonrpc::error(id, code, std::string(why))));
  };
  if (method == "exit") {
    s.exited = true;
    return out;
  }
  if (method == "initialize") {
    s.initialized = true;
    s.show_document =
        member(member(member(member(params, "capabilities"), "window"), "showDocument"), "support") == true;
    reply({{"capabilities",
            {{"textDocumentSync", {{"openClose", true}, {"change", 1}}},
             {"hoverProvider", true},
             {"codeLensProvider", {{"resolveProvider", false}}},
             {"codeActionProvider", {{"codeActionKinds", json::array({"quickfix"})}}},
             {"executeCommandProvider",
              {{"commands", json::array({std::string(kExplain), std::string(kOpenHtml), std::string(kShowSass)})}}}}},
           {"serverInfo", {{"name", "keet"}}}});
    for (auto& held : s.held) out.push_back(std::move(held));
    s.held.clear();
    return out;
  }
  if (!s.initialized) {
    fail(jsonrpc::kServerNotInitialized, "initialize first");
    return out;
  }
  if (s.shutdown && is_request) {
    fail(jsonrpc::kInvalidRequest, "the server is shutting down");
    return out;
  }
  if (method == "shutdown") {
    s.shutdown = true;
    reply(nullptr);
    return out;
  }

  const json& doc_param = member(params, "textDocument");
  std::string uri = string_member(doc_param, "uri");
  if (method == "textDocument/didOpen" || method == "textDocument/didChange") {
    auto path = path_of_uri(uri);
    if (!path) return out;  // not a file (an untitled buffer): nothing of ours is in it
    auto& doc = s.open[uri];
    doc.path = *path;
    if (method == "textDocument/didOpen") {
      doc.text = string_member(doc_param, "text");
      out.push_back(text_of(s.diagnostics(uri, doc)));
    } else if (const json& changes = member(params, "contentChanges");
               changes.is_array() && !changes.empty() && member(changes.back(), "text").is_string()) {
      doc.text = changes.back()["text"].get<std::string>();  // full sync: the last change is the whole text
    }
    return out;
  }
  if (method == "textDocument/didClose") {
    s.open.erase(uri);
    out.push_back(text_of(
        jsonrpc::notification("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}})));
    return out;
  }
  if (method == "workspace/executeCommand") {
    auto done = lsp_impl::execute(s, lock, params);
    for (const auto& m : done.messages) out.push_back(text_of(m));
    if (done.error)
      fail(done.error->first, done.error->second);
    else
      reply(std::move(done.result));
    return out;
  }
  if (method == "textDocument/hover" || method == "textDocument/codeLens" || method == "textDocument/codeAction") {
    auto it = s.open.find(uri);
    if (it == s.open.end()) {
      // A file the client did not open with us: read nothing, know nothing.
      reply(method == "textDocument/hover" ? json(nullptr) : json::array());
      return out;
    }
    if (method == "textDocument/codeLens") {
      reply(s.code_lenses(it->second));
      return out;
    }
    if (method == "textDocument/codeAction") {
      reply(s.code_actions(it->second, params));
      return out;
    }
    const json& line = member(member(params, "position"), "line");
    if (!line.is_number_unsigned() || line.get<uint64_t>() >= 1u << 30) {
      fail(jsonrpc::kInvalidParams, "hover needs position.line, a line number");
      return out;
    }
    reply(s.hover(it->second, static_cast<int>(line.get<uint64_t>()) + 1));
    return out;
  }
  if (is_request) fail(jsonrpc::kMethodNotFound, fmt::format("keet does not handle {}", method));
  return out;  // notifications we do not need ($/cancelRequest, initialized, didSave...)
}

bool read_lsp_message(std::istream& in, std::string& body, std::string& error, size_t max_bytes) {
  error.clear();
  std::string header;
  std::optional<size_t> length;
  bool any = false;
  while (std::getline(in, header)) {
    any = true;
    if (!header.empty() && header.back() == '\r') header.pop_back();
    if (header.empty()) {
      if (!length) {
        error = "a message without Content-Length";
        return false;
      }
      break;
    }
    auto colon = header.find(':');
    if (colon == std::string::npos) {
      error = "a header line without ':'";
      return false;
    }
    if (to_lower(trim(std::string_view(header).substr(0, colon))) != "content-length") continue;
    auto value = trim(std::string_view(header).substr(colon + 1));
    size_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size()) {
      error = "a Content-Length that is not a number";
      return false;
    }
    if (n > max_bytes) {
      error = fmt::format("a message of {} bytes (at most {})", n, max_bytes);
      return false;
    }
    length = n;
  }
  if (!any || !length) {
    if (any) error = "input ended inside a message's headers";
    return false;
  }
  body.resize(*length);
  in.read(body.data(), static_cast<std::streamsize>(*length));
  if (static_cast<size_t>(in.gcount()) != *length) {
    error = "input ended inside a message";
    return false;
  }
  return true;
}

void write_lsp_message(std::ostream& out, std::string_view body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

std::optional<std::string> path_of_uri(std::string_view uri) {
  constexpr std::string_view scheme = "file://";
  if (!uri.starts_with(scheme)) return std::nullopt;
  uri.remove_prefix(scheme.size());
  if (auto slash = uri.find('/'); slash != 0) {
    if (slash == std::string_view::npos || uri.substr(0, slash) != "localhost") return std::nullopt;  // another host
    uri.remove_prefix(slash);
  }
  std::string out;
  for (size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size()) {
      int v = 0;
      auto [end, ec] = std::from_chars(uri.data() + i + 1, uri.data() + i + 3, v, 16);
      if (ec == std::errc() && end == uri.data() + i + 3) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(uri[i]);
  }
  return out;
}

std::string uri_of_path(std::string_view path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos)
      out.push_back(static_cast<char>(c));
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace keet::service
