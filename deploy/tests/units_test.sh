#!/usr/bin/env bash
# The systemd units (deploy/systemd): `systemd-analyze verify` finds nothing to say; the worker's
# stop timeout is longer than its drain grace; every flag the units and their environment files
# pass, or offer in a comment (TLS and tokens), exists in the binary's --help; as shipped, the
# coordinator refuses to serve 0.0.0.0 without TLS and tokens; and with them switched on as the
# environment files' comments say (files from deploy/make-secrets.sh), the units' own command
# lines start a coordinator and a worker that do a small perft job over TLS with tokens and stop
# cleanly on SIGTERM (on a loopback port instead of 0.0.0.0:7960).
#   deploy/tests/units_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
build="$(cd "${1:?usage: units_test.sh BUILD_DIR}" && pwd)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (deploy/install-deps.sh installs systemd)"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The units as `cmake --install` writes them, pointing at the built binaries.
mkdir -p "$work/bin" "$work/state"
ln -s "$build/coordinator/c960-coordinator" "$build/worker/c960-worker" "$build/cli/c960" "$work/bin/"
render_units "$work" "$work/bin"
for unit in c960-coordinator c960-worker; do
  # verify exits 0 on unknown keys and bad values, but says so: any output fails the test.
  out=$(systemd-analyze verify --man=no "$work/units/$unit.service" 2>&1) || fail "systemd-analyze verify $unit.service: $out"
  [[ -z "$out" ]] || fail "systemd-analyze verify $unit.service: $out"
  log "systemd-analyze verify $unit.service: clean"
done

value() { unit_value "$@"; }
seconds() {  # "90s" / "90" / "1min 30s" -> 90
  local v="$1" total=0
  [[ "$v" =~ ^[0-9]+$ ]] && { echo "$v"; return; }
  while [[ "$v" =~ ^[[:space:]]*([0-9]+)(min|s)(.*)$ ]]; do
    if [[ "${BASH_REMATCH[2]}" == min ]]; then total=$((total + 60 * BASH_REMATCH[1])); else total=$((total + BASH_REMATCH[1])); fi
    v="${BASH_REMATCH[3]}"
  done
  [[ -z "${v// /}" ]] || fail "cannot read '$1' as seconds"
  echo "$total"
}
grace=$(value "$work/default/c960-worker" C960_GRACE_SECONDS)
stop=$(seconds "$(value "$work/units/c960-worker.service" TimeoutStopSec)")
[[ "$grace" =~ ^[0-9]+$ ]] || fail "c960-worker.env: C960_GRACE_SECONDS='$grace' is not a number"
((stop >= grace + 15)) || fail "c960-worker.service: TimeoutStopSec ${stop}s is not well above the drain grace ${grace}s"
log "worker: drain grace ${grace}s, TimeoutStopSec ${stop}s"

