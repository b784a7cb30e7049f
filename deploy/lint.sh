#!/usr/bin/env bash
# The house style and the bug-finding checks:
#   deploy/lint.sh           clang-format check of every C++ file (fails on any difference)
#   deploy/lint.sh --fix     reformat them in place
#   deploy/lint.sh --tidy    also clang-tidy with .clang-tidy on every source file (deploy/tidy.sh:
#                            minutes; needs build/release/compile_commands.json, i.e. a configured
#                            release build)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-check}"
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [[ "$mode" == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "lint: ${#files[@]} files formatted"
if [[ "$mode" == --tidy ]]; then
  ./deploy/tidy.sh
fi
