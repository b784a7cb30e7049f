#!/bin/sh
# A fake UCI engine for the adapter tests: declares no UCI_Chess960 option.
# Only shell builtins, so that killing this process leaves nothing behind.
while read -r line; do
  case "$line" in
    uci) printf 'id name fake-no_chess960.sh\nuciok\n' ;;
    isready) echo readyok ;;
    go*) echo "bestmove e2e4" ;;
    quit) exit 0 ;;
  esac
done
