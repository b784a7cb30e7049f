#!/usr/bin/env bash
# Times `c960 perft` against Debian's Stockfish (go perft, UCI_Chess960 on, one thread) on the
# same start positions, and prints both times and the ratio.
#   bench/perft_vs_stockfish.sh [DEPTH] [SP ...]      default: depth 6, ten start positions
#   C960_ARGS="--hash 256 --threads 2" bench/perft_vs_stockfish.sh    c960 with other options
# Each time is the wall time of one whole process run (start-up included, for both programs);
# the summary also gives the nodes per second of each. Build first (deploy/build.sh). This is a
# benchmark, not a test: it only checks that both programs agree on every count.
set -euo pipefail
cd "$(dirname "$0")/.."
c960=./build/release/cli/c960
stockfish=$(command -v stockfish || echo /usr/games/stockfish)
depth="${1:-6}"
shift || true
sps=("$@")
((${#sps[@]})) || sps=(0 104 208 312 416 518 601 720 840 959)
read -r -a c960_args <<<"${C960_ARGS:---threads 1 --hash 0}"

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
echo "c960 ${c960_args[*]} vs stockfish (1 thread), depth $depth"
printf "%-5s %-10s %14s %10s %10s %8s\n" sp backrank nodes c960_s sf_s ratio
tot_c=0 tot_s=0 tot_n=0
for sp in "${sps[@]}"; do
  fen=$($c960 startpos "$sp" --shredder)
  t0=$(now)
  ours=$($c960 perft --depth "$depth" --fen "$fen" "${c960_args[@]}" 2>/dev/null | awk '/Nodes searched/{print $3}')
  t1=$(now)
  theirs=$(printf 'setoption name UCI_Chess960 value true\nsetoption name Threads value 1\nposition fen %s\ngo perft %s\nquit\n' \
             "$fen" "$depth" | "$stockfish" 2>/dev/null | awk '/Nodes searched/{print $3}')
  t2=$(now)
  if [[ "$ours" != "$theirs" ]]; then
    echo "COUNT MISMATCH at sp $sp: c960 $ours, stockfish $theirs" >&2
    exit 1
  fi
  c=$(calc "$t1 - $t0") s=$(calc "$t2 - $t1")
  tot_c=$(calc "$tot_c + $c") tot_s=$(calc "$tot_s + $s") tot_n=$(calc "$tot_n + $ours")
  printf "%-5s %-10s %14s %10.3f %10.3f %8.2f\n" "$sp" "$(echo "${fen%%/*}" | tr a-z A-Z)" "$ours" "$c" "$s" "$(calc "$s / $c")"
done
printf "total: %.0f nodes; c960 %.3f s (%.0f Mnps), stockfish %.3f s (%.0f Mnps); c960 is %.2fx faster\n" \
  "$tot_n" "$tot_c" "$(calc "$tot_n / $tot_c / 1e6")" "$tot_s" "$(calc "$tot_n / $tot_s / 1e6")" "$(calc "$tot_s / $tot_c")"
