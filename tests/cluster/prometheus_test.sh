#!/usr/bin/env bash
# The coordinator's /metrics as Prometheus sees it (ctest label "integration", test
# cluster.prometheus): `promtool check metrics` on the endpoint's output before and after a job,
# then a real Prometheus server (Debian's prometheus) scraping a test coordinator on loopback
# every second, queried through its HTTP API for counters that moved during a perft job: the
# scraped c960_perft_nodes_total must go from 0 to the job's node count as `c960 results` gives
# it, and the completions counter must rise by the job's units. Also `c960 report JOB` of that job.
# Skips (exit 77) only when promtool or prometheus is missing: deploy/install-deps.sh installs them.
#   tests/cluster/prometheus_test.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
for tool in promtool prometheus curl python3; do
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

"$build/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/c.db" \
  --http-listen 127.0.0.1:0 --http-port-file "$work/http-port" 2>"$work/coordinator.log" &
pids+=($!)
wait_for 20 test -s "$work/http-port" || fail "the coordinator did not start"
port=$(<"$work/port") http=$(<"$work/http-port")
metrics="http://127.0.0.1:$http/metrics"

curl -fsS "$metrics" >"$work/before.txt"
promtool check metrics <"$work/before.txt" || fail "promtool rejects /metrics of an idle coordinator"

# Prometheus on a free loopback port, scraping the coordinator every second.
prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: c960
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

"$build/worker/c960-worker" --coordinator "127.0.0.1:$port" --threads 1 2>"$work/worker.log" &
pids+=($!)
c960=("$build/cli/c960")
job=$("${c960[@]}" submit --coordinator "127.0.0.1:$port" perft --depth 4 --sps 0-19 --split-depth 1 --verify off |
  awk '{w=$NF} END {print w}')
"${c960[@]}" watch --coordinator "127.0.0.1:$port" "$job" >"$work/watch.log" 2>&1 || fail "job $job did not succeed"
nodes=$("${c960[@]}" results --coordinator "127.0.0.1:$port" "$job" --format csv |
  awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "nodes") c = i; next} {s += $c} END {printf "%d", s}')
[[ $nodes -gt 0 ]] || fail "no node count from c960 results"
units=$(curl -fsS "http://127.0.0.1:$http/api/v1/jobs/$job" | python3 -c '
import json, sys; print(json.load(sys.stdin)["progress"]["units_total"])')

# c960 report of the finished job: one HTML file naming the job, its depth and verification.
"${c960[@]}" report --coordinator "127.0.0.1:$port" "$job" --out "$work/report.html" >/dev/null ||
  fail "c960 report $job failed"
for needle in "perft report: $job" "depth 4" "verification" "<canvas"; do
  grep -qF "$needle" "$work/report.html" || fail "the report of $job lacks '$needle'"
done
curl -fsS "$metrics" >"$work/after.txt"
promtool check metrics <"$work/after.txt" || fail "promtool rejects /metrics after a job"

moved() { [[ $(query 'c960_perft_nodes_total{job="c960"}') == "$nodes" ]]; }
wait_for 30 moved || fail "Prometheus shows c960_perft_nodes_total $(query 'c960_perft_nodes_total{job="c960"}'), not $nodes"
# Moved during the job: 0 in an earlier scrape of the same series.
[[ $(query 'min_over_time(c960_perft_nodes_total{job="c960"}[10m])') == 0 ]] || fail "no scrape saw 0 nodes"
accepted=$(query 'c960_unit_completions_total{job="c960",outcome="accepted"}')
[[ $accepted == "$units" ]] || fail "accepted completions $accepted, the job has $units units"
[[ $(query 'c960_jobs{job="c960",kind="perft",state="succeeded"}') == 1 ]] || fail "no succeeded perft job"
[[ -n $(query 'sum(c960_rpc_duration_seconds_count{job="c960",method="/c960.v1.WorkerService/CompleteUnit",code="OK"})') ]] ||
  fail "no CompleteUnit latency series"
echo "prometheus_test: job $job ($units units, $nodes nodes) scraped by Prometheus $(prometheus --version 2>&1 | awk 'NR==1{print $3}')"
ok=1
