#include "app/app.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "app/safe_output.h"

namespace keet::app {

bool Context::color() const { return out_is_tty && getenv("NO_COLOR").empty(); }

ExitCode report_error(Context& ctx, const Error& e) {
  ctx.err << "keet: " << e.message << "\n";
  return e.code;
}

int run(int argc, const char* const* argv, Context& ctx) {
  CLI::App cli{"keet: explains Nsight Compute kernel profiles", "keet"};
  cli.set_version_flag("--version", std::string("keet ") + KEET_VERSION);
  cli.require_subcommand(1);
  Action action;
  for (const auto& c : commands()) {
    CLI::App* sub = cli.add_subcommand(std::string(c.name), std::string(c.help));
    c.define(*sub, action);
  }
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
