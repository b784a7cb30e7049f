#!/usr/bin/env bash
# A standby coordinator takes over, across machines simulated by network namespaces on one
# bridge: PostgreSQL on one host (a scratch cluster made with initdb, TLS, password auth for the
# test's subnet only), two coordinators on two others (--db postgresql://... with
# --db-password-file, --advertise their own address, a short --leader-lease-seconds), two
# workers given both coordinators' addresses, and the c960 tool on a sixth host, also with both.
# TLS and tokens on (deploy/make-secrets.sh), as the coordinators need beyond loopback.
#   1. perft 6 of all 960 start positions (default verification): the leader is SIGKILLed mid-job;
#      the standby takes over and the job ends with every count as published and every unit
#      counted once.
#   2. The killed coordinator, started again, is a standby. A self-play job (builtin engine at a
#      fixed node count and seed): the new leader's link is cut mid-job (its port on the switch
#      down); the old leader cannot renew its lease and exits (75), the standby leads, and the
#      results and games equal those of `c960 selfplay` with the same options, byte for byte.
# Prints the takeover times. Cleans up everything it made (processes, the database server and its
# files, namespaces with their veths and bridge) on success and on failure, and checks that none
# of its interfaces was left in the host's namespace.
#   deploy/tests/failover_test.sh BUILD_DIR
#   deploy/tests/failover_test.sh --cleanup     removes what a killed run left (ctest's fixture cleanup)
# C960_FAILOVER_SPS narrows scenario 1's start positions (default 0-959) for a quicker try.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || fail "needs root (network namespaces)"
pg_bin=${C960_PG_BIN:-/usr/lib/postgresql/15/bin}

# What runs of this test that died before their cleanup left (the pid in the name no longer
# runs): the database server (stopped), anything else running in their namespaces, the
# namespaces, their files.
remove_stale() {
  local dir
  for dir in "$C960_DEPLOY_STATE"/failover.*; do
    [[ -d "$dir" && "$dir" =~ failover\.([0-9]+)$ ]] || continue
    kill -0 "${BASH_REMATCH[1]}" 2>/dev/null && continue
    log "removing $dir, left by an earlier run"
    [[ -d "$dir/pg/data" ]] && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$dir/pg/data" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$dir"
  done
  netns_remove_stale c960f
}
if [[ "${1:-}" == --cleanup ]]; then
  remove_stale
  echo "failover_cleanup: 1 passed, 0 failed"
  exit 0
fi
build="$(cd "${1:?usage: failover_test.sh BUILD_DIR}" && pwd)"
for tool in ip openssl timeout runuser "$pg_bin/initdb" "$pg_bin/pg_ctl" "$pg_bin/psql"; do
  command -v "$tool" >/dev/null || fail "$tool not found (deploy/install-deps.sh installs postgresql-15)"
done
id postgres >/dev/null 2>&1 || fail "no postgres user (the postgresql-15 package makes it)"
t_start=$(date +%s)

# TEST-NET-1 (RFC 5737), on a bridge in a namespace of its own: nothing reaches the host's
# network (see netns_test.sh). .201 the database, .202 and .203 the coordinators, .204 and .205
# the workers, .206 the client.
net=192.0.2
db_ip=$net.201 c1_ip=$net.202 c2_ip=$net.203 client_ip=$net.206
leader_lease=3  # --leader-lease-seconds: the least but one (2..300), for a quick takeover
sps=${C960_FAILOVER_SPS:-0-959}
[[ "$sps" =~ ^[0-9]+(-[0-9]+)?$ ]] || fail "C960_FAILOVER_SPS: '$sps' is not N or N-M"

tag="c960f$$"
ns_sw="$tag-switch" ns_db="$tag-db" ns_c1="$tag-c1" ns_c2="$tag-c2" ns_w1="$tag-w1" ns_w2="$tag-w2" ns_cli="$tag-client"
hosts=("$ns_db" "$ns_c1" "$ns_c2" "$ns_w1" "$ns_w2" "$ns_cli")
all_ns=("${hosts[@]}" "$ns_sw")
# The pid in the name: a run never touches another's, and a stale one is recognised.
work="$C960_DEPLOY_STATE/failover.$$"
rm -rf "$work"
mkdir -p "$work"
chmod 755 "$work"
declare -A pid_of  # name -> pid of what runs in a namespace
host_links() { ip -o link show | awk '{print $2}' | sort; }
host_links >"$work/host.before"

