#!/bin/sh
# A fake UCI engine for the adapter tests: answers go with a bestmove line without a move.
# Only shell builtins, so that killing this process leaves nothing behind.
while read -r line; do
  case "$line" in
    uci) printf 'id name fake-no_move.sh\noption name UCI_Chess960 type check default false\nuciok\n' ;;
    isready) echo readyok ;;
    go*) echo bestmove ;;
    quit) exit 0 ;;
  esac
done
