#!/usr/bin/env bash
# Regenerates the sample self-play tables of this folder: two real runs of the built-in engine
# over all 960 start positions, 4 games each, seeds 1 and 2 (a few minutes per run on one core).
#   tests/data/report/make.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
c960="$(cd "${1:-$here/../../../build/release}" && pwd)/cli/c960"
for seed in 1 2; do
  "$c960" selfplay --sps 0-959 --games-per-position 4 --engine builtin --nodes 1000 --node-jitter 25 \
    --max-plies 200 --draw-moves 8 --draw-min-ply 60 --resign-moves 4 --resign-score 600 --seed "$seed" \
    --threads 1 --out "$here/selfplay-seed$seed.csv"
done
