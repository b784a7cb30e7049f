#!/usr/bin/env bash
# Several machines, simulated: three "VMs" as network namespaces on one bridge, the coordinator
# in one and a worker in each of the others, each started with its systemd unit's own command
# line and environment file (deploy/systemd), TLS and tokens on (deploy/make-secrets.sh). A job
# (perft 5 of 300 start positions, default verification: every unit of a new worker is computed
# by the other one too) runs; one worker is cut off with iptables (its traffic dropped) for
# longer than a lease, until the coordinator has declared it lost, then the network heals; the
# job must succeed with every count as published. Cleans up everything it made (processes,
# iptables rules, namespaces with their veths and bridge) on success and on failure, and checks
# that the host's own interfaces and iptables rules are as before.
#   deploy/tests/netns_test.sh BUILD_DIR
#   deploy/tests/netns_test.sh --cleanup     removes what a killed run left (ctest's fixture cleanup)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || fail "needs root (network namespaces, iptables)"

# Namespaces of runs that died before their cleanup (the pid in the name no longer runs), with
# anything still running in them.
remove_stale() { netns_remove_stale c960t; }
if [[ "${1:-}" == --cleanup ]]; then
  remove_stale
  echo "netns_cleanup: 1 passed, 0 failed"
  exit 0
fi
build="$(cd "${1:?usage: netns_test.sh BUILD_DIR}" && pwd)"
for tool in ip iptables iptables-save openssl timeout; do command -v "$tool" >/dev/null || fail "$tool not found"; done
t_start=$(date +%s)

# The documentation range TEST-NET-1, 192.0.2.0/24 (RFC 5737), never a real network. The
# namespaces have their own routing tables and a bridge of their own, so they never reach the
# host's network even where the host itself has an address in this range (this project's
# machines do, on eth0: .2, with .1 as gateway); the VMs take .201 to .203, which nothing else
# uses, so that no message could mistake one of them for the host.
net=192.0.2
first_host=201
coord_ip=$net.$first_host
lease=3  # seconds: short, so that the partition outlasts a lease within seconds
sps=0-299

# Names carry this test's pid: a run never touches another's, and a stale one is recognised.
tag="c960t$$"
ns_sw="$tag-switch" ns_coord="$tag-coord" ns_w1="$tag-vm2" ns_w2="$tag-vm3"
all_ns=("$ns_coord" "$ns_w1" "$ns_w2" "$ns_sw")
work=$(mktemp -d "$C960_DEPLOY_STATE/netns.XXXXXX")
rules=()  # "NS RULE..." of every iptables rule added, to delete on the way out
pids=()

host_state() {  # the host's interfaces and iptables rules (without counters), to compare
  ip -o link show | awk '{print $2}' | sort
  # No rules at all (no Docker has run here) is an empty save: grep's exit 1 is no failure.
  iptables-save | { grep -v '^#' || true; } | sed 's/\[[0-9]*:[0-9]*\]//'
}
host_state >"$work/host.before"

