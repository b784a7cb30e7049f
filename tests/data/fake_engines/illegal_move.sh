#!/bin/sh
# A fake UCI engine for the adapter tests: answers every go with the illegal e2e5.
# Only shell builtins, so that killing this process leaves nothing behind.
while read -r line; do
  case "$line" in
    uci) printf 'id name fake-illegal_move.sh\noption name UCI_Chess960 type check default false\nuciok\n' ;;
    isready) echo readyok ;;
    go*) echo "info depth 1 score cp 12"; echo "bestmove e2e5" ;;
    quit) exit 0 ;;
  esac
done
