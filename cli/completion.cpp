// c960 completion bash|zsh, and the scripts it prints (cli/completion.h).
#include "cli/completion.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "completion";

const CommandSpec kSpec = {
    kName,
    "c960 completion bash|zsh",
    "Prints a completion script for bash or zsh, made from the same command and option tables the parser uses, "
    "so it completes every command, option and fixed option value of this c960. bash: source <(c960 completion "
    "bash), or save it as /usr/share/bash-completion/completions/c960 (the Debian package and cmake --install "
    "put it there). zsh: save it as _c960 in a directory of $fpath (the package uses "
    "/usr/share/zsh/vendor-completions), or source <(c960 completion zsh) after compinit.",
    {},
    1,
    {"bash", "zsh"}};

// Words of the tool itself besides the commands.
const std::vector<std::string> kTopLevelWords = {"help", "version"};

bool is_literal(absl::string_view alt) {
  if (alt.empty()) return false;
  for (char c : alt)
    if (!(absl::ascii_islower(uint8_t(c)) || absl::ascii_isdigit(uint8_t(c)) || c == '-')) return false;
  return true;
}

std::vector<std::string> option_words(const CommandSpec& spec) {
  std::vector<std::string> out;
  for (const OptionSpec& o : spec.options) out.push_back("--" + o.name);
  out.push_back("--help");
  return out;
}

// For zsh's single-quoted specs: the quote closed and reopened, and the characters the
// completion functions read escaped: ':' and backslashes, and for an _arguments description
// (`brackets`) '[' and ']' too.
std::string zsh_quoted(absl::string_view text, bool brackets = true) {
  std::string out;
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else if (c == ':' || c == '\\' || (brackets && (c == '[' || c == ']')))
      out += std::string("\\") + c;
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

ValueCompletion value_completion(const OptionSpec& option) {
  ValueCompletion v;
  if (option.arity == Arity::kFlag) return v;
  for (absl::string_view alt : absl::StrSplit(option.metavar, '|')) {
    if (alt == "FILE" || alt == "PATH" || alt == "DIR" || absl::EndsWith(alt, "FILE"))
      v.files = true;
    else if (is_literal(alt))
      v.words.emplace_back(alt);
  }
  return v;
}

std::string bash_completion(const std::vector<CommandInfo>& commands) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const CommandInfo& c : commands) names.push_back(c.name);
  std::vector<std::string> top = names;
  top.insert(top.end(), kTopLevelWords.begin(), kTopLevelWords.end());
  top.insert(top.end(), {"--help", "--version"});

  std::string s =
      "# bash completion for c960, made by 'c960 completion bash' from the command and option tables\n"
      "# of its parser. Load it with: source <(c960 completion bash)\n"
      "_c960() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
      "  # --option=value: bash splits at '=' (COMP_WORDBREAKS)\n"
      "  if [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
      "  if [[ $cur == = ]]; then cur=; fi\n"
      "  if ((COMP_CWORD == 1)); then\n";
  absl::StrAppend(&s, "    COMPREPLY=($(compgen -W '", absl::StrJoin(top, " "), "' -- \"$cur\"))\n",
                  "    return 0\n"
                  "  fi\n"
                  "  local cmd=${COMP_WORDS[1]} options= first=\n"
                  "  case $cmd in\n");
  absl::StrAppend(&s, "    help)\n      ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W '", absl::StrJoin(names, " "),
                  "' -- \"$cur\"))\n      return 0\n      ;;\n");
  for (const CommandInfo& c : commands) {
    absl::StrAppend(&s, "    ", c.name, ")\n      options='", absl::StrJoin(option_words(*c.spec), " "), "'\n");
    if (!c.spec->first_words.empty())
      absl::StrAppend(&s, "      first='", absl::StrJoin(c.spec->first_words, " "), "'\n");
    absl::StrAppend(&s, "      ;;\n");
  }
  absl::StrAppend(&s,
                  "    *) return 0 ;;\n"
                  "  esac\n"
                  "  # The value of the option before the cursor.\n"
                  "  case \"$cmd $prev\" in\n");
  for (const CommandInfo& c : commands)
    for (const OptionSpec& o : c.spec->options) {
      const ValueCompletion v = value_completion(o);
      if (o.arity == Arity::kFlag) continue;
      absl::StrAppend(&s, "    '", c.name, " --", o.name, "')\n");
      if (v.files) absl::StrAppend(&s, "      compopt -o filenames 2>/dev/null\n");
      absl::StrAppend(&s, "      COMPREPLY=(");
      if (!v.words.empty()) absl::StrAppend(&s, "$(compgen -W '", absl::StrJoin(v.words, " "), "' -- \"$cur\")");
      if (v.files) absl::StrAppend(&s, v.words.empty() ? "" : " ", "$(compgen -f -- \"$cur\")");
      absl::StrAppend(&s, ")\n      return 0\n      ;;\n");
    }
  absl::StrAppend(&s,
                  "  esac\n"
                  "  if [[ $cur == -* ]]; then\n"
                  "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
                  "  elif ((COMP_CWORD == 2)) && [[ -n $first ]]; then\n"
                  "    COMPREPLY=($(compgen -W \"$first\" -- \"$cur\"))\n"
                  "  fi\n"
                  "  return 0\n"
                  "}\n"
                  "complete -o default -F _c960 c960\n");
  return s;
}

