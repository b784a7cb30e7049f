#!/usr/bin/env bash
# The coordinator's HTTP side as operators use it (ctest label "integration", test
# cluster.prometheus), with TLS and tokens on, as every deploy artifact runs it:
# - beyond loopback without TLS and tokens: refused at start;
# - who may see what over HTTPS (each path as the gRPC method it mirrors): /healthz open, /metrics
#   401 without a token, 403 for role submit (it mirrors ListWorkers), 200 for role read; the jobs
#   API 200 for role submit (its own jobs), 403 for role worker; plain HTTP on the HTTPS port
#   answers nothing;
# - `promtool check metrics` on the endpoint's output before and after a job;
# - a real Prometheus server (Debian's prometheus) scraping the coordinator every second over
#   HTTPS with a read token (the configuration of docs/operations.md), queried through its HTTP
#   API for counters that moved during a perft job: the scraped c960_perft_nodes_total goes from 0
#   to the job's node count as `c960 results` gives it, accepted completions equal the jobs' units;
# - `c960 report JOB` of that job and of a small self-play job, whose games Prometheus counts.
# Skips (exit 77) only when promtool or prometheus is missing: deploy/install-deps.sh installs them.
#   tests/cluster/prometheus_test.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
for tool in promtool prometheus curl python3 openssl; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (deploy/install-deps.sh installs it)"; exit 77; }
done

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ ${ok:-0} != 1 ]]; then
    for f in "$work"/*.log; do echo "---- $f"; tail -n 40 "$f"; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local limit=$1; shift
  for ((i = 0; i < limit * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

# A CA, a server certificate for 127.0.0.1, and a token per role.
(
  cd "$work"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -keyout ca.key -out ca.pem -subj '/CN=c960 test CA' 2>/dev/null
  openssl req -new "${ec[@]}" -keyout server.key -out server.csr -subj '/CN=127.0.0.1' 2>/dev/null
  echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
    -out server.pem 2>/dev/null
  for role in admin worker read submit; do
    "$build/cli/c960" token new --role "$role" --name "test-$role" >"$role.out"
    head -n 1 "$role.out" >"$role.token"
    tail -n 1 "$role.out" >>tokens
  done
)

# The HTTP side beyond loopback without TLS and tokens is refused at start, naming the flag.
if "$build/coordinator/c960-coordinator" --listen 127.0.0.1:0 --db "$work/refused.db" \
  --http-listen 0.0.0.0:0 2>"$work/refused.log"; then
  fail "--http-listen 0.0.0.0:0 without TLS or tokens was accepted"
fi
grep -q -- "--http-listen 0.0.0.0:0 reaches beyond this machine" "$work/refused.log" ||
  fail "the refusal does not name --http-listen: $(<"$work/refused.log")"

"$build/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/c.db" \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --tokens "$work/tokens" \
  --http-listen 127.0.0.1:0 --http-port-file "$work/http-port" 2>"$work/coordinator.log" &
pids+=($!)
wait_for 20 test -s "$work/http-port" || fail "the coordinator did not start"
port=$(<"$work/port") http=$(<"$work/http-port")
base="https://127.0.0.1:$http"

# HTTP status of a GET of $1 with the token of role $2 ("" for none).
status() {
  local auth=()
  [[ -n $2 ]] && auth=(-H "Authorization: Bearer $(<"$work/$2.token")")
  curl -sS -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" "${auth[@]}" "$base$1"
}
[[ $(status /healthz "") == 200 ]] || fail "/healthz is not open"
[[ $(status /readyz "") == 200 ]] || fail "/readyz is not open"
[[ $(status /metrics "") == 401 ]] || fail "/metrics without a token is not 401"
[[ $(status /metrics submit) == 403 ]] || fail "/metrics for role submit is not 403"
[[ $(status /api/v1/jobs submit) == 200 ]] || fail "/api/v1/jobs for role submit is not 200"
[[ $(status /api/v1/jobs worker) == 403 ]] || fail "/api/v1/jobs for role worker is not 403"
[[ $(status /metrics read) == 200 ]] || fail "/metrics for role read is not 200"
if curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$http/healthz" 2>/dev/null; then
  fail "plain HTTP answered on the HTTPS port"
fi
get() { curl -fsS --cacert "$work/ca.pem" -H "Authorization: Bearer $(<"$work/read.token")" "$base$1"; }

get /metrics >"$work/before.txt"
promtool check metrics <"$work/before.txt" || fail "promtool rejects /metrics of an idle coordinator"

# Prometheus on a free loopback port, scraping the coordinator every second.
prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: c960
    scheme: https
    tls_config:
      ca_file: $work/ca.pem
    authorization:
      credentials_file: $work/read.token
    static_configs:
      - targets: ["127.0.0.1:$http"]
EOF
promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool rejects the scrape config"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" 2>"$work/prometheus.log" &
pids+=($!)
api="http://127.0.0.1:$prom_port/api/v1"

# The value of an instant query's single sample, or nothing.
query() {
  curl -fsS --get "$api/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "")'
}
scraped() { [[ $(query 'up{job="c960"}') == 1 ]]; }
wait_for 60 scraped || fail "Prometheus did not scrape the coordinator"
[[ $(query 'c960_perft_nodes_total{job="c960"}') == 0 ]] || fail "nodes before the job are not 0"

"$build/worker/c960-worker" --coordinator "127.0.0.1:$port" --tls-ca "$work/ca.pem" \
  --token-file "$work/worker.token" --threads 1 2>"$work/worker.log" &
pids+=($!)
c960=("$build/cli/c960")
export C960_COORDINATOR="127.0.0.1:$port" C960_TLS_CA="$work/ca.pem" C960_TOKEN="$(<"$work/admin.token")"
job=$("${c960[@]}" submit perft --depth 4 --sps 0-19 --split-depth 1 --verify off |
  awk '{w=$NF} END {print w}')
"${c960[@]}" watch "$job" >"$work/watch.log" 2>&1 || fail "job $job did not succeed"
nodes=$("${c960[@]}" results "$job" --format csv |
  awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "nodes") c = i; next} {s += $c} END {printf "%d", s}')
[[ $nodes -gt 0 ]] || fail "no node count from c960 results"
units=$(get "/api/v1/jobs/$job" | python3 -c '
import json, sys; print(json.load(sys.stdin)["progress"]["units_total"])')

# c960 report of the finished job: one HTML file naming the job, its depth and verification.
"${c960[@]}" report "$job" --out "$work/report.html" >/dev/null ||
  fail "c960 report $job failed"
for needle in "perft report: $job" "depth 4" "verification" "<canvas"; do
  grep -qF "$needle" "$work/report.html" || fail "the report of $job lacks '$needle'"
done
# And of a small self-play job: the heatmap section and the spec's metadata from the job.
sp_job=$("${c960[@]}" submit selfplay --sps 0-7 --games-per-position 2 --engine builtin --nodes 50 \
  --max-plies 60 --verify off | awk '{w=$NF} END {print w}')
"${c960[@]}" watch "$sp_job" >"$work/watch-selfplay.log" 2>&1 || fail "job $sp_job did not succeed"
"${c960[@]}" report "$sp_job" --out "$work/selfplay.html" >/dev/null || fail "c960 report $sp_job failed"
sp_units=$(get "/api/v1/jobs/$sp_job" | python3 -c '
import json, sys; print(json.load(sys.stdin)["progress"]["units_total"])')
for needle in "self-play report: $sp_job" 'id="heatmap"' "50 nodes" "games per position" "test-admin"; do
  grep -qF "$needle" "$work/selfplay.html" || fail "the report of $sp_job lacks '$needle'"
done
get /metrics >"$work/after.txt"
promtool check metrics <"$work/after.txt" || fail "promtool rejects /metrics after a job"

moved() { [[ $(query 'c960_perft_nodes_total{job="c960"}') == "$nodes" ]]; }
wait_for 30 moved || fail "Prometheus shows c960_perft_nodes_total $(query 'c960_perft_nodes_total{job="c960"}'), not $nodes"
# Moved during the job: 0 in an earlier scrape of the same series.
[[ $(query 'min_over_time(c960_perft_nodes_total{job="c960"}[10m])') == 0 ]] || fail "no scrape saw 0 nodes"
# Scraped after the self-play job too: 8 positions x 2 games.
games() { [[ $(query 'c960_selfplay_games_total{job="c960"}') == 16 ]]; }
wait_for 30 games || fail "Prometheus shows c960_selfplay_games_total $(query 'c960_selfplay_games_total{job="c960"}'), not 16"
accepted=$(query 'c960_unit_completions_total{job="c960",outcome="accepted"}')
[[ $accepted == $((units + sp_units)) ]] ||
  fail "accepted completions $accepted, the jobs have $units and $sp_units units"
[[ $(query 'c960_jobs{job="c960",kind="perft",state="succeeded"}') == 1 ]] || fail "no succeeded perft job"
[[ -n $(query 'sum(c960_rpc_duration_seconds_count{job="c960",method=~"/c960.v1.WorkerService/CompleteUnits?",code="OK"})') ]] ||
  fail "no CompleteUnit(s) latency series"
echo "prometheus_test: job $job ($units units, $nodes nodes) scraped by Prometheus $(prometheus --version 2>&1 | awk 'NR==1{print $3}')"
ok=1
