// keet chat R: a multi-turn session with line editing and history (libedit);
// the model uses tools, and every reply is verified before it is shown.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "app/commands.h"
#include "app/llm_flags.h"
#include "io/dynlib.h"

namespace keet::app {
namespace {

// libedit's readline interface, opened only by an interactive chat (see
// io/dynlib.h); without it the session still works, without line editing.
struct LineEditor {
  char* (*readline)(const char*) = nullptr;
  int (*add_history)(const char*) = nullptr;
};

const LineEditor& line_editor() {
  static const LineEditor ed = [] {
    LineEditor e;
    auto lib = io::open_library("libedit.so.2");
    if (!lib || !io::bind_symbol(*lib, "readline", e.readline) || !io::bind_symbol(*lib, "add_history", e.add_history))
      e = LineEditor{};
    return e;
  }();
  return ed;
}

std::optional<std::string> edited_line(const LineEditor& ed) {
  char* raw = ed.readline("keet> ");
  if (!raw) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  if (!line.empty()) ed.add_history(line.c_str());
  return line;
}

// Interactive terminals get libedit; pipes (scripts, tests) are read plainly.
std::optional<std::string> next_line(bool interactive) {
  if (interactive && line_editor().readline) return edited_line(line_editor());
  if (interactive) std::cout << "keet> " << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  return line;
}

ExitCode run_chat(Context& ctx, const ChatArgs& a) {
  auto setup = prepare_chat(ctx, a);
  if (!setup) return report_error(ctx, setup.error());
  auto& s = **setup;
  bool interactive = isatty(0) == 1;
  ctx.out << deterministic_summary(s.diagnosis, a.llm.redact_names)
          << "Ask about the report; /quit ends the session.\n";
  ctx.out.flush();  // ctx.out is keet's filtered stdout: out before the first prompt
  std::vector<llm::LlmResult> results;
  while (auto line = next_line(interactive)) {
    if (*line == "/quit" || *line == "/exit") break;
    if (line->find_first_not_of(" \t") == std::string::npos) continue;
    results.push_back(s.session->turn(*line));
    if (!a.llm.dry_run) ctx.out << llm::render_text(results.back()) << "\n";
    ctx.out.flush();
  }
  if (!a.save.empty())
    if (auto saved = save_transcript(s, a.save); !saved) return report_error(ctx, saved.error());
  return llm_exit(a.llm, results);
}

}  // namespace

Command chat_command() {
  return {"chat", "talk with an LLM about a report (tool calling, verified replies)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ChatArgs>();
            add_chat_args(sub, *a);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_chat(ctx, *a); }; });
          }};
}

}  // namespace keet::app
