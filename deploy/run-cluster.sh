#!/usr/bin/env bash
# The cluster's main command: installs and builds, starts a coordinator and workers on loopback,
# computes perft of all 960 start positions (depth 5), watches it, writes the CSV table, and
# stops every process it started.
#   DEPTH=5 WORKERS=2 THREADS=1 DATA_DIR=results/cluster deploy/run-cluster.sh
# DATA_DIR holds the coordinator's SQLite file, the logs and the table; with
# DB=postgresql://USER@HOST:PORT/NAME?... the coordinator keeps its state in that PostgreSQL
# database instead (its password from PGPASSWORD or PGPASSFILE; docs/deploy.md). The job has a fixed
# request id, so running the script again after an interruption resumes the same job, and after
# success writes the stored table again; FRESH=1 starts over with an empty DATA_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
depth="${DEPTH:-5}"
workers="${WORKERS:-2}"
threads="${THREADS:-1}"
data="${DATA_DIR:-results/cluster}"
db="${DB:-}"
bin=build/release

./deploy/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

if [[ "${FRESH:-0}" == 1 ]]; then rm -rf "$data"; fi
mkdir -p "$data"
pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT

rm -f "$data/coordinator.port"
"$bin/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$data/coordinator.port" \
  --db "${db:-$data/coordinator.db}" 2>>"$data/coordinator.log" &
pids+=($!)
for _ in $(seq 200); do
  [[ -s "$data/coordinator.port" ]] && break
  sleep 0.1
done
if [[ ! -s "$data/coordinator.port" ]]; then
  echo "run-cluster: the coordinator did not start; see $data/coordinator.log" >&2
  exit 1
fi
export C960_COORDINATOR="127.0.0.1:$(cat "$data/coordinator.port")"
for i in $(seq "$workers"); do
  "$bin/worker/c960-worker" --coordinator "$C960_COORDINATOR" --threads "$threads" 2>>"$data/worker$i.log" &
  pids+=($!)
done
echo "run-cluster: coordinator on $C960_COORDINATOR, $workers workers x $threads threads; logs in $data/"

job="$("$bin/cli/c960" submit perft --depth "$depth" --sps 0-959 --request-id "run-cluster-perft960-d$depth" |
  tail -n 1 | awk '{print $NF}')"
"$bin/cli/c960" watch "$job"
out="$data/perft960_d${depth}.csv"
"$bin/cli/c960" results "$job" --format csv --out "$out" >/dev/null
# An absolute DATA_DIR is printed as it is; a relative one from the repository root.
case "$out" in /*) shown="$out" ;; *) shown="$(pwd)/$out" ;; esac
echo "perft table of all 960 start positions at depth $depth: $shown"
