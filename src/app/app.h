// The command-line application: flag tables, command dispatch and output.
// tools/keet/main.cc only forwards argv here; tests call run() in-process too.
#pragma once
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/clock.h"
#include "util/error.h"

// CLI11 is included only where flags are defined: its header constructs
// eight validators in every file that includes it, at every start-up.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace keet::app {

// Where a command writes and what it may know about its environment. Tests
// pass string streams and a fixed environment.
struct Context {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;
  std::function<std::string(const std::string&)> getenv;  // "" when unset
  std::istream* in = nullptr;                             // standard input of keet mcp; null: std::cin
  // Standard output without the terminal sanitiser, for a protocol whose
  // framing needs CR LF (keet lsp) and whose messages are ASCII JSON, which
  // holds no control character. Null: `out`.
  std::ostream* raw_out = nullptr;
  io::WallClock clock = io::system_unix_ms;  // what record, diff, tune and gate stamp
  bool color() const;                        // tty and NO_COLOR unset
};

// A command adds its subcommand and flags, and returns the action to run after
// a successful parse.
using Action = std::function<ExitCode(Context&)>;
struct Command {
  std::string_view name;
  std::string_view help;
  std::function<void(CLI::App& sub, Action& action)> define;
};

const std::vector<Command>& commands();
// The whole command line: every command of commands() with its flags, -V.
// run() parses with it; the man page and shell completions are written from it
// (app/cli_docs.h), so they cannot drift from the help text.
// With `only` (the command being run), only that command is built (start-up
// cost: each command's CLI11 app costs about 15,000 instructions).
std::unique_ptr<CLI::App> make_cli(Action& action, std::string_view only = {});
int run(int argc, const char* const* argv, Context& ctx);
int main(int argc, char** argv);  // real process: stdout/stderr, isatty, getenv

// Prints "keet: <message>" on err and returns the error's exit code.
ExitCode report_error(Context& ctx, const Error& e);

}  // namespace keet::app