std::string zsh_completion(const std::vector<CommandInfo>& commands) {
  std::string s =
      "#compdef c960\n"
      "# zsh completion for c960, made by 'c960 completion zsh' from the command and option tables\n"
      "# of its parser. Save it as _c960 in a directory of $fpath, or: source <(c960 completion zsh)\n"
      "_c960_words_or_files() {\n"
      "  _alternative \"words:value:($1)\" 'files:file:_files'\n"
      "}\n"
      "_c960() {\n"
      "  local -a commands\n"
      "  commands=(\n";
  for (const CommandInfo& c : commands)
    absl::StrAppend(&s, "    '", zsh_quoted(c.name, false), ":", zsh_quoted(c.summary, false), "'\n");
  absl::StrAppend(&s,
                  "    'help:print the help of a command'\n"
                  "    'version:print the version and the slider method in use'\n"
                  "  )\n"
                  "  if ((CURRENT == 2)); then\n"
                  "    _describe -t commands 'c960 command' commands\n"
                  "    return\n"
                  "  fi\n"
                  "  local cmd=${words[2]}\n"
                  "  shift words\n"
                  "  ((CURRENT--))\n"
                  "  case $cmd in\n"
                  "    (help)\n"
                  "      _describe -t commands 'c960 command' commands\n"
                  "      ;;\n");
  for (const CommandInfo& c : commands) {
    absl::StrAppend(&s, "    (", c.name, ")\n      _arguments -S \\\n");
    for (const OptionSpec& o : c.spec->options) {
      absl::StrAppend(&s, "        '", o.arity == Arity::kMany ? "*" : "", "--", o.name, "[", zsh_quoted(o.help), "]");
      if (o.arity != Arity::kFlag) {
        const ValueCompletion v = value_completion(o);
        std::string action = " ";
        if (!v.words.empty() && v.files)
          action = absl::StrCat("{_c960_words_or_files \"", absl::StrJoin(v.words, " "), "\"}");
        else if (!v.words.empty())
          action = absl::StrCat("(", absl::StrJoin(v.words, " "), ")");
        else if (v.files)
          action = "_files";
        absl::StrAppend(&s, ":", zsh_quoted(o.metavar), ":", action);
      }
      absl::StrAppend(&s, "' \\\n");
    }
    absl::StrAppend(&s, "        '--help[show this help]'");
    if (!c.spec->first_words.empty())
      absl::StrAppend(&s, " \\\n        '1:", c.name, ":(", absl::StrJoin(c.spec->first_words, " "), ")'");
    else if (c.spec->max_positional > 0)
      absl::StrAppend(&s, " \\\n        '*:argument:_files'");
    absl::StrAppend(&s, "\n      ;;\n");
  }
  absl::StrAppend(&s,
                  "  esac\n"
                  "}\n"
                  "if [[ $funcstack[1] == _c960 ]]; then\n"
                  "  _c960 \"$@\"  # autoloaded from $fpath\n"
                  "else\n"
                  "  compdef _c960 c960  # sourced\n"
                  "fi\n");
  return s;
}

const CommandSpec& completion_spec() { return kSpec; }

int cmd_completion(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().empty()) return fail(io, kName, "give the shell: bash or zsh");
  const std::string& shell = p.positional()[0];
  if (shell == "bash") {
    io.out << bash_completion(command_table());
  } else if (shell == "zsh") {
    io.out << zsh_completion(command_table());
  } else {
    return fail(io, kName, absl::StrCat("'", shell.substr(0, 64), "' is not bash or zsh"));
  }
  return kExitOk;
}

}  // namespace c960::cli
