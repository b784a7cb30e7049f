#!/usr/bin/env bash
# The man pages the build made (BUILD_DIR/man/man1), as a reader sees them: NAME.1 beside the
# installed NAME.1.gz (the README's `man build/release/man/man1/c960.1`), each rendered by
# `man -l` at 80 columns with no line longer than that, and c960.1's command list with every
# command of `c960 --help` at the start of a line of its own (not run into the one before).
# Exit 77 (skipped) without man.
#   deploy/tests/manpage_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: manpage_test.sh BUILD_DIR}" && pwd)
fail() { echo "manpage_test: $*" >&2; exit 1; }
command -v man >/dev/null || { echo "manpage_test: no man here: skipped"; exit 77; }
export LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_FORMATTING=0
dir="$build/man/man1"

for name in c960 c960-coordinator c960-worker c960-healthcheck; do
  [[ -s "$dir/$name.1" ]] || fail "no $dir/$name.1"
  cmp -s <(zcat "$dir/$name.1.gz") "$dir/$name.1" || fail "$name.1.gz is not $name.1 compressed"
  page=$(man -l "$dir/$name.1" 2>/dev/null | col -bx)
  (( $(wc -l <<<"$page") > 10 )) || fail "man -l $name.1 rendered nothing"
  long=0
  while IFS= read -r line; do
    if (( ${#line} > 80 )); then
      (( long++ == 0 )) && echo "manpage_test: $name.1, ${#line} columns: $line" >&2
    fi
  done <<<"$page"
  (( long == 0 )) || fail "$name.1 has $long lines over 80 columns at MANWIDTH=80"
done

# c960 --help's commands, each the first word of a line of the rendered list.
page=$(man -l "$dir/c960.1" 2>/dev/null | col -bx)
list=$(sed -n '/^DESCRIPTION/,/^COMMANDS/p' <<<"$page")
commands=$(COLUMNS=80 "$build/cli/c960" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
(( $(wc -w <<<"$commands") >= 10 )) || fail "c960 --help lists too few commands: $commands"
for command in $commands; do
  grep -Eq "^ +$command( |$)" <<<"$list" || fail "c960.1 runs the command '$command' into another entry"
done
echo "manpage_test: 4 pages within 80 columns, $(wc -w <<<"$commands") commands listed apart"
