#!/usr/bin/env bash
# Start-up time of the c960 tool: wall time of one short command, run many times, each binary
# in turn (interleaved, so that a change of load touches all alike), with /bin/true beside them
# for the cost of starting any process:
#   bench/startup.sh [--runs N] [--args "WORDS"] BINARY...
# e.g. bench/startup.sh /tmp/main/build/release/cli/c960 build/release/cli/c960
# WORDS: the command's arguments (default "perft --depth 1 --sp 518 --quiet": start-up and a
# root of 20 moves); "status --help" measures a command that c960 hands to c960-cluster. Prints
# the minimum and median of N runs (default 100) in milliseconds, and the load average before
# and after. Each run starts the binary with posix_spawn and waits for it; its output goes to
# /dev/null.
set -euo pipefail
runs=100 words="perft --depth 1 --sp 518 --quiet"
binaries=()
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --args) words=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "startup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) binaries+=("$1"); shift ;;
  esac
done
((${#binaries[@]})) || { echo "startup.sh: give one binary or more (see --help)" >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "startup.sh: --runs: '$runs' is not a positive number" >&2; exit 2; }
for b in "${binaries[@]}"; do
  [[ -x "$b" ]] || { echo "startup.sh: $b: not an executable file" >&2; exit 2; }
  # A command that fails would be timed as fast as its error message: check it once.
  # shellcheck disable=SC2086
  "$b" $words >/dev/null || { echo "startup.sh: $b $words: exit status $?" >&2; exit 1; }
done
python3 - "$runs" "$words" /bin/true "${binaries[@]}" <<'PY'
import os, statistics, sys, time
runs, words, binaries = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
null = os.open(os.devnull, os.O_RDWR)
times = {b: [] for b in binaries}
print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
for _ in range(runs):
    for b in binaries:
        argv = [b] if b == "/bin/true" else [b] + words
        start = time.perf_counter_ns()
        pid = os.posix_spawn(b, argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
        _, status = os.waitpid(pid, 0)
        times[b].append((time.perf_counter_ns() - start) / 1e6)
        if status != 0:
            sys.exit(f"startup.sh: {' '.join(argv)}: wait status {status}")
print(f"load average after:  {' '.join(open('/proc/loadavg').read().split()[:3])}")
print(f"{runs} runs each of: BINARY {' '.join(words)}")
print(f"{'min ms':>8} {'median ms':>10}  binary")
for b in binaries:
    print(f"{min(times[b]):8.2f} {statistics.median(times[b]):10.2f}  {b}")
PY
