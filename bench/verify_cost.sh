#!/usr/bin/env bash
# The cost of verified results: perft of all 960 start positions at depth D (default 6) through
# one coordinator and two honest one-thread workers on loopback, once per verify mode (default
# off, adaptive, all), each on a fresh store (so adaptive starts with untrusted workers and
# includes the warm-up until they are trusted). Prints per mode the wall time of the job, the
# CPU time the two workers and the coordinator used (from /proc/PID/stat), and the workers' CPU
# against `off`. Run after building the release preset:
#   bench/verify_cost.sh [DEPTH] [MODES...]        e.g. bench/verify_cost.sh 5 off adaptive
# Environment: WORKER_HASH_MB (worker --hash, default the worker's default), TRUST_AFTER and
# SPOT_CHECK_RATE (coordinator flags, default the coordinator's defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
depth="${1:-6}"
shift || true
modes=("$@")
[[ ${#modes[@]} -gt 0 ]] || modes=(off adaptive all)
bin=build/release
tmp="$(mktemp -d)"
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
tck=$(getconf CLK_TCK)
# User + system CPU seconds of a running process.
cpu_of() { awk -v t="$tck" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"; }

worker_flags=(--threads 1)
[[ -n "${WORKER_HASH_MB:-}" ]] && worker_flags+=(--hash "$WORKER_HASH_MB")
coordinator_flags=()
[[ -n "${TRUST_AFTER:-}" ]] && coordinator_flags+=(--trust-after "$TRUST_AFTER")
[[ -n "${SPOT_CHECK_RATE:-}" ]] && coordinator_flags+=(--spot-check-rate "$SPOT_CHECK_RATE")

printf 'perft depth %s of the 960 start positions, 2 workers x 1 thread, %s cores\n' "$depth" "$(nproc)"
printf '%-9s %9s %12s %9s %12s %10s %s\n' mode wall_s worker_cpu_s vs_off coord_cpu_s units disagreements
off_cpu=""
for mode in "${modes[@]}"; do
  rm -f "$tmp/port" "$tmp/c.db"*
  "$bin/coordinator/c960-coordinator" --listen 127.0.0.1:0 --port-file "$tmp/port" --db "$tmp/c.db" \
    "${coordinator_flags[@]}" 2>"$tmp/c-$mode.log" &
  coordinator=$!
  pids+=("$coordinator")
  for _ in $(seq 200); do [[ -s "$tmp/port" ]] && break; sleep 0.05; done
  export C960_COORDINATOR="127.0.0.1:$(cat "$tmp/port")"
  workers=()
  for i in 1 2; do
    "$bin/worker/c960-worker" --coordinator "$C960_COORDINATOR" --name "w$i" "${worker_flags[@]}" \
      2>"$tmp/w$i-$mode.log" &
    workers+=($!)
    pids+=($!)
  done
  sleep 0.5  # workers registered: time the job, not process start-up
  w0=$(awk -v a="$(cpu_of "${workers[0]}")" -v b="$(cpu_of "${workers[1]}")" 'BEGIN { print a + b }')
  c0=$(cpu_of "$coordinator")
  t0=$(now)
  submitted="$("$bin/cli/c960" submit perft --depth "$depth" --sps 0-959 --verify "$mode" | tail -n 1)"
  job=$(awk '{print $NF}' <<<"$submitted")
  units=$(grep -oE '[0-9]+ units' <<<"$submitted" | cut -d' ' -f1 || true)
  "$bin/cli/c960" watch "$job" >/dev/null
  t1=$(now)
  w1=$(awk -v a="$(cpu_of "${workers[0]}")" -v b="$(cpu_of "${workers[1]}")" 'BEGIN { print a + b }')
  c1=$(cpu_of "$coordinator")
  "$bin/cli/c960" results "$job" --out "$tmp/$mode.csv" >/dev/null
  disagreements=$(grep -c 'workers disagree' "$tmp/c-$mode.log" || true)
  stop_all
  wcpu=$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')
  [[ "$mode" == off ]] && off_cpu="$wcpu"
  vs=$( [[ -n "$off_cpu" ]] && awk -v a="$off_cpu" -v b="$wcpu" 'BEGIN { printf "%+.1f%%", 100 * (b - a) / a }' || echo -)
  awk -v m="$mode" -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v cpu="$wcpu" -v vs="$vs" \
    -v c="$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" -v u="${units:--}" -v d="${disagreements:--}" \
    'BEGIN { printf "%-9s %9.2f %12.2f %9s %12.2f %10s %s\n", m, w, cpu, vs, c, u, d }'
done
# Every mode computed the same table.
first="$tmp/${modes[0]}.csv"
for mode in "${modes[@]}"; do
  cmp -s "$first" "$tmp/$mode.csv" || { echo "tables DIFFER: ${modes[0]} vs $mode"; exit 1; }
done
echo "tables identical across modes"