cleanup() {
  local rc=$?
  set +e
  if [[ $rc != 0 ]]; then
    echo "--- on failure: the coordinators' logs (last 30 lines), the workers' (last 10), the database's (last 10)"
    tail -n 30 "$work"/c1*.log "$work"/c2*.log 2>/dev/null
    tail -n 10 "$work/w1.log" "$work/w2.log" "$work/pg/server.log" 2>/dev/null
  fi
  local name
  for name in "${!pid_of[@]}"; do kill -TERM "${pid_of[$name]}" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for name in "${!pid_of[@]}"; do kill -0 "${pid_of[$name]}" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for name in "${!pid_of[@]}"; do kill -KILL "${pid_of[$name]}" 2>/dev/null; wait "${pid_of[$name]}" 2>/dev/null; done
  [[ -d "$work/pg/data" ]] && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate -w stop >/dev/null 2>&1
  netns_remove "$tag" "${all_ns[@]}" || rc=1
  # Interfaces of this test's names that appeared in the host's namespace (others, such as
  # containers' veths, come and go with whatever else runs on the host).
  host_links >"$work/host.after"
  local added
  added=$(comm -13 "$work/host.before" "$work/host.after" | grep -E '^(eth0|br0|p[1-6])(@|:)')
  [[ -z "$added" ]] || { echo "FAIL: interfaces left in the host's namespace: $added" >&2; rc=1; }
  rm -rf "$work"
  log "cleaned up: processes, the database server and its files, namespaces, veths and bridge gone"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT

remove_stale

# The network: a switch namespace holding the bridge, one veth from each host to it (port pN
# on the switch for the host at .20N).
in_ns() { ip netns exec "$@"; }
netns_switch "$ns_sw" "$net" 201 p "${hosts[@]}"
log "six hosts on $net.0/24: database $db_ip, coordinators $c1_ip and $c2_ip, workers $net.204 and $net.205, client $client_ip"

# TLS and tokens; the certificate names both coordinators. The database's own certificate,
# signed by the same CA, names its address.
"$ROOT/deploy/make-secrets.sh" "$work/secrets" --hosts "$c1_ip,$c2_ip" --c960 "$build/cli/c960" >/dev/null
mkdir -p "$work/pg"
openssl req -new -newkey rsa:2048 -nodes -keyout "$work/pg/server.key" -subj "/CN=$db_ip" -out "$work/pg/server.csr" 2>/dev/null
openssl x509 -req -in "$work/pg/server.csr" -CA "$work/secrets/ca.crt" -CAkey "$work/secrets/ca.key" -CAcreateserial \
  -days 2 -extfile <(echo "subjectAltName=IP:$db_ip") -out "$work/pg/server.crt" 2>/dev/null ||
  fail "openssl: the database's certificate"
openssl rand -hex 16 >"$work/db.password"
chmod 600 "$work/db.password" "$work/pg/server.key"

# The database host: a scratch cluster owned by postgres, listening on its address only, with
# TLS required and a password (SCRAM) for the role c960 from the test's subnet; the superuser only
# on the local socket. The server's TCP keepalives are left as they are (two hours): the leader
# sets its own session's (Store::limit_silence), so that the server ends the session of a leader
# cut off, and releases its lock, within half the leader lease.
chown -R postgres: "$work/pg"
runuser -u postgres -- "$pg_bin/initdb" -D "$work/pg/data" -U postgres --auth-local=trust --auth-host=reject -E UTF8 \
  --no-locale --no-sync >"$work/pg/initdb.log" 2>&1 || { cat "$work/pg/initdb.log" >&2; fail "initdb"; }
cat >"$work/pg/data/pg_hba.conf" <<HBA
local all postgres trust
hostssl c960 c960 $net.0/24 scram-sha-256
HBA
cat >>"$work/pg/data/postgresql.conf" <<CONF
listen_addresses = '$db_ip'
port = 5432
unix_socket_directories = '$work/pg'
ssl = on
ssl_cert_file = '$work/pg/server.crt'
ssl_key_file = '$work/pg/server.key'
password_encryption = scram-sha-256
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
in_ns "$ns_db" runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w -t 60 start \
  >"$work/pg/start.log" 2>&1 || { cat "$work/pg/start.log" "$work/pg/server.log" >&2; fail "the database did not start"; }
psql_admin() { in_ns "$ns_db" runuser -u postgres -- "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$work/pg" -U postgres "$@"; }
psql_admin -d postgres -c "CREATE ROLE c960 LOGIN PASSWORD '$(cat "$work/db.password")'" -c "CREATE DATABASE c960 OWNER c960" ||
  fail "cannot make the role and database c960"
db_url="postgresql://c960@$db_ip:5432/c960?sslmode=verify-full&sslrootcert=$work/secrets/ca.crt&connect_timeout=5"
log "PostgreSQL on $db_ip:5432 (TLS, SCRAM from $net.0/24)"

bin_c="$build/coordinator/c960-coordinator" bin_w="$build/worker/c960-worker"
both="$c1_ip:7960,$c2_ip:7960"
# start_coordinator NAME NS IP: a coordinator on the database, its log in NAME.log.
start_coordinator() {
  # ip netns exec itself, not in_ns: $! is then the coordinator's pid (exec replaces ip).
  ip netns exec "$2" "$bin_c" --listen "$3:7960" --advertise "$3:7960" --db "$db_url" --db-password-file "$work/db.password" \
    --leader-lease-seconds "$leader_lease" \
    --tls-cert "$work/secrets/coordinator.crt" --tls-key "$work/secrets/coordinator.key" \
    --tokens "$work/secrets/tokens" --trust-roots operator >"$work/$1.log" 2>&1 &
  pid_of[$1]=$!
}
# health IP: the coordinator's health as the client host sees it (SERVING, NOT_SERVING or nothing).
health() {
  in_ns "$ns_cli" "$build/tools/healthcheck/c960-healthcheck" --addr "$1:7960" --timeout 1 \
    --tls-ca "$work/secrets/ca.crt" 2>/dev/null || true
}
# wait_health IP STATE SECONDS
wait_health() {
  local end=$((SECONDS + $3))
  while [[ "$(health "$1")" != "$2" ]]; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}
start_coordinator c1 "$ns_c1" "$c1_ip"
wait_health "$c1_ip" SERVING 30 || fail "coordinator 1 is not SERVING at $c1_ip:7960"
start_coordinator c2 "$ns_c2" "$c2_ip"
wait_health "$c2_ip" NOT_SERVING 30 || fail "coordinator 2 does not stand by at $c2_ip:7960"
log "coordinator 1 leads, coordinator 2 stands by"

for i in 1 2; do
  ns_w="$tag-w$i"
  mkdir -p "$work/w$i"
  ip netns exec "$ns_w" "$bin_w" --coordinator "$both" --tls-ca "$work/secrets/ca.crt" \
    --enroll-token-file "$work/secrets/enroll.token" --credential-file "$work/w$i/credential" \
    --threads 1 --hash 16 --name "w$i" >"$work/w$i.log" 2>&1 &
  pid_of[w$i]=$!
done

# The c960 tool on the client host, with both coordinators' addresses.
c960() {
  in_ns "$ns_cli" env C960_COORDINATOR="$both" C960_TLS_CA="$work/secrets/ca.crt" \
    C960_TOKEN="$(cat "$work/secrets/submit.token")" "$build/cli/c960" "$@"
}
progress() {  # JOB -> "DONE TOTAL STATE"
  c960 status "$1" 2>/dev/null |
    awk '/^job /{state=$3} match($0, /[0-9]+\/[0-9]+ units/){split(substr($0, RSTART, RLENGTH), a, "[/ ]"); d=a[1]; t=a[2]}
         END {if (state != "") print d, t, state}'
}
# job_total JOB: its units (asked until the status says, for 30 s at most).
job_total() {
  local n_done total state
  for _ in $(seq 150); do
    read -r n_done total state <<<"$(progress "$1")" || true
    [[ "${total:-}" =~ ^[0-9]+$ ]] && ((total > 0)) && { echo "$total"; return 0; }
    sleep 0.2
  done
  fail "job $1: no unit count in its status"
}
# wait_progress JOB UNITS SECONDS: until JOB has done at least UNITS units (fails if it ends first).
wait_progress() {
  local end=$((SECONDS + $3)) n_done total state
  while :; do
    read -r n_done total state <<<"$(progress "$1")" || true
    [[ "${state:-}" == RUNNING || -z "${state:-}" ]] || fail "job $1 ended ($state) before the failover"
    ((${n_done:-0} >= $2)) && return 0
    ((SECONDS < end)) || fail "job $1: ${n_done:-0} units done after $3 s, want $2"
    sleep 0.2
  done
}
# wait_end JOB SECONDS: until JOB has ended; it must have SUCCEEDED.
wait_end() {
  local end=$((SECONDS + $2)) n_done total state
  while :; do
    read -r n_done total state <<<"$(progress "$1")" || true
    [[ "${state:-}" == RUNNING || -z "${state:-}" ]] || break
    ((SECONDS < end)) || fail "job $1 still running after $2 s (${n_done:-?}/${total:-?} units)"
    sleep 0.5
  done
  [[ "$state" == SUCCEEDED ]] || fail "job $1: $state"
  ((n_done == total)) || fail "job $1: $n_done/$total units done"
}
# takeover NEW_IP JOB UNITS: after a failover, how long until NEW_IP serves (printed in ms, from
# the time in t_fail_ns), and until JOB has more than UNITS units done (the first accepted by the
# new leader).
takeover() {
  wait_health "$1" SERVING 60 || fail "the standby at $1 did not take over within 60 s"
  t_serve_ms=$((($(date +%s%N) - t_fail_ns) / 1000000))
  local end=$((SECONDS + 120)) n_done total state
  while :; do
    read -r n_done total state <<<"$(progress "$2")" || true
    [[ "${state:-}" == RUNNING ]] && ((${n_done:-0} > $3)) && break
    [[ "${state:-}" == "" || "${state:-}" == RUNNING ]] || break
    ((SECONDS < end)) || fail "job $2: no unit accepted by the new leader within 120 s"
    sleep 0.1
  done
  t_unit_ms=$((($(date +%s%N) - t_fail_ns) / 1000000))
}
ms() { printf '%d.%02d s' $(($1 / 1000)) $((($1 % 1000) / 10)); }

# --- Scenario 1: perft 6, the leader SIGKILLed mid-job.
job=$(c960 submit perft --depth 6 --sps "$sps" --request-id "failover-perft-$$" | tail -n 1 | awk '{print $NF}')
[[ "$job" =~ ^job- ]] || fail "submit: '$job'"
total=$(job_total "$job")
wait_progress "$job" $((total / 4)) 900
read -r before total _ <<<"$(progress "$job")"
t_fail_ns=$(date +%s%N)
kill -KILL "${pid_of[c1]}"
wait "${pid_of[c1]}" 2>/dev/null || true
unset 'pid_of[c1]'
log "job $job (perft 6 of $sps): $before/$total units done; coordinator 1 SIGKILLed"
takeover "$c2_ip" "$job" "$before"
grep -q 'took the leader lease' "$work/c2.log" || fail "coordinator 2 does not say it took the leader lease"
kill_serve_ms=$t_serve_ms kill_unit_ms=$t_unit_ms
log "takeover after SIGKILL: coordinator 2 SERVING $(ms "$kill_serve_ms") after the kill, a new unit done after $(ms "$kill_unit_ms")"
wait_end "$job" 1200
c960 results "$job" --format csv >"$work/perft.csv" || fail "results of $job"
# Every count as published, each position once (nothing counted twice: a unit counted again
# would add its nodes to its position's count).
awk -F, -v spec="$sps" '
  BEGIN { n = split(spec, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1] }
  FNR == 1 { next }
  FILENAME == ARGV[1] { if ($1 >= lo && $1 <= hi) want[$1] = $9; next }
  { if ($3 != 6 || !($1 in want) || $4 != want[$1] || seen[$1]++) { print "sp " $1 ": depth " $3 ", " $4 " nodes; the table says " want[$1]; bad++ }; rows++ }
  END { if (bad) exit 1; if (rows != hi - lo + 1) { print rows " rows, want " hi - lo + 1; exit 1 } }' \
  "$ROOT/tests/data/chess960_startpos_perft.csv" "$work/perft.csv" >"$work/perft.diff" ||
  fail "the table of $job differs from the published one: $(head -5 "$work/perft.diff")"
log "job $job SUCCEEDED on coordinator 2: $total/$total units, all $((${sps#*-} - ${sps%-*} + 1)) counts of depth 6 as published"

# --- Scenario 2: the killed coordinator comes back as a standby; the new leader's link is cut.
start_coordinator c1b "$ns_c1" "$c1_ip"
pid_of[c1]=${pid_of[c1b]}
unset 'pid_of[c1b]'
wait_health "$c1_ip" NOT_SERVING 30 || fail "coordinator 1, started again, does not stand by"
log "coordinator 1 started again: a standby"
selfplay_opts=(--sps 0-11 --games-per-position 4 --engine builtin --nodes 2000 --random-plies 2 --seed 960)
job=$(c960 submit selfplay "${selfplay_opts[@]}" --games-per-unit 2 --request-id "failover-selfplay-$$" | tail -n 1 | awk '{print $NF}')
[[ "$job" =~ ^job- ]] || fail "submit: '$job'"
total=$(job_total "$job")
wait_progress "$job" $((total / 4)) 300
read -r before total _ <<<"$(progress "$job")"
t_fail_ns=$(date +%s%N)
in_ns "$ns_sw" ip link set p3 down  # coordinator 2's port on the switch
log "job $job (self-play): $before/$total units done; coordinator 2's link cut"
takeover "$c1_ip" "$job" "$before"
cut_serve_ms=$t_serve_ms cut_unit_ms=$t_unit_ms
log "takeover after the cut: coordinator 1 SERVING $(ms "$cut_serve_ms") after the cut, a new unit done after $(ms "$cut_unit_ms")"
# The old leader cannot renew its lease (its database session is gone): it stops, exit 75.
end=$((SECONDS + 60))
while kill -0 "${pid_of[c2]}" 2>/dev/null && ((SECONDS < end)); do sleep 0.2; done
kill -0 "${pid_of[c2]}" 2>/dev/null && fail "coordinator 2, cut off, still runs $((SECONDS - end + 60)) s after its takeover"
rc=0
wait "${pid_of[c2]}" || rc=$?
unset 'pid_of[c2]'
((rc == 75)) || fail "coordinator 2 exited $rc, want 75 (deposed): $(tail -3 "$work/c2.log")"
deposed=$(grep -m 1 'no longer the leader' "$work/c2.log") || fail "coordinator 2 does not say it was deposed"
# When, by its log line's time stamp.
c2_exit_ms=$((($(date -d "${deposed%% *}" +%s%N) - t_fail_ns) / 1000000))
in_ns "$ns_sw" ip link set p3 up
wait_end "$job" 300
c960 results "$job" --out "$work/cluster.csv" --pgn "$work/cluster.pgn" >/dev/null || fail "results of $job"
in_ns "$ns_cli" "$build/cli/c960" selfplay "${selfplay_opts[@]}" --quiet --out "$work/local.csv" --pgn "$work/local.pgn" \
  >"$work/local.log" 2>&1 || fail "c960 selfplay: $(tail -3 "$work/local.log")"
cmp "$work/cluster.csv" "$work/local.csv" || fail "the job's results differ from c960 selfplay's: $(diff "$work/cluster.csv" "$work/local.csv" | head -5)"
cmp "$work/cluster.pgn" "$work/local.pgn" || fail "the job's games differ from c960 selfplay's"
games=$(grep -c '^\[Event ' "$work/local.pgn")
((games == 12 * 4)) || fail "$games games, want $((12 * 4))"
log "job $job SUCCEEDED on coordinator 1: $total/$total units; results and $games games equal to c960 selfplay's, byte for byte"

echo "takeover after SIGKILL of the leader: $(ms "$kill_serve_ms") until the standby served, $(ms "$kill_unit_ms") until a unit was done after it"
echo "takeover after the leader's link was cut: $(ms "$cut_serve_ms") until the standby served, $(ms "$cut_unit_ms") until a unit was done after it; the old leader was deposed (exit 75) $(ms "$c2_exit_ms") after the cut"
echo "failover_test: 1 passed, 0 failed ($(($(date +%s) - t_start)) s)"
