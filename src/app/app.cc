#include "app/app.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/safe_output.h"
#include "util/suggest.h"

namespace keet::app {

bool Context::color() const { return out_is_tty && getenv("NO_COLOR").empty(); }

ExitCode report_error(Context& ctx, const Error& e) {
  ctx.err << "keet: " << e.message << "\n";
  return e.code;
}

namespace {

constexpr std::string_view kUsage =
    "usage: keet <command> [options] <report>  ('keet help' lists the commands, 'keet help <command>' explains one)";

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& c : commands()) names.emplace_back(c.name);
  return names;
}

bool is_command(std::string_view name) {
  for (const auto& c : commands())
    if (c.name == name) return true;
  return false;
}

// Like git and cargo: the mistake, a likely intended command, and the usage.
int unknown_command(Context& ctx, std::string_view typed) {
  auto guess = closest_name(typed, command_names());
  ctx.err << fmt::format("keet: unknown command '{}'{}\n", typed,
                         guess ? fmt::format("; did you mean '{}'?", *guess) : std::string());
  ctx.err << kUsage << "\n";
  return static_cast<int>(ExitCode::BadInput);
}

// `keet help` and `keet help CMD` answer like `--help` on the same command.
int help_command(Context& ctx, CLI::App& cli, const std::vector<std::string>& args) {
  if (args.size() > 2) {
    ctx.err << "keet: help takes at most one command name\n" << kUsage << "\n";
    return static_cast<int>(ExitCode::BadInput);
  }
  if (args.size() == 1) {
    ctx.out << cli.help();
    return 0;
  }
  if (!is_command(args[1])) return unknown_command(ctx, args[1]);
  ctx.out << cli.get_subcommand(args[1])->help("keet");
  return 0;
}

}  // namespace

std::unique_ptr<CLI::App> make_cli(Action& action, std::string_view only) {
  auto cli =
      std::make_unique<CLI::App>("keet: explains Nsight Compute kernel profiles and Nsight Systems timelines", "keet");
  cli->set_version_flag("-V,--version", std::string("keet ") + KEET_VERSION);
  cli->require_subcommand(1);
  for (const auto& c : commands()) {
    if (!only.empty() && c.name != only) continue;  // a run of one command needs no other
    CLI::App* sub = cli->add_subcommand(std::string(c.name), std::string(c.help));
    c.define(*sub, action);
  }
  return cli;
}

int run(int argc, const char* const* argv, Context& ctx) {
  Action action;
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  // `keet -V` alone needs no command line built (every command's flags would be).
  if (args.size() == 1 && (args[0] == "-V" || args[0] == "--version")) {
    ctx.out << "keet " << KEET_VERSION << "\n";
    return 0;
  }
  // A run of one command builds only that command's options.
  bool one = !args.empty() && args[0] != "help" && is_command(args[0]);
  auto owned = make_cli(action, one ? std::string_view(args[0]) : std::string_view());
  CLI::App& cli = *owned;
  if (args.empty()) {
    ctx.err << "keet: a command is required\n" << kUsage << "\n";
    return static_cast<int>(ExitCode::BadInput);
  }
  if (args[0] == "help") return help_command(ctx, cli, args);
  if (!args[0].starts_with('-') && !is_command(args[0])) return unknown_command(ctx, args[0]);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    ctx.out << cli.help();
    return 0;
  } catch (const CLI::CallForAllHelp& e) {
    ctx.out << cli.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    ctx.out << "keet " << KEET_VERSION << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // Help of a subcommand comes here too (CLI11 reports it as a "success" error).
    if (e.get_exit_code() == 0) {
      std::ostringstream o, er;
      cli.exit(e, o, er);
      ctx.out << o.str() << er.str();
      return 0;
    }
    ctx.err << "keet: " << e.what() << "\n";
    return static_cast<int>(ExitCode::BadInput);
  }
  if (!action) return static_cast<int>(ExitCode::BadInput);
  return static_cast<int>(action(ctx));
}

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  auto env = [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v ? v : "");
  };
  bool out_tty = isatty(1) == 1;
  // Both streams pass the terminal sanitiser; only stdout is ever painted.
  SafeOutput out_buf(std::cout.rdbuf(), out_tty && env("NO_COLOR").empty());
  SafeOutput err_buf(std::cerr.rdbuf(), false);
  std::ostream out(&out_buf), err(&err_buf);
  err.setf(std::ios::unitbuf);
  Context ctx{out, err, out_tty, isatty(2) == 1, env};
  ctx.raw_out = &std::cout;
  int rc = run(argc, argv, ctx);
  // A write that failed (full disk, closed pipe) makes the answer incomplete:
  // say so and fail, even when the command itself succeeded.
  if (!out.flush() || !out_buf.ok()) {
    int e = out_buf.error();
    err << "keet: cannot write to standard output" << (e ? std::string(": ") + std::strerror(e) : "") << "\n";
    return static_cast<int>(ExitCode::Dependency);
  }
  return rc;
}

}  // namespace keet::app
