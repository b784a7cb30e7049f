#!/usr/bin/env bash
# Regenerates the sample tables of this folder (tests/data/report/README.md): two real self-play
# runs of the built-in engine over all 960 start positions, 4 games each, seeds 1 and 2 (a few
# minutes per run on one core); an adaptive run (--band); and a match of the built-in engine
# against Stockfish (Debian's /usr/games/stockfish at Skill Level 0; a few minutes on two threads),
# as CSV and, with an SPRT, as JSON.
#   tests/data/report/make.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
c960="$(cd "${1:-$here/../../../build/release}" && pwd)/cli/c960"
for seed in 1 2; do
  "$c960" selfplay --sps 0-959 --games-per-position 4 --engine builtin --nodes 1000 --node-jitter 25 \
    --max-plies 200 --draw-moves 8 --draw-min-ply 60 --resign-moves 4 --resign-score 600 --seed "$seed" \
    --threads 1 --out "$here/selfplay-seed$seed.csv"
done
"$c960" selfplay --sps 0-47 --band 0.50+-0.08 --games-per-position 200 --batch 10 --engine builtin --nodes 300 \
  --node-jitter 25 --seed 1 --threads 1 --format csv --out "$here/adaptive-band.csv"
"$c960" selfplay --sps 0-959 --games-per-position 4 --engine builtin --opponent /usr/games/stockfish \
  --opponent-option "Skill Level=0" --nodes 1000 --node-jitter 25 --seed 1 --threads 2 --format csv \
  --out "$here/match-builtin-stockfish.csv"
"$c960" selfplay --sps 0-959 --games-per-position 2 --engine builtin --opponent stockfish=/usr/games/stockfish \
  --opponent-option "Skill Level=0" --nodes 1000 --node-jitter 25 --seed 2 --threads 1 \
  --sprt elo0=0,elo1=60 --format json --out "$here/match-sprt.json"
