#!/usr/bin/env bash
# Browser tests of the coordinator's live dashboard (ctest label "browser", test browser.dashboard):
# a coordinator as deployed, over TLS with tokens (--tls-cert, --tls-key, --tokens; its
# --http-listen on loopback serving HTTPS), a worker, a self-play job over all 960 start positions,
# a small perft job and a submitter's job that one worker cannot verify, and dashboard.test.mjs
# logging in through the login form and checking the pages in headless Chromium while the
# self-play job runs. Every process started here is stopped on exit, also on failure.
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

# A CA, the coordinator's certificate for 127.0.0.1, and a token per role (a second submitter too).
(
  cd "$work"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -keyout ca.key -out ca.pem -subj '/CN=c960 test CA' 2>/dev/null
  openssl req -new "${ec[@]}" -keyout server.key -out server.csr -subj '/CN=127.0.0.1' 2>/dev/null
  echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
    -out server.pem 2>/dev/null
  for who in admin:admin worker:worker read:reader submit:submitter submit:other; do
    "$build/cli/c960" token new --role "${who%%:*}" --name "${who#*:}" >"${who#*:}.out"
    head -n 1 "${who#*:}.out" >"${who#*:}.token"
    tail -n 1 "${who#*:}.out" >>tokens
  done
)
# Chromium accepts the coordinator's key, and only it (harness.mjs).
C960_TLS_SPKI=$(openssl pkey -in "$work/server.key" -pubout -outform der 2>/dev/null |
  openssl dgst -sha256 -binary | base64)
export C960_TLS_SPKI
# The test's own requests from Node (the downloads, compared byte for byte) trust the test CA.
export NODE_EXTRA_CA_CERTS="$work/ca.pem"

"$build/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/c.db" \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --tokens "$work/tokens" \
  --http-listen 127.0.0.1:0 --http-port-file "$work/http-port" 2>"$work/coordinator.log" &
pids+=($!)
for ((i = 0; i < 200; i++)); do [[ -s $work/http-port ]] && break; sleep 0.1; done
[[ -s $work/http-port ]] || { echo "dashboard.sh: the coordinator did not start" >&2; exit 1; }
port=$(<"$work/port")
coordinator="127.0.0.1:$port"
# The c960 tool over TLS: as the admin, except where a submitter submits.
export C960_TLS_CA="$work/ca.pem" C960_TOKEN="$(<"$work/admin.token")"

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
  --engine builtin --nodes 800 --random-plies 6 --resign-moves 2 --resign-score 250 --max-plies 120 \
  --games-per-unit 2 --verify off | awk '{w=$NF} END {print w}')
# The submitter's job: the default verification (adaptive) wants a second owner before it
# trusts the first, so with one worker it does not move, and says why (Job.notice).
waiting=$(C960_TOKEN="$(<"$work/submitter.token")" "$build/cli/c960" submit --coordinator "$coordinator" \
  perft --depth 2 --sps 0-3 --split-depth 0 | awk '{w=$NF} END {print w}')
"$build/worker/c960-worker" --coordinator "$coordinator" --tls-ca "$work/ca.pem" --token-file "$work/worker.token" \
  --threads 1 --name browser-test-worker 2>"$work/worker.log" &
pids+=($!)

export C960_DASHBOARD_URL="https://127.0.0.1:$(<"$work/http-port")"
export C960_COORDINATOR="$coordinator" C960_CLI="$build/cli/c960"
export C960_PERFT_JOB="$perft" C960_SELFPLAY_JOB="$selfplay" C960_RANKED_JOB="$ranked" C960_WAITING_JOB="$waiting"
for who in admin worker reader submitter other; do
  printf -v "C960_TOKEN_${who^^}" '%s' "$(<"$work/$who.token")"
  export "C960_TOKEN_${who^^}"
done
cd "$here"
node --test --test-reporter=spec dashboard.test.mjs
ok=1
