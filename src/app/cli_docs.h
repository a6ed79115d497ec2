// The man page and the bash and zsh completion scripts, written from the same
// CLI11 definition that parses the command line and prints the help text
// (app::make_cli), so a new command or flag reaches them with no edit here.
// tools/docgen runs these at build time; `cmake --install` installs the files.
#pragma once
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace keet::app {

// keet(1) in man(7) roff.
std::string man_page(const CLI::App& cli, std::string_view version);
// A bash completion script defining _keet (sourced by bash-completion, or by hand).
std::string bash_completion(const CLI::App& cli);
// A zsh completion function (#compdef keet) for a folder on $fpath.
std::string zsh_completion(const CLI::App& cli);

}  // namespace keet::app
