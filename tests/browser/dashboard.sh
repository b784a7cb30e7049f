#!/usr/bin/env bash
# Browser tests of the coordinator's live dashboard (ctest label "browser", test browser.dashboard):
# a coordinator with --http-listen on loopback, a worker, a self-play job over all 960 start
# positions and a small perft job, and dashboard.test.mjs checking the pages in headless Chromium
# while the self-play job runs. Every process started here is stopped on exit, also on failure.
# Needs deploy/install-browser-test-deps.sh first. Screenshots of failures go to $C960_ARTIFACTS
# (default build/release/browser-artifacts); with C960_SCREENSHOTS=DIR the pages are also shot
# there when the checks pass (docs/dashboard*.png are made so).
#   tests/browser/dashboard.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
export C960_ARTIFACTS="${C960_ARTIFACTS:-$build/browser-artifacts}"

for f in "$build/coordinator/c960-coordinator" "$build/worker/c960-worker" "$build/cli/c960"; do
  [[ -x $f ]] || { echo "dashboard.sh: $f is missing: build the release preset first" >&2; exit 2; }
done
[[ -x /usr/bin/chromium && -d $here/node_modules/playwright-core ]] ||
  { echo "dashboard.sh: chromium or playwright-core missing: run deploy/install-browser-test-deps.sh" >&2; exit 2; }

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ ${ok:-0} != 1 ]]; then
    for f in "$work"/*.log; do [[ -f $f ]] && { echo "---- $f"; tail -n 30 "$f"; }; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$build/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/c.db" \
  --http-listen 127.0.0.1:0 --http-port-file "$work/http-port" 2>"$work/coordinator.log" &
pids+=($!)
for ((i = 0; i < 200; i++)); do [[ -s $work/http-port ]] && break; sleep 0.1; done
[[ -s $work/http-port ]] || { echo "dashboard.sh: the coordinator did not start" >&2; exit 1; }
port=$(<"$work/port")
coordinator="127.0.0.1:$port"

# The perft job first, so that it is done when the pages are opened; then self-play, which one
# worker plays for some tens of seconds: long enough to watch the page follow it. Random openings
# and resignation make decisive games, so the heatmap has colours and the tooltips W/L counts.
perft=$("$build/cli/c960" submit --coordinator "$coordinator" perft --depth 3 --sps 0-959 --split-depth 0 \
  --verify off | awk '{w=$NF} END {print w}')
# A small self-play job with enough games a position to be ranked (selfplay/ranking.h), done early.
ranked=$("$build/cli/c960" submit --coordinator "$coordinator" selfplay --sps 0-4 --games-per-position 20 \
  --engine builtin --nodes 200 --random-plies 6 --resign-moves 2 --resign-score 250 --max-plies 100 \
  --games-per-unit 10 --verify off | awk '{w=$NF} END {print w}')
selfplay=$("$build/cli/c960" submit --coordinator "$coordinator" selfplay --sps 0-959 --games-per-position 2 \
  --engine builtin --nodes 300 --random-plies 6 --resign-moves 2 --resign-score 250 --max-plies 120 \
  --games-per-unit 2 --verify off | awk '{w=$NF} END {print w}')
"$build/worker/c960-worker" --coordinator "$coordinator" --threads 1 --name browser-test-worker \
  2>"$work/worker.log" &
pids+=($!)

export C960_DASHBOARD_URL="http://127.0.0.1:$(<"$work/http-port")"
export C960_COORDINATOR="$coordinator" C960_CLI="$build/cli/c960"
export C960_PERFT_JOB="$perft" C960_SELFPLAY_JOB="$selfplay" C960_RANKED_JOB="$ranked"
cd "$here"
node --test --test-reporter=spec dashboard.test.mjs
ok=1
