#include "app/llm_flags.h"
#include "app/in_process.h"
#include "app/pipeline.h"
#include "util/error.h"

#include <fmt/format.h>

#include <fstream>

#include <CLI/CLI.hpp>

#include "analysis/engine.h"
#include "util/json.h"

namespace keet::app {

void add_llm_args(CLI::App& sub, LlmArgs& a) {
  sub.add_option("--llm", a.spec,
                 "LLM as PROVIDER:MODEL (openai, anthropic, ollama); else $KEET_LLM or the config file");
  sub.add_flag("--share-source", a.share_source, "allow source lines and file paths in LLM requests");
  sub.add_flag("--redact-names", a.redact_names, "send hashed kernel names instead of the real ones");
  sub.add_flag("--dry-run", a.dry_run, "print the exact LLM requests (keys redacted) without sending them");
  sub.add_flag("--no-cache", a.no_cache, "do not read or write the LLM response cache");
  sub.add_flag("--llm-required", a.required, "exit 3 when the LLM is unreachable or answers unusably");
  sub.add_option("--llm-timeout", a.timeout_s, "LLM read timeout in seconds")->check(CLI::Range(1, 3600));
  // CI jobs and agents that would rather fail fast than wait out a backoff.
  sub.add_option("--llm-retries", a.retries, "retries of a request that failed to connect or got 429/5xx")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  sub.add_option("--llm-param", a.params,
                 "set a field of every LLM request body, KEY=VALUE (JSON or text; dotted KEY nests; KEY= removes it), "
                 "e.g. max_completion_tokens=4000")
      ->allow_extra_args(false);  // one KEY=VALUE per --llm-param: the report path stays positional
}

Result<std::unique_ptr<LlmRuntime>> LlmRuntime::create(Context& ctx, const LlmArgs& a) {
  KEET_TRY(settings, llm::resolve_settings(a.spec, ctx.getenv));
  for (const auto& w : settings->warnings) ctx.err << "keet: warning: " << w << "\n";
  const auto* provider = llm::find_provider(settings->provider.provider);
  if (!provider->key_env.empty() && settings->provider.api_key.empty())
    ctx.err << "keet: warning: " << provider->key_env << " is not set; sending without a key\n";
  for (const auto& spec : a.params) {
    KEET_TRY(p, llm::parse_param(spec));
    settings->provider.params.push_back(std::move(*p));
  }
  if (a.timeout_s > 0) settings->timeouts.read = std::chrono::seconds(a.timeout_s);
  settings->timeouts.total = std::max(settings->timeouts.total, settings->timeouts.read);
  auto rt = std::unique_ptr<LlmRuntime>(new LlmRuntime());
  rt->args_ = a;
  rt->http_ = llm::make_http_client(settings->timeouts, llm::ProxyEnv::from(ctx.getenv));
  if (!a.no_cache && !a.dry_run) rt->cache_ = std::make_unique<llm::ResponseCache>(llm::cache_file(ctx.getenv));
  llm::RetryPolicy retry;
  retry.max_attempts = 1 + a.retries;
  rt->client_ =
      std::make_unique<llm::LlmClient>(settings->provider, *rt->http_, llm::real_sleeper(), rt->cache_.get(), retry,
                                       a.dry_run ? &ctx.err : nullptr);  // stdout stays machine-readable
  // A person waiting at a terminal sees why nothing happens for seconds;
  // logs and CI (stderr not a terminal) get only the final error.
  if (ctx.err_is_tty)
    rt->client_->set_retry_notice([&err = ctx.err](const std::string& line) {
      err << "keet: " << line << "\n" << std::flush;
    });
  return rt;
}

llm::PromptOptions LlmRuntime::prompt_options() const {
  llm::PromptOptions o;
  o.share_source = args_.share_source;
  o.redact_names = args_.redact_names;
  return o;
}

ExitCode llm_exit(const LlmArgs& a, const std::vector<llm::LlmResult>& results) {
  if (!a.required || a.dry_run) return ExitCode::Ok;
  for (const auto& r : results)
    if (r.status == llm::Status::Unavailable) return ExitCode::Dependency;
  return ExitCode::Ok;
}

}  // namespace keet::app

namespace keet::app {

void add_chat_args(CLI::App& sub, ChatArgs& a) {
  add_report_args(sub, a.report);
  add_llm_args(sub, a.llm);
  sub.add_option("--save", a.save, "write the transcript (JSON) to this file");
  sub.add_option("--max-tool-rounds", a.max_tool_rounds, "tool-calling rounds per answer")->check(CLI::Range(1, 50));
}

Result<std::unique_ptr<ChatSetup>> prepare_chat(Context& ctx, const ChatArgs& a) {
  KEET_TRY(analysed, analyse_report(ctx, a.report));
  auto s = std::make_unique<ChatSetup>();
  s->loaded = std::move(analysed->loaded);
  s->diagnosis = std::move(analysed->diagnosis);
  KEET_TRY(rt, LlmRuntime::create(ctx, a.llm));
  s->runtime = std::move(*rt);
  llm::ChatOptions opt;
  opt.max_tool_rounds = a.max_tool_rounds;
  opt.prompt = s->runtime->prompt_options();
  if (!a.report.kernel.empty() && s->loaded.selected.size() == 1) opt.focus_kernel = s->loaded.selected[0]->index;
  s->tools = std::make_unique<service::ChatTools>(service::ChatToolOptions{in_process_runner(ctx.getenv), a.report.path,
                                                                           &s->loaded.report, a.llm.share_source,
                                                                           a.llm.redact_names, a.report.allow_partial});
  llm::ToolContext tools{&s->loaded.report, &s->diagnosis, a.llm.redact_names, s->tools.get()};
  s->session = std::make_unique<llm::ChatSession>(s->runtime->client(), tools, opt);
  return s;
}

Result<void> save_transcript(const ChatSetup& s, const std::string& path) {
  std::ofstream out(path);
  if (out << json_text(s.session->transcript(), 2) << "\n") return {};
  return fail(ExitCode::BadInput, path + ": cannot write the transcript");
}

std::string deterministic_summary(const analysis::Diagnosis& d, bool redact) {
  std::string out;
  for (const auto& k : d.kernels) {
    out += fmt::format("#{} {}: {}-bound (confidence {:.2f})", k.index, llm::kernel_label(k.display_name(), redact),
                       analysis::class_name(k.bottleneck.cls), k.bottleneck.confidence);
    for (size_t i = 0; i < k.findings.size() && i < 3; ++i) out += (i == 0 ? "; " : ", ") + k.findings[i].id;
    out += "\n";
  }
  return out;
}

}  // namespace keet::app
