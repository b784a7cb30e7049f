#!/bin/sh
# A fake UCI engine for the adapter tests: declares a string option whose name names no file
# ("Greeting"), so that a policy's refusal of string options is seen apart from its file names.
# Only shell builtins.
while read -r line; do
  case "$line" in
    uci) printf 'id name fake-string_option.sh\noption name UCI_Chess960 type check default false\noption name Greeting type string default hi\nuciok\n' ;;
    isready) echo readyok ;;
    quit) exit 0 ;;
  esac
done