# flags BINARY: the long options its --help (and absl's --helpfull) lists, dashes for underscores.
flags() {
  { "$1" --help 2>&1 || true; "$1" --helpfull 2>&1 || true; } | grep -oE -- '--[a-z][a-z0-9_-]*' | tr _ - | sort -u
}
command_of() { unit_command "$work/units/$1.service" "$work/default/$1" "$work/state"; }
for unit in c960-coordinator c960-worker; do
  known=$(flags "$build/${unit#c960-}/$unit")
  for f in $(command_of "$unit" | grep -E '^--' | sed 's/=.*//'); do
    grep -qx -- "$f" <<<"$known" || fail "$unit.service passes $f, which '$unit --help' does not list"
  done
  # Flags that the environment file's comments offer (TLS and tokens, mTLS).
  for f in $(grep -E '^#' "$work/default/$unit" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    grep -qx -- "$f" <<<"$known" || fail "$unit's environment file offers $f, which '$unit --help' does not list"
  done
  log "$unit.service: every flag it passes or offers exists"
done

# As shipped: 0.0.0.0:7960 without TLS and tokens, which the coordinator refuses (it exits before
# it opens its database or a socket).
mapfile -t coord < <(command_of c960-coordinator)
[[ " ${coord[*]} " == *" 0.0.0.0:7960 "* ]] || fail "c960-coordinator.service does not listen on 0.0.0.0:7960: ${coord[*]}"
rc=0
"${coord[@]}" 2>"$work/refused.log" || rc=$?
if ((rc != 2)) || ! grep -q 'needs TLS' "$work/refused.log"; then
  fail "as shipped, the coordinator should refuse 0.0.0.0 without TLS (exit 2), got exit $rc: $(cat "$work/refused.log")"
fi
[[ ! -e "$work/state/c960-coordinator/coordinator.db" ]] || fail "the refused coordinator made its database"
grep -q '^RestartPreventExitStatus=2$' "$work/units/c960-coordinator.service" ||
  fail "c960-coordinator.service restarts after exit 2 (a refusal that a restart cannot cure)"
log "as shipped, the coordinator refuses 0.0.0.0:7960 without TLS and tokens: $(cat "$work/refused.log")"

# TLS and tokens on, as the environment files' comments say, with deploy/make-secrets.sh's files.
"$ROOT/deploy/make-secrets.sh" "$work/secrets" --c960 "$build/cli/c960" >/dev/null
install_secrets "$work/secrets" "$work/etc"
secure_env "$work/default/c960-coordinator" "$work/etc"
secure_env "$work/default/c960-worker" "$work/etc" "$work/state"
mkdir -p "$work/state/c960-worker"

# The units' command lines, run: coordinator on an ephemeral loopback port, one worker.
mkdir -p "$work/state/c960-coordinator"
mapfile -t coord < <(command_of c960-coordinator)
for i in "${!coord[@]}"; do [[ "${coord[$i]}" == 0.0.0.0:7960 ]] && coord[$i]=127.0.0.1:0; done
"${coord[@]}" --port-file "$work/port" 2>"$work/coordinator.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || fail "the coordinator did not start: $(cat "$work/coordinator.log")"
addr="127.0.0.1:$(cat "$work/port")"
sed -i -e "s|^C960_COORDINATOR=.*|C960_COORDINATOR=$addr|" -e "s|^C960_THREADS=.*|C960_THREADS=1|" "$work/default/c960-worker"
mapfile -t worker < <(command_of c960-worker)
"${worker[@]}" 2>"$work/worker.log" &
pids+=($!)
export C960_COORDINATOR="$addr"
export C960_TLS_CA="$work/secrets/ca.crt"
export C960_TOKEN; C960_TOKEN=$(cat "$work/secrets/submit.token")
job=$("$work/bin/c960" submit perft --verify off --depth 3 --sps 0-9 | tail -n 1 | awk '{print $NF}')
timeout 60 "$work/bin/c960" watch "$job" >/dev/null || fail "job $job did not finish: $(cat "$work/worker.log")"
"$work/bin/c960" results "$job" --format csv --out "$work/d3.csv" >/dev/null
while IFS=, read -r sp _ _ nodes; do
  [[ "$sp" == sp ]] && continue
  want=$(awk -F, -v sp="$sp" '$1 == sp {print $6}' "$ROOT/tests/data/chess960_startpos_perft.csv")
  [[ "$nodes" == "$want" ]] || fail "sp $sp: perft 3 is $nodes, the table says $want"
done <"$work/d3.csv"
[[ -s "$work/state/c960-coordinator/coordinator.db" ]] || fail "no database in the unit's state directory"
grep -q 'serving on port [0-9]* (TLS, 4 tokens)' "$work/coordinator.log" ||
  fail "the coordinator does not serve TLS with the 4 tokens: $(head -3 "$work/coordinator.log")"
grep -q "worker 'c960-.*' enrolled with join token 'workers' as workers:1" "$work/coordinator.log" ||
  grep -q 'worker workers:1/.* joined' "$work/coordinator.log" || fail "the worker did not enroll with the join token"
grep -q 'worker workers:1/.* joined' "$work/coordinator.log" || fail "the worker did not join with its own credential"
[[ -s "$work/state/c960-worker/credential" ]] || fail "the worker kept no credential in its state directory"
log "the units' command lines, TLS and tokens on, ran job $job: 10 positions, counts as published"
# SIGTERM, as systemctl stop sends: both exit 0 within the units' TimeoutStopSec.
for i in 1 0; do
  kill -TERM "${pids[$i]}"
  limit=$(seconds "$(value "$work/units/$([[ $i == 1 ]] && echo c960-worker || echo c960-coordinator).service" TimeoutStopSec)")
  for _ in $(seq $((limit * 10))); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
  kill -0 "${pids[$i]}" 2>/dev/null && fail "pid ${pids[$i]} still runs ${limit}s after SIGTERM"
  wait "${pids[$i]}" || fail "exit status $? after SIGTERM (pid ${pids[$i]})"
done
pids=()
log "both stopped cleanly on SIGTERM"
echo "units_test: 1 passed, 0 failed"
