// keet chat R: a multi-turn session with line editing and history (libedit);
// the model uses tools, and every reply is verified before it is shown.
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/llm_flags.h"
#include "io/dynlib.h"
#include "util/strings.h"

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

// Commands the session answers itself: they never reach the model.
struct LocalCommand {
  std::string_view name, args, help;
};
constexpr LocalCommand kLocalCommands[] = {
    {"/help", "", "list these commands"},
    {"/kernel", "[N]", "discuss kernel #N of the list above (without N: which one is in focus)"},
    {"/save", "FILE", "write the conversation so far to FILE as Markdown"},
    {"/quit", "", "end the session (also /exit or Ctrl-D)"},
};

std::string local_help() {
  std::string out = "Commands (a line starting with // is sent as a question beginning with /):\n";
  for (const auto& c : kLocalCommands)
    out += fmt::format("  {:<14} {}\n", fmt::format("{} {}", c.name, c.args), c.help);
  return out;
}

std::string kernel_list(const ChatSetup& s, bool redact) {
  std::string out;
  for (const auto& d : s.diagnosis.kernels)
    out += fmt::format("{}#{} {}", out.empty() ? "" : ", ", d.index, llm::kernel_label(d.display_name(), redact));
  return out;
}

std::string switch_kernel(ChatSetup& s, std::string_view arg, bool redact) {
  if (arg.empty()) {
    int f = s.session->focus_kernel();
    return (f < 0 ? std::string("No kernel in focus") : fmt::format("Kernel #{} is in focus", f)) +
           "; kernels: " + kernel_list(s, redact) + "\n";
  }
  int index = -1;
  auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), index);
  if (ec != std::errc() || end != arg.data() + arg.size() || !s.session->focus(index))
    return fmt::format("No kernel #{} in this session; kernels: {}\n", arg, kernel_list(s, redact));
  return fmt::format("Now discussing kernel #{}.\n", index);
}

std::string save_markdown(const ChatSetup& s, std::string_view path) {
  if (path.empty()) return "Usage: /save FILE\n";
  std::ofstream out{std::string(path)};
  if (!(out << s.session->transcript_markdown()) || !out.flush())
    return fmt::format("Cannot write {}: {}\n", path, std::strerror(errno));
  return fmt::format("Saved the conversation to {}.\n", path);
}

enum class Local { NotACommand, Handled, Quit };

// Answers a /command locally; a question goes on to the model.
Local run_local(Context& ctx, ChatSetup& s, const std::string& line, bool redact) {
  if (!line.starts_with('/') || line.starts_with("//")) return Local::NotACommand;
  auto space = line.find_first_of(" \t");
  std::string name = line.substr(0, space);
  std::string_view arg = space == std::string::npos ? "" : trim(std::string_view(line).substr(space));
  if (name == "/quit" || name == "/exit") return Local::Quit;
  if (name == "/help")
    ctx.out << local_help();
  else if (name == "/kernel")
    ctx.out << switch_kernel(s, arg, redact);
  else if (name == "/save")
    ctx.out << save_markdown(s, arg);
  else
    ctx.out << "Unknown command " << name << ". " << local_help();
  ctx.out.flush();
  return Local::Handled;
}

ExitCode run_chat(Context& ctx, const ChatArgs& a) {
  auto setup = prepare_chat(ctx, a);
  if (!setup) return report_error(ctx, setup.error());
  auto& s = **setup;
  bool interactive = isatty(0) == 1;
  ctx.out << deterministic_summary(s.diagnosis, a.llm.redact_names)
          << "Ask about the report; /help lists the commands, /quit ends the session.\n";
  ctx.out.flush();  // ctx.out is keet's filtered stdout: out before the first prompt
  std::vector<llm::LlmResult> results;
  while (auto line = next_line(interactive)) {
    if (line->find_first_not_of(" \t") == std::string::npos) continue;
    auto local = run_local(ctx, s, std::string(trim(*line)), a.llm.redact_names);
    if (local == Local::Quit) break;
    if (local == Local::Handled) continue;
    results.push_back(s.session->turn(line->starts_with("//") ? line->substr(1) : *line));
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
