#!/bin/sh
# A fake UCI engine for the adapter tests: dies by SIGSEGV when asked to search.
# Only shell builtins, so that killing this process leaves nothing behind.
while read -r line; do
  case "$line" in
    uci) printf 'id name fake-crash_on_go.sh\noption name UCI_Chess960 type check default false\nuciok\n' ;;
    isready) echo readyok ;;
    go*) kill -SEGV $$ ;;
    quit) exit 0 ;;
  esac
done
