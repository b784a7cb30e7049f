#!/usr/bin/env bash
# cmake --install of a source build (BUILD_DIR) into a scratch directory (DESTDIR): the man pages
# the build made (c960.1 with a section per command) and the shell completion scripts, which
# complete in bash and parse in zsh. The .deb is made from the same install rules.
#   deploy/tests/install_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: install_test.sh BUILD_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

DESTDIR="$work" cmake --install "$build" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
root="$work$prefix"
for page in c960 c960-coordinator c960-worker c960-healthcheck; do
  [[ -s "$root/share/man/man1/$page.1.gz" ]] || fail "no man page $page.1 under $prefix/share/man/man1"
done
page=$(zcat "$root/share/man/man1/c960.1.gz")
for command in $("$build/cli/c960" completion bash | sed -n "s/^    \([a-z]*\))$/\1/p" | grep -vx help); do
  grep -q "^\.SS \"c960 $command\"" <<<"$page" || fail "c960.1 has no section for c960 $command"
done
grep -q '^\.SH COMMANDS' <<<"$page" || fail "c960.1 has no COMMANDS section"
grep -q 'Nodes searched: N' <<<"$page" || fail "c960.1 lacks the text of c960 uci --help"

bash_script="$root/share/bash-completion/completions/c960"
zsh_script="$root/share/zsh/vendor-completions/_c960"
[[ -s "$bash_script" && -s "$zsh_script" ]] || fail "no completion scripts under $prefix/share"
cmp -s "$bash_script" <("$build/cli/c960" completion bash) || fail "$bash_script is not c960 completion bash"
got=$(bash -c 'source "$1"; COMP_WORDS=(c960 sel); COMP_CWORD=1; _c960; echo "${COMPREPLY[*]}"' _ "$bash_script")
[[ "$got" == selfplay ]] || fail "installed bash completion of 'c960 sel': '$got'"
zsh -n "$zsh_script" || fail "zsh -n $zsh_script"
# The installed c960 finds the installed c960-cluster, relative to itself, for the commands that
# are in it (cli/main.cpp): the same output as the build's.
installed=$(ls "$root"/libexec/c960/c960-cluster) || fail "no c960-cluster under $prefix/libexec/c960"
cmp -s <("$root/bin/c960" completion bash) <("$build/cli/c960" completion bash) ||
  fail "the installed c960 completion bash (through $installed) differs from the build's"
echo "install_test: man pages (c960.1 with every command), completion scripts and c960-cluster installed under $prefix"