cleanup() {
  local rc=$?
  set +e
  if [[ $rc != 0 ]]; then
    echo "--- on failure: the coordinator's log (last 40 lines) and the workers' (last 15)"
    tail -n 40 "$work/coordinator.log" 2>/dev/null
    tail -n 15 "$work/vm2.log" "$work/vm3.log" 2>/dev/null
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  local r
  for r in "${rules[@]}"; do
    # shellcheck disable=SC2086 # "NS rule words"
    set -- $r
    ip netns exec "$1" iptables -D "${@:2}" 2>/dev/null
  done
  netns_remove "$tag" "${all_ns[@]}" || rc=1
  host_state >"$work/host.after"
  if ! diff "$work/host.before" "$work/host.after" >"$work/host.diff"; then
    echo "FAIL: the host's interfaces or iptables rules changed:" >&2
    cat "$work/host.diff" >&2
    rc=1
  fi
  rm -rf "$work"
  log "cleaned up: processes, iptables rules, namespaces, veths and bridge gone; host unchanged"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT

remove_stale

# The network: a switch namespace holding the bridge, and one veth from each VM to it
# (netns_switch, lib.sh: nothing of it lives in the host's namespace).
in_ns() { ip netns exec "$@"; }
netns_switch "$ns_sw" "$net" "$first_host" vm "$ns_coord" "$ns_w1" "$ns_w2"
log "three VMs on $net.0/24: coordinator $coord_ip, workers $net.$((first_host + 1)) and $net.$((first_host + 2))"

# TLS and tokens: the coordinator's certificate names the address the workers dial.
"$ROOT/deploy/make-secrets.sh" "$work/secrets" --hosts "$coord_ip,127.0.0.1" --c960 "$build/cli/c960" >/dev/null

# Each VM: the units as installed, /etc/c960 with its files, the environment file edited as an
# administrator would (TLS and tokens on as its comment says; a short lease; the coordinator's
# address; a name per worker).
mkdir -p "$work/bin"
ln -s "$build/coordinator/c960-coordinator" "$build/worker/c960-worker" "$work/bin/"
start_vm() {  # start_vm NS NAME UNIT SED-EXPRESSION...: runs UNIT's command line in NS
  local ns="$1" name="$2" unit="$3" vm="$work/$2"
  shift 3
  render_units "$vm" "$work/bin"
  install_secrets "$work/secrets" "$vm/etc"
  secure_env "$vm/default/$unit" "$vm/etc" "$vm/state"
  local e
  for e in "$@"; do sed -i "$e" "$vm/default/$unit"; done
  mkdir -p "$vm/state/$unit"
  local cmd
  mapfile -t cmd < <(unit_command "$vm/units/$unit.service" "$vm/default/$unit" "$vm/state")
  echo "${cmd[*]}" >"$vm/command"
  in_ns "$ns" "${cmd[@]}" >"$work/$name.log" 2>&1 &
  pids+=($!)
}
start_vm "$ns_coord" coordinator c960-coordinator "s|^C960_COORDINATOR_FLAGS=.*|C960_COORDINATOR_FLAGS=--lease-seconds $lease|"
log "coordinator: $(cat "$work/coordinator/command")"
# reach NS: a TCP connection from NS to the coordinator's port opens (within 2 s).
reach() { in_ns "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$coord_ip/7960" 2>/dev/null; }
# Its health, asked from another VM over TLS (the health service needs no token).
health() { in_ns "$ns_w1" "$build/tools/healthcheck/c960-healthcheck" --addr "$coord_ip:7960" --timeout 2 "$@"; }
for _ in $(seq 100); do health --tls-ca "$work/secrets/ca.crt" >/dev/null 2>&1 && break; sleep 0.2; done
health --tls-ca "$work/secrets/ca.crt" >/dev/null || fail "the coordinator is not SERVING at $coord_ip:7960"
grep -q 'serving on port 7960 (TLS, 4 tokens)' "$work/coordinator.log" || fail "not TLS with tokens: $(head -3 "$work/coordinator.log")"
health >/dev/null 2>&1 && fail "the coordinator answers a plaintext client"
reach "$ns_w2" || fail "vm3 does not reach the coordinator over the bridge"
log "coordinator SERVING over TLS with 4 tokens, asked from vm2; a plaintext client is refused"

for i in 2 3; do
  ns=$([[ $i == 2 ]] && echo "$ns_w1" || echo "$ns_w2")
  start_vm "$ns" "vm$i" c960-worker "s|^C960_COORDINATOR=.*|C960_COORDINATOR=$coord_ip:7960|" \
    "s|^C960_THREADS=.*|C960_THREADS=1|" "s|^C960_WORKER_FLAGS=.*|C960_WORKER_FLAGS=--name vm$i --hash 16|"
done
log "workers: $(cat "$work/vm2/command")"

# The c960 tool on the coordinator's VM, dialling its address like any other client.
c960() {
  in_ns "$ns_coord" env C960_COORDINATOR="$coord_ip:7960" C960_TLS_CA="$work/secrets/ca.crt" \
    C960_TOKEN="$(cat "$work/secrets/${token:-submit}.token")" "$build/cli/c960" "$@"
}
# The workers' join token may not read jobs: the roles hold across machines.
rc=0
token=enroll c960 status >/dev/null 2>&1 || rc=$?
((rc == 2)) || fail "c960 status with the join token: exit $rc, want 2 (PERMISSION_DENIED)"
# Each worker traded the join token for a credential of its own: two voters.
for i in 2 3; do
  for _ in $(seq 100); do grep -Eq "worker workers:[0-9]+/vm$i joined" "$work/coordinator.log" && break; sleep 0.1; done
  grep -Eq "worker workers:[0-9]+/vm$i joined" "$work/coordinator.log" || fail "vm$i did not join with a credential of its own"
  [[ -s "$work/vm$i/state/c960-worker/credential" ]] || fail "vm$i kept no credential"
done

job=$(c960 submit perft --depth 5 --sps "$sps" --verify hosts --request-id "netns-test-$$" | tail -n 1 | awk '{print $NF}')
[[ "$job" =~ ^job- ]] || fail "submit: '$job'"
progress() {  # -> "DONE TOTAL STATE"
  c960 status "$job" 2>/dev/null |
    awk '/^job /{state=$3} match($0, /[0-9]+\/[0-9]+ units/){split(substr($0, RSTART, RLENGTH), a, "[/ ]"); d=a[1]; t=a[2]}
         END {if (state != "") print d, t, state}'
}
deadline=$((SECONDS + 120))
while :; do
  read -r n_done total state <<<"$(progress)" || true
  [[ "${state:-}" == RUNNING || -z "${state:-}" ]] || fail "job $job ended ($state) before the partition"
  ((${n_done:-0} > 0)) && break
  ((SECONDS < deadline)) || fail "no progress on job $job"
  sleep 0.1
done
log "job $job ($sps, depth 5): $n_done/$total units done; cutting vm3 off"

# The partition: vm3 drops every packet to and from the coordinator.
t_cut=$SECONDS
for chain in "INPUT -s $coord_ip -j DROP" "OUTPUT -d $coord_ip -j DROP"; do
  # shellcheck disable=SC2086
  in_ns "$ns_w2" iptables -I $chain
  rules+=("$ns_w2 $chain")
done
reach "$ns_w2" && fail "vm3 still reaches the coordinator through the partition"
for _ in $(seq 300); do grep -q 'worker workers:[0-9]*/vm3 lost' "$work/coordinator.log" && break; sleep 0.1; done
grep -q 'worker workers:[0-9]*/vm3 lost' "$work/coordinator.log" || fail "the coordinator did not notice vm3's silence"
sleep "$lease"  # one more lease: whatever vm3 held has expired and gone back to the queue
read -r n_done total state <<<"$(progress)"
log "vm3 cut off for $((SECONDS - t_cut)) s (lease $lease s): $(grep -o 'worker workers:[0-9]*/vm3 lost.*' "$work/coordinator.log" | head -n 1); job at $n_done/$total, $state"
# Units want a second worker's copy (--verify hosts: the workers share one owner, the join
# token's, and are checked against each other as machines); those vm2 computed can
# only be settled by vm3: the job waits for it.
[[ "$state" == RUNNING ]] || fail "the job ended ($state) while vm3 was cut off"

for r in "${rules[@]}"; do
  # shellcheck disable=SC2086
  set -- $r
  in_ns "$1" iptables -D "${@:2}"
done
rules=()
reach "$ns_w2" || fail "vm3 does not reach the coordinator after the partition healed"
log "healed"

deadline=$((SECONDS + 180))
while :; do
  read -r n_done total state <<<"$(progress)" || true
  [[ "${state:-}" == RUNNING || -z "${state:-}" ]] || break
  ((SECONDS < deadline)) || fail "job $job still running after 180 s ($n_done/$total)"
  sleep 0.2
done
[[ "$state" == SUCCEEDED ]] || fail "job $job: $state"
for _ in $(seq 100); do grep -q 'worker workers:[0-9]*/vm3 is back' "$work/coordinator.log" && break; sleep 0.1; done
grep -q 'worker workers:[0-9]*/vm3 is back' "$work/coordinator.log" || fail "vm3 did not come back to the coordinator"

c960 results "$job" --format csv >"$work/d5.csv" || fail "results of $job"
rows=0
while IFS=, read -r sp _ depth nodes; do
  [[ "$sp" == sp ]] && continue
  want=$(awk -F, -v sp="$sp" '$1 == sp {print $8}' "$ROOT/tests/data/chess960_startpos_perft.csv")
  [[ "$depth" == 5 && "$nodes" == "$want" ]] || fail "sp $sp: depth $depth, $nodes nodes; the table says $want"
  rows=$((rows + 1))
done <"$work/d5.csv"
((rows == 300)) || fail "$rows rows, want 300"
log "job $job SUCCEEDED: all $rows counts of depth 5 as published; vm3 came back after the partition"
echo "netns_test: 1 passed, 0 failed ($(($(date +%s) - t_start)) s)"
