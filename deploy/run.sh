#!/usr/bin/env bash
# The main job: installs, builds, and computes the perft table of all 960 start positions at
# depth 5 (override with DEPTH=...), with progress on stderr, into results/perft960_d<D>.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh release
depth="${DEPTH:-5}"
mkdir -p results
out="results/perft960_d${depth}.csv"
./build/release/cli/c960 perft --table --depth "$depth" --sps 0-959 --threads "$(nproc)" --out "$out"
echo "perft table of all 960 start positions at depth $depth: $(pwd)/$out"
