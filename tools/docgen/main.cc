// keet_docgen man|bash|zsh OUT: writes keet(1) or a shell completion script
// from the command table (app::make_cli), at build time (CMakeLists.txt).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/app.h"
#include "app/cli_docs.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: keet_docgen man|bash|zsh OUT\n";
    return 2;
  }
  keet::app::Action action;
  auto cli = keet::app::make_cli(action);
  std::string kind = argv[1], text;
  if (kind == "man")
    text = keet::app::man_page(*cli, KEET_VERSION);
  else if (kind == "bash")
    text = keet::app::bash_completion(*cli);
  else if (kind == "zsh")
    text = keet::app::zsh_completion(*cli);
  else {
    std::cerr << "keet_docgen: unknown kind '" << kind << "'\n";
    return 2;
  }
  std::filesystem::path out(argv[2]);
  std::filesystem::create_directories(out.parent_path());
  std::ofstream f(out);
  if (!(f << text)) {
    std::cerr << "keet_docgen: cannot write " << out << "\n";
    return 3;
  }
  return 0;
}
