#!/usr/bin/env bash
# The main job, the README's run command: installs, builds, starts a coordinator and two workers
# on loopback, and computes perft of all 960 start positions at depth 5 through them into
# results/cluster/perft960_d5.csv. DEPTH, WORKERS, THREADS, DATA_DIR and FRESH are passed on to
# deploy/run-cluster.sh, which does the work.
set -euo pipefail
exec "$(dirname "$0")/run-cluster.sh" "$@"
