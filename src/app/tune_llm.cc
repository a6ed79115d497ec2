#include "app/tune_llm.h"
#include "app/pipeline.h"
#include "util/error.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/engine.h"
#include "llm/prompt.h"
#include "util/unified_diff.h"

namespace keet::app {
namespace {

constexpr std::string_view kSystem =
    "You are a CUDA performance engineer. A profiler-based engine has diagnosed a kernel. Propose independent source "
    "changes that fix its top findings without changing the program's results. For each change write one line "
    "'Finding: <finding id>' naming the finding it addresses, then the change as a unified diff in a ```diff fence, "
    "with paths relative to the project root ('--- a/PATH', '+++ b/PATH') and exact context lines. Change only the "
    "files you are given; do not create or delete files.";

// The kernel with the largest duration: where a change pays most.
const model::Kernel* slowest(const std::vector<const model::Kernel*>& ks) {
  const model::Kernel* best = nullptr;
  double best_ns = -1;
  for (const auto* k : ks) {
    double ns = analysis::kernel_duration_ns(*k).value_or(0);
    if (!best || ns > best_ns) best = k, best_ns = ns;
  }
  return best;
}

std::string user_prompt(const analysis::KernelDiagnosis& d, const model::Kernel* k, const llm::PromptOptions& opt,
                        const std::map<std::string, std::string>& files, int n) {
  std::string out =
      fmt::format("Propose {} candidate change(s).\n\nDiagnosis:\n{}\n", n, llm::kernel_context(d, k, opt, 40));
  out += "Files you may change:\n";
  for (const auto& [path, text] : files) out += fmt::format("\n=== {} ===\n{}", path, text);
  return out;
}

}  // namespace

bool local_model(const llm::ProviderConfig& cfg) {
  if (cfg.provider == "ollama") return true;
  std::string_view url = cfg.base_url;
  if (auto scheme = url.find("://"); scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"})
    if (url.starts_with(host) && (url.size() == host.size() || url[host.size()] == ':' || url[host.size()] == '/'))
      return true;
  return false;
}

std::vector<Proposal> proposals_in(const std::string& answer, const std::vector<std::string>& finding_ids, int n) {
  std::vector<Proposal> out;
  for (auto& block : extract_diff_blocks(answer)) {
    if (static_cast<int>(out.size()) == n) break;
    Proposal p{std::move(block.diff), ""};
    size_t best_at = 0;  // the id named last before the diff wins
    for (const auto& id : finding_ids)
      if (auto at = block.preface.rfind(id); at != std::string::npos && (p.target.empty() || at > best_at))
        p.target = id, best_at = at;
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<Proposal>> ask_for_changes(Context& ctx, LlmRuntime& rt, const TuneRequest& req,
                                              const std::string& report,
                                              const std::map<std::string, std::string>& files, int n) {
  const auto& cfg = rt.client().config();
  if (!req.llm.share_source && !local_model(cfg))
    return fail(ExitCode::BadInput,
                fmt::format("keet tune sends the files it may change to the LLM: pass --share-source to allow it for "
                            "{} (or use a local model)",
                            cfg.provider));
  KEET_TRY(analysed,
           analyse_report(ctx, ReportArgs{.path = report, .allow_partial = true}, analysis::AnalyzeOptions{0}));
  const auto& selected = analysed->loaded.selected;
  const auto* k = slowest(selected);
  if (!k) return fail(ExitCode::BadInput, report + ": no kernel to tune");
  const auto& d = analysed->diagnosis.kernels[std::ranges::find(selected, k) - selected.begin()];
  auto opt = rt.prompt_options();
  opt.share_source = true;  // checked above
  llm::ChatRequest request{
      cfg.model, {{llm::Role::System, std::string(kSystem)}, {llm::Role::User, user_prompt(d, k, opt, files, n)}}};
  request.max_tokens = 4000;
  auto answer = rt.client().send(request);
  if (!answer) {
    if (answer.error().kind == llm::LlmError::Kind::DryRun) return std::vector<Proposal>{};
    return fail(ExitCode::Dependency, "the LLM gave no answer: " + answer.error().message);
  }
  std::vector<std::string> ids;
  for (const auto& f : d.findings) ids.push_back(f.id);
  auto proposals = proposals_in(answer->text, ids, n);
  if (proposals.empty())
    return fail(ExitCode::Dependency, "the LLM's answer held no unified diff (nothing to try); it is not shown here");
  return proposals;
}

}  // namespace keet::app
