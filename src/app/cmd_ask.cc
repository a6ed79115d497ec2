// keet ask R "question": one verified answer, the model using tools as needed.
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/llm_flags.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct AskArgs : ChatArgs {
  std::string question;
};

std::string ask_json(const ChatSetup& s, const AskArgs& a, const llm::LlmResult& r) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : s.diagnosis.kernels) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& f : k.findings) ids.push_back(f.id);
    kernels.push_back({{"index", k.index}, {"bottleneck", analysis::class_name(k.bottleneck.cls)}, {"findings", ids}});
  }
  nlohmann::json doc{
      {"schema", "keet.ask/1"}, {"question", a.question}, {"kernels", kernels}, {"llm", llm::to_json(r)}};
  return json_text(doc, 2) + "\n";
}

std::string ask_text(const ChatSetup& s, const AskArgs& a, const llm::LlmResult& r) {
  return deterministic_summary(s.diagnosis, a.llm.redact_names) + "\n" + llm::render_text(r);
}

constexpr FormatWriter<ChatSetup, AskArgs, llm::LlmResult> kAskFormats[] = {{"text", ask_text}, {"json", ask_json}};

ExitCode run_ask(Context& ctx, const AskArgs& a) {
  auto setup = prepare_chat(ctx, a);
  if (!setup) return report_error(ctx, setup.error());
  auto& s = **setup;
  llm::LlmResult r = s.session->turn(a.question);
  if (a.llm.dry_run) return ExitCode::Ok;  // the requests were printed; nothing was sent
  ctx.out << write_format(kAskFormats, a.format, s, a, r);
  if (!a.save.empty())
    if (auto saved = save_transcript(s, a.save); !saved) return report_error(ctx, saved.error());
  ExitCode code = llm_exit(a.llm, {r});
  if (code == ExitCode::Ok) code = s.loaded.partial_exit;
  return code;
}

}  // namespace

Command ask_command() {
  return {"ask", "ask an LLM one question about a report; every number in the answer is checked",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<AskArgs>();
            add_chat_args(sub, *a);
            sub.add_option("question", a->question, "the question")->required();
            add_format(sub, a->format, format_names(kAskFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_ask(ctx, *a); }; });
          }};
}

}  // namespace keet::app
