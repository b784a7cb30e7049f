#!/usr/bin/env bash
# End-to-end efficiency: perft of all 960 start positions at depth D (default 6) through one
# coordinator and two one-thread workers on loopback, against 'c960 perft --table --threads 2'
# on the same machine. Prints both wall times and the cluster's speed as a share of the local
# tool's. Run after building the release preset:
#   bench/cluster_vs_local.sh [DEPTH] [WORKER_HASH_MB] [SPS] [SPLIT_DEPTH]
# WORKER_HASH_MB defaults to 0 so both sides do the same work (the local tool has no hash); with
# a hash, the local tool gets the two workers' memory in one table (2 x WORKER_HASH_MB), so both
# sides have the same threads and the same memory. SPS (default 0-959) narrows the positions;
# SPLIT_DEPTH is the job's --split-depth (default: the coordinator's choice).
set -euo pipefail
cd "$(dirname "$0")/.."
depth="${1:-6}"
hash_mb="${2:-0}"
sps="${3:-0-959}"
split=()
[[ -n "${4:-}" ]] && split=(--split-depth "$4")
[[ "$depth" =~ ^[1-9][0-9]?$ ]] || { echo "cluster_vs_local.sh: DEPTH: '$depth' is not a depth" >&2; exit 2; }
[[ "$hash_mb" =~ ^[0-9]+$ ]] || { echo "cluster_vs_local.sh: WORKER_HASH_MB: '$hash_mb' is not a number" >&2; exit 2; }
bin=build/release
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s.%N; }
# CPU seconds (user + system) a process has used so far, from /proc.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

t0=$(now)
/usr/bin/time -f %U+%S -o "$tmp/local.cpu" "$bin/cli/c960" perft --table --depth "$depth" --sps "$sps" --threads 2 \
  --hash $((2 * hash_mb)) --out "$tmp/local.csv" >/dev/null 2>&1
t1=$(now)
local_cpu=$(awk -F+ '{ print $1 + $2 }' "$tmp/local.cpu")
local_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

"$bin/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$tmp/port" --db "$tmp/c.db" 2>"$tmp/c.log" &
pids+=($!)
for _ in $(seq 200); do [[ -s "$tmp/port" ]] && break; sleep 0.05; done
export C960_COORDINATOR="127.0.0.1:$(cat "$tmp/port")"
for i in 1 2; do
  "$bin/worker/c960-worker" --coordinator "$C960_COORDINATOR" --threads 1 --hash "$hash_mb" 2>"$tmp/w$i.log" &
  pids+=($!)
done
sleep 0.5  # workers registered: time the job, not process start-up
cpu0=0
for pid in "${pids[@]}"; do cpu0=$(awk -v a="$cpu0" -v b="$(cpu_of "$pid")" 'BEGIN { print a + b }'); done
t2=$(now)
job="$("$bin/cli/c960" submit perft --depth "$depth" --sps "$sps" "${split[@]}" | tail -n 1 | awk '{print $NF}')"
"$bin/cli/c960" watch "$job" >/dev/null
"$bin/cli/c960" results "$job" --out "$tmp/cluster.csv" >/dev/null
t3=$(now)
cluster_s=$(awk -v a="$t2" -v b="$t3" 'BEGIN { print b - a }')
cpu1=0
for pid in "${pids[@]}"; do cpu1=$(awk -v a="$cpu1" -v b="$(cpu_of "$pid")" 'BEGIN { print a + b }'); done
cluster_cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')
units=$(grep -o '[0-9]* units, split depth [0-9]*' "$tmp/c.log" | head -1 || true)

cmp -s "$tmp/local.csv" "$tmp/cluster.csv" && same=identical || same=DIFFERENT
nodes=$(awk -F, 'NR > 1 { s += $4 } END { printf "%.0f", s }' "$tmp/local.csv")
printf 'perft depth %s of start positions %s (%s nodes), tables %s\n' "$depth" "$sps" "$nodes" "$same"
awk -v n="$nodes" -v l="$local_s" -v c="$cluster_s" -v h="$hash_mb" -v lc="$local_cpu" -v cc="$cluster_cpu" \
  -v u="$units" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "local   c960 perft --table --threads 2:       %8.2f s  %7.1f Mnps  CPU %8.2f s  (hash %s MB)\n", l, n / l / 1e6, lc, 2 * h
  printf "cluster 1 coordinator + 2 workers x 1 thread: %8.2f s  %7.1f Mnps  CPU %8.2f s  (worker hash %s MB; %s)\n",
    c, n / c / 1e6, cc, h, u
  printf "cluster speed / local speed: %.1f%% of the wall time, %.1f%% of the CPU time (load average after: %s)\n",
    100 * l / c, 100 * lc / cc, load
}'
[[ "$same" == identical ]]
