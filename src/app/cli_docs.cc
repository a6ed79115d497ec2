#include "app/cli_docs.h"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace keet::app {
namespace {

// One flag or positional argument as the help text shows it.
struct Flag {
  std::vector<std::string> names;  // "-f", "--format"; empty for a positional
  std::string positional;          // "report" for a positional
  bool takes_value = false;
  bool repeats = false;
  bool required = false;
  std::vector<std::string> choices;  // from CLI::IsMember ("TEXT:{text,json}")
  std::string help, default_value;
};

// CLI11 writes a value set into the type name: "TEXT:{text,markdown,json}".
std::vector<std::string> choices_of(const std::string& type_name) {
  auto open = type_name.find(":{");
  auto close = type_name.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<std::string> out;
  std::string word;
  for (char c : type_name.substr(open + 2, close - open - 2)) {
    if (c == ',') {
      out.push_back(word);
      word.clear();
    } else if (c != ' ') {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

Flag flag_of(const CLI::Option& o) {
  Flag f;
  for (const auto& s : o.get_snames()) f.names.push_back("-" + s);
  for (const auto& l : o.get_lnames()) f.names.push_back("--" + l);
  if (f.names.empty()) f.positional = o.get_single_name();
  f.takes_value = o.get_items_expected_max() != 0;  // a flag expects no value
  f.repeats = o.get_expected_max() > 1;
  f.required = o.get_required();
  f.choices = choices_of(o.get_type_name());
  f.help = o.get_description();
  f.default_value = o.get_default_str();
  return f;
}

std::vector<Flag> flags_of(const CLI::App& app) {
  std::vector<Flag> out;
  for (const auto* o : app.get_options())
    if (!o->get_group().empty()) out.push_back(flag_of(*o));  // an empty group hides a flag from help
  return out;
}

// Subcommands in the order they were added (make_cli: the command table's, help order).
std::vector<const CLI::App*> subcommands_of(const CLI::App& cli) {
  return cli.get_subcommands(std::function<bool(const CLI::App*)>([](const CLI::App*) { return true; }));
}

std::vector<std::string> command_names(const CLI::App& cli) {
  std::vector<std::string> out;
  for (const auto* sub : subcommands_of(cli)) out.push_back(sub->get_name());
  return out;
}

// ------------------------------------------------------------------ man page

// Text in a roff line: backslashes and hyphens escaped, no line may start a request.
std::string roff(std::string_view s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string value_name(const Flag& f) {
  if (!f.choices.empty()) return fmt::format("{{{}}}", fmt::join(f.choices, "|"));
  std::string name = f.names.empty() ? "value" : f.names.back();
  while (!name.empty() && name.front() == '-') name.erase(0, 1);
  return name;
}

std::string man_flag(const Flag& f) {
  std::vector<std::string> names;
  for (const auto& n : f.names) names.push_back("\\fB" + roff(n) + "\\fR");
  std::string head = fmt::format("{}", fmt::join(names, ", "));
  if (f.takes_value) head += " \\fI" + roff(value_name(f)) + "\\fR";
  std::string body = roff(f.help);
  if (!f.default_value.empty()) body += " (default: " + roff(f.default_value) + ")";
  return ".TP\n" + head + "\n" + body + "\n";
}

std::string synopsis_of(const CLI::App& sub, const std::vector<Flag>& flags) {
  std::string out = "\\fBkeet " + roff(sub.get_name()) + "\\fR [\\fIoptions\\fR]";
  for (const auto& f : flags) {
    if (f.positional.empty()) continue;
    std::string arg = "\\fI" + roff(f.positional) + "\\fR" + (f.repeats ? "..." : "");
    out += f.required ? " " + arg : " [" + arg + "]";
  }
  return out;
}

std::string man_command(const CLI::App& sub) {
  auto flags = flags_of(sub);
  std::string out = fmt::format(".SS {}\n.PP\n{}\n.PP\n{}.\n", roff(sub.get_name()), synopsis_of(sub, flags),
                                roff(sub.get_description()));
  for (const auto& f : flags)
    if (f.positional.empty()) out += man_flag(f);
  return out;
}

constexpr std::string_view kExitStatus =
    ".SH EXIT STATUS\n"
    ".TP\n0\nsuccess\n"
    ".TP\n1\nthe command ran but found what it was asked to fail on (a regression gate)\n"
    ".TP\n2\nbad input: an unreadable, corrupt or unsupported report, or bad arguments\n"
    ".TP\n3\nan outside dependency failed (ncu missing for profile, an LLM unreachable when required)\n";

// A newcomer's first commands, kernel profile and timeline alike.
constexpr std::string_view kExamples =
    ".SH EXAMPLES\n"
    ".TP\n\\fBkeet analyze run.ncu-rep\\fR\n"
    "what limits each kernel, why, where in the source and what it can gain\n"
    ".TP\n\\fBkeet profile \\-k regex:^gemm \\-c 1 \\-\\- ./app\\fR\n"
    "profile one launch with ncu and analyse it\n"
    ".TP\n\\fBkeet diff before.ncu-rep after.ncu-rep\\fR\n"
    "what changed between two reports, and why the time moved\n"
    ".TP\n\\fBkeet gate new.ncu-rep \\-\\-baseline\\-report old.ncu-rep\\fR\n"
    "fail a CI job on a regression against last night's report\n"
    ".TP\n\\fBkeet timeline run.nsys-rep\\fR\n"
    "the whole run from Nsight Systems: where the GPU waits, the CUDA API's cost, the kernel to profile next\n"
    ".TP\n\\fBkeet analyze run.ncu-rep \\-\\-timeline run.nsys-rep\\fR\n"
    "each kernel's diagnosis weighed by its share of the whole run\n"
    ".TP\n\\fBkeet metrics run.ncu-rep \\-\\-grep dram | grep pct\\fR\n"
    "raw metrics, whole on every line when piped\n";

// ---------------------------------------------------------------- completion

// Words a completion script may hold unquoted.
bool plain_word(const std::string& w) {
  if (w.empty()) return false;
  for (char c : w)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("-_.:+,=/").find(c) == std::string_view::npos)
      return false;
  return true;
}

std::string words(const std::vector<std::string>& list) {
  std::vector<std::string> kept;
  for (const auto& w : list)
    if (plain_word(w)) kept.push_back(w);
  return fmt::format("{}", fmt::join(kept, " "));
}

std::vector<std::string> option_names(const std::vector<Flag>& flags) {
  std::vector<std::string> out;
  for (const auto& f : flags) out.insert(out.end(), f.names.begin(), f.names.end());
  return out;
}

// What a file argument holds, by the argument's name: completions offer
// those files (and folders to walk into) and zsh says what is asked for.
struct FileKind {
  std::string_view what;
  std::vector<std::string_view> extensions;  // empty: a folder
};

const FileKind* file_kind(const Flag& f) {
  static const FileKind ncu{"Nsight Compute report (.ncu-rep, .ncu-repz, ncu or nvprof CSV)",
                            {"ncu-rep", "ncu-repz", "nsight-cuprof-report", "csv"}};
  static const FileKind nsys{"Nsight Systems run (.nsys-rep, .qdrep or its SQLite export)",
                             {"nsys-rep", "qdrep", "sqlite"}};
  static const FileKind folder{"folder", {}};
  const std::string& name = f.names.empty() ? f.positional : f.names.back();
  if (name == "report" || name == "reports" || name == "before" || name == "after") return &ncu;
  if (name == "timeline" || name == "--timeline") return &nsys;
  if (name == "--export-dir" || name == "--data-dir" || name == "--source-root" || name == "--root") return &folder;
  return nullptr;
}

std::string bash_files(const FileKind* kind) {
  if (kind == nullptr) return "COMPREPLY=($(compgen -f -- \"$cur\"))";
  if (kind->extensions.empty()) return "COMPREPLY=($(compgen -d -- \"$cur\"))";
  // Folders, to walk into, and the files of the kind; -X drops what does not match.
  // (The pattern needs extglob: _keet turns it on for the call, then back.)
  return fmt::format("COMPREPLY=($(compgen -d -- \"$cur\") $(compgen -f -X '!*.@({})' -- \"$cur\"))",
                     fmt::join(kind->extensions, "|"));
}

std::string zsh_files(const FileKind* kind) {
  if (kind == nullptr) return "_files";
  if (kind->extensions.empty()) return "_files -/";
  return fmt::format("_files -g \"*.({})(-.)\"", fmt::join(kind->extensions, "|"));
}

// The positional argument's file kind, when the command takes one.
const FileKind* positional_kind(const std::vector<Flag>& flags) {
  for (const auto& f : flags)
    if (!f.positional.empty())
      if (const FileKind* k = file_kind(f)) return k;
  return nullptr;
}

// The case arms completing the value after a flag: its choices, else files.
std::string bash_value_arms(const std::vector<Flag>& flags) {
  std::string out;
  for (const auto& f : flags) {
    if (!f.takes_value || f.names.empty()) continue;
    std::string action = f.choices.empty()
                             ? bash_files(file_kind(f))
                             : fmt::format("COMPREPLY=($(compgen -W '{}' -- \"$cur\"))", words(f.choices));
    out += fmt::format("        {}) {}; return ;;\n", fmt::join(f.names, "|"), action);
  }
  return out;
}

std::string bash_command_arm(const CLI::App& sub) {
  auto flags = flags_of(sub);
  return fmt::format(
      "    {})\n"
      "      opts='{}'\n"
      "      case \"$prev\" in\n{}      esac\n"
      "      _keet_files() {{ {}; }}\n"
      "      ;;\n",
      sub.get_name(), words(option_names(flags)), bash_value_arms(flags), bash_files(positional_kind(flags)));
}

// zsh _arguments spec text: [ ] : \ and ' would end the construct they sit in.
std::string zsh_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else if (c == '[' || c == ']' || c == ':' || c == '\\')
      out += std::string("\\") + c;
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string zsh_flag(const Flag& f) {
  std::string value;
  if (f.takes_value) {
    const FileKind* kind = file_kind(f);
    value = !f.choices.empty() ? fmt::format(":value:({})", words(f.choices))
            : kind             ? fmt::format(":{}:{}", zsh_text(kind->what), zsh_files(kind))
                               : ":value:_files";
  }
  std::string out;
  for (const auto& n : f.names)
    if (plain_word(n)) out += fmt::format("        '{}[{}]{}' \\\n", n, zsh_text(f.help), value);
  return out;
}

std::string zsh_command_arm(const CLI::App& sub) {
  std::string out = fmt::format("    {})\n      _arguments \\\n", sub.get_name());
  auto flags = flags_of(sub);
  for (const auto& f : flags)
    if (f.positional.empty()) out += zsh_flag(f);
  const FileKind* kind = positional_kind(flags);
  return out + fmt::format("        '*:{}:{}'\n      ;;\n", kind ? zsh_text(kind->what) : "file", zsh_files(kind));
}

}  // namespace

std::string man_page(const CLI::App& cli, std::string_view version) {
  std::string out = fmt::format(".TH KEET 1 \"\" \"keet {}\" \"User Commands\"\n", roff(version));
  // "keet: explains ..." -> "explains ...".
  std::string summary = cli.get_description().substr(cli.get_description().find(':') + 1);
  summary.erase(0, summary.find_first_not_of(' '));
  out += ".SH NAME\nkeet \\- " + roff(summary) + "\n";
  out +=
      ".SH SYNOPSIS\n\\fBkeet\\fR \\fIcommand\\fR [\\fIoptions\\fR] [\\fIreport\\fR]\n.br\n"
      "\\fBkeet help\\fR [\\fIcommand\\fR]\n.br\n\\fBkeet \\-V\\fR\n";
  out += ".SH DESCRIPTION\n\\fBkeet\\fR " + roff(summary) +
         ". Most commands read kernel profiles (an Nsight Compute .ncu-rep or .ncu-repz report, its CSV export, or an "
         "nvprof CSV); \\fBkeet timeline\\fR, and \\fBkeet analyze\\fR with \\fB\\-\\-timeline\\fR, read a whole run "
         "from Nsight Systems (an .nsys-rep or .qdrep report, or its SQLite export). Every command writes to standard "
         "output; \\fBkeet help\\fR \\fIcommand\\fR prints a command's options as below.\n";
  out += ".SH COMMANDS\n";
  for (const auto* sub : subcommands_of(cli)) out += man_command(*sub);
  out += ".SH OPTIONS\n";
  for (const auto& f : flags_of(cli)) out += man_flag(f);
  out += kExitStatus;
  out += kExamples;
  out +=
      ".SH SEE ALSO\n\\fBncu\\fR(1), \\fBnsys\\fR(1); the JSON contracts in docs/contracts.md of the KEET "
      "sources.\n";
  return out;
}

std::string bash_completion(const CLI::App& cli) {
  std::string arms;
  for (const auto* sub : subcommands_of(cli)) arms += bash_command_arm(*sub);
  return fmt::format(
      "# bash completion for keet, generated from its command table (tools/docgen). Do not edit.\n"
      "# The file patterns use @(...), so extglob is on while keet completes and\n"
      "# is put back as the user had it.\n"
      "_keet() {{\n"
      "  local extglob\n"
      "  extglob=$(shopt -p extglob)\n"
      "  shopt -s extglob\n"
      "  _keet_complete\n"
      "  eval \"$extglob\"\n"
      "}}\n"
      "_keet_complete() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"\" opts=\"\"\n"
      "  (( COMP_CWORD > 0 )) && prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
      "  local commands='{0}'\n"
      "  if (( COMP_CWORD == 1 )); then\n"
      "    COMPREPLY=($(compgen -W \"$commands help {1}\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  _keet_files() {{ COMPREPLY=($(compgen -f -- \"$cur\")); }}\n"
      "  case \"${{COMP_WORDS[1]}}\" in\n"
      "    help) COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\")); return ;;\n"
      "{2}"
      "  esac\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
      "  else\n"
      "    _keet_files\n"
      "  fi\n"
      "}}\n"
      "complete -o filenames -F _keet keet\n",
      words(command_names(cli)), words(option_names(flags_of(cli))), arms);
}

std::string zsh_completion(const CLI::App& cli) {
  std::string described, arms;
  for (const auto* sub : subcommands_of(cli)) {
    described += fmt::format("    '{}:{}'\n", sub->get_name(), zsh_text(sub->get_description()));
    arms += zsh_command_arm(*sub);
  }
  return fmt::format(
      "#compdef keet\n"
      "# zsh completion for keet, generated from its command table (tools/docgen). Do not edit.\n"
      "_keet() {{\n"
      "  local -a commands\n"
      "  commands=(\n{0}  )\n"
      "  if (( CURRENT == 2 )); then\n"
      "    _describe -t commands 'keet command' commands\n"
      "    return\n"
      "  fi\n"
      "  words=(\"${{(@)words[2,-1]}}\")\n"
      "  (( CURRENT-- ))\n"
      "  case $words[1] in\n"
      "    help) _describe -t commands 'keet command' commands ;;\n"
      "{1}"
      "  esac\n"
      "}}\n"
      "_keet \"$@\"\n",
      described, arms);
}

}  // namespace keet::app
