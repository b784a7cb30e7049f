#!/usr/bin/env bash
# Browser tests (ctest label "browser"): makes a self-play, a perft, an adaptive and a match report with the release
# build's c960-report-dev and c960, and checks them in headless Chromium (report.test.mjs).
# Needs deploy/install-browser-test-deps.sh first. Screenshots of failures go to
# $C960_ARTIFACTS (default build/release/browser-artifacts).
#   tests/browser/run.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
export C960_ARTIFACTS="${C960_ARTIFACTS:-$build/browser-artifacts}"

for f in "$build/report/c960-report-dev" "$build/cli/c960"; do
  [[ -x $f ]] || { echo "run.sh: $f is missing: build the release preset first" >&2; exit 2; }
done
[[ -x /usr/bin/chromium && -d $here/node_modules/playwright-core ]] ||
  { echo "run.sh: chromium or playwright-core missing: run deploy/install-browser-test-deps.sh" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$root/tests/data/report"
"$build/report/c960-report-dev" --from "$data/selfplay-seed1.csv" --reference "$data/selfplay-seed2.csv" \
  --out "$work/selfplay.html" --meta "engine=builtin" --meta "seed=1"
for d in 1 2 3; do "$build/cli/c960" perft --table --depth "$d" --sps 0-959 2>/dev/null; done > "$work/perft.csv"
"$build/report/c960-report-dev" --from "$work/perft.csv" --out "$work/perft.html"

# The adaptive and match sections, through the command itself.
"$build/cli/c960" report --from "$data/adaptive-band.csv" --out "$work/adaptive.html" >/dev/null
"$build/cli/c960" report --from "$data/match-builtin-stockfish.csv" --title "builtin vs Stockfish" \
  --out "$work/match.html" >/dev/null
"$build/cli/c960" report --from "$data/match-sprt.json" --out "$work/match-sprt.html" >/dev/null

export C960_SELFPLAY_REPORT="$work/selfplay.html" C960_SELFPLAY_CSV="$data/selfplay-seed1.csv"
export C960_ADAPTIVE_REPORT="$work/adaptive.html" C960_ADAPTIVE_CSV="$data/adaptive-band.csv"
export C960_MATCH_REPORT="$work/match.html" C960_MATCH_CSV="$data/match-builtin-stockfish.csv"
export C960_MATCH_JSON_REPORT="$work/match-sprt.html" C960_MATCH_JSON="$data/match-sprt.json"
export C960_PERFT_REPORT="$work/perft.html" C960_PERFT_CSV="$work/perft.csv"
cd "$here"
node --test --test-reporter=spec report.test.mjs
