#!/usr/bin/env bash
# Docker Swarm, end to end: starts dockerd if none runs, makes debian:bookworm-slim with
# debootstrap when no registry can be reached, builds the image of deploy/docker/Dockerfile's
# runtime stage with the package of deploy/package.sh (the ctest fixture deploy.build_package),
# `docker swarm init`, makes a CA, certificate and tokens with deploy/make-secrets.sh and deploys
# deploy/compose.yaml as a stack with them as Swarm secrets (TLS and tokens on) and 2 workers,
# waits for the coordinator container's health check, submits perft depth 5 of all 960 start
# positions (default verification: two workers compute each unit of a new worker), kills a
# worker container and then the coordinator container while the job runs (Swarm restarts both;
# the new coordinator must become healthy), scales the workers to 4, and checks the finished
# table against tests/data/chess960_startpos_perft.csv. Then (unless C960_SWARM_HA=0), in the same swarm, the stack of
# deploy/compose-ha.yaml (the database image built from deploy/docker/postgres meanwhile): two
# coordinators on PostgreSQL, one leading and one standing by, perft 5 of positions 0-299 with
# 2 workers given both coordinators; kills the leader's container mid-job and checks that the
# standby takes over, that the job finishes with the published counts, and that the restarted
# container stands by without being restarted again. Tears down everything it made (stacks with
# their secrets, swarm, node label, images, containers, the secrets' files, the dockerd it
# started) on success and on failure. Prints the image's size and the time of each step.
#   deploy/tests/swarm_test.sh              the image from build/package/c960_*_amd64.deb
#   C960_SWARM_IMAGE=source deploy/tests/swarm_test.sh    the whole Dockerfile, compiled inside
#                                           Docker (C960_PGO=1: profile-guided, slower still)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || fail "needs root (dockerd)"
# The log stays in build/deploy-tests/swarm.log (image size, time of each step).
exec > >(tee "$C960_DEPLOY_STATE/swarm.log") 2>&1
stack=c960test
image=c960:swarm-test
secrets="$C960_DEPLOY_STATE/swarm-secrets"
t_start=$(date +%s)
step() {  # step NAME: logs the time since the previous step
  local now
  now=$(date +%s)
  log "${prev_step:-start} took $((now - ${t_prev:-$t_start})) s; now: $1"
  prev_step="$1" t_prev=$now
}

cleanup() {
  local rc=$?
  set +e
  if [[ $rc != 0 ]] && docker info >/dev/null 2>&1; then
    echo "--- on failure: services, tasks and logs of stack $stack"
    docker service ls 2>&1
    docker stack ps --no-trunc "$stack" 2>&1 | head -30
    for svc in $(docker stack services --format '{{.Name}}' "$stack" 2>/dev/null | sort); do
      echo "--- $svc"
      docker service logs --tail "$([[ $svc == *_worker ]] && echo 10 || echo 30)" "$svc" 2>&1
    done
    for c in $(docker ps -aq --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null); do
      docker inspect -f '{{.Name}} health: {{if .State.Health}}{{.State.Health.Status}} {{range .State.Health.Log}}[{{.ExitCode}} {{.Output}}]{{end}}{{end}}' "$c" 2>&1
    done
  fi
  log "cleaning up"
  remove_stacks
  log "stacks removed"
  if [[ -s "$C960_DEPLOY_STATE/node-label.made" ]]; then
    docker node update --label-rm c960-postgres "$(cat "$C960_DEPLOY_STATE/node-label.made")" >/dev/null 2>&1
    rm -f "$C960_DEPLOY_STATE/node-label.made"
  fi
  [[ -z "${pg_build:-}" ]] || wait "$pg_build" 2>/dev/null
  rm -rf "$secrets"
  if [[ -s "$C960_DEPLOY_STATE/swarm.made" ]]; then
    docker swarm leave --force >/dev/null 2>&1
    docker network rm docker_gwbridge >/dev/null 2>&1  # made by swarm init
    rm -f "$C960_DEPLOY_STATE/swarm.made"
    log "left the swarm"
  fi
  remove_made_images
  log "images removed"
  stop_dockerd
  log "cleaned up"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # so that the cleanup runs when ctest or a person stops the test

start_dockerd
step "base image"
ensure_base_image

step "docker build"
# The image of deploy/docker/Dockerfile's runtime stage, with the package deploy.build_package
# made (deploy/package.sh, as the Dockerfile's build stage runs it): its COPY takes the package
# from a build context that holds only it. C960_SWARM_IMAGE=source builds the whole Dockerfile
# instead, compiling the project inside Docker (about 9 minutes on 2 cores, without ccache).
echo "$image" >>"$C960_DEPLOY_STATE/images.made"
context="$C960_DEPLOY_STATE/image-context"
rm -rf "$context" && mkdir -p "$context"
if [[ "${C960_SWARM_IMAGE:-package}" == source ]]; then
  revision=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || true)
  if [[ -n "$revision" && -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]]; then revision+=.dirty; fi
  build=(-f "$ROOT/deploy/docker/Dockerfile" --build-arg "C960_REVISION=$revision" --build-arg "C960_PGO=${C960_PGO:-0}"
    "$ROOT")
  want_version=""
else
  deb=$(ls "$ROOT"/build/package/c960_*_amd64.deb 2>/dev/null | head -n 1)
  [[ -s "$deb" ]] || fail "no package in build/package: run deploy/package.sh first (ctest: deploy.build_package)"
  cp "$deb" "$context/"
  # The last stage, from its FROM on; its one COPY --from=build takes the package from the context.
  awk '/^FROM / {stage = ""} {stage = stage $0 "\n"} END {printf "%s", stage}' "$ROOT/deploy/docker/Dockerfile" |
    sed 's|^COPY --from=build /out/ /tmp/c960/$|COPY c960_*_amd64.deb /tmp/c960/|' >"$context/Dockerfile"
  if ! grep -q '^COPY c960_\*_amd64.deb /tmp/c960/$' "$context/Dockerfile" || grep -q -- '--from=' "$context/Dockerfile"; then
    fail "deploy/docker/Dockerfile: its last stage does not take the package with 'COPY --from=build /out/ /tmp/c960/'"
  fi
  build=(-f "$context/Dockerfile" "$context")
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/c960 >"$C960_DEPLOY_STATE/package-c960"
  chmod +x "$C960_DEPLOY_STATE/package-c960"
  want_version=$("$C960_DEPLOY_STATE/package-c960" --version)
  rm -f "$C960_DEPLOY_STATE/package-c960"
  log "image from $(basename "$deb") ($want_version)"
fi
# The legacy builder: bookworm's dockerd has no BuildKit front end for this client.
DOCKER_BUILDKIT=0 docker build -q "${build[@]}" -t "$image" >"$C960_DEPLOY_STATE/docker-build.log" 2>&1 ||
  { tail -40 "$C960_DEPLOY_STATE/docker-build.log"; fail "docker build"; }
rm -rf "$context"
# The database image of the second stack (compose-ha.yaml), built meanwhile.
pg_image=c960-postgres:swarm-test
if [[ "${C960_SWARM_HA:-1}" == 1 ]]; then
  echo "$pg_image" >>"$C960_DEPLOY_STATE/images.made"
  DOCKER_BUILDKIT=0 docker build -q -t "$pg_image" "$ROOT/deploy/docker/postgres" >"$C960_DEPLOY_STATE/postgres-build.log" 2>&1 &
  pg_build=$!
fi
size=$(docker image inspect -f '{{.Size}}' "$image")
log "image $image: $((size / 1000000)) MB ($(docker image inspect -f '{{.Size}}' debian:bookworm-slim | awk '{printf "%d", $1 / 1e6}') MB of it the base)"
got_version="$(docker run --rm "$image" c960 --version)"
[[ -z "$want_version" || "$got_version" == "$want_version" ]] || fail "the image's c960 --version: $got_version, the package's: $want_version"
log "in the image: $got_version, $(docker run --rm "$image" id -un)"
[[ "$(docker run --rm "$image" id -u)" != 0 ]] || fail "the image runs as root"
docker run --rm "$image" sh -c 'command -v c960-coordinator c960-worker c960-healthcheck stockfish' >/dev/null ||
  fail "the image lacks a binary or Stockfish"

step "swarm init and stack deploy"
if [[ "$(docker info -f '{{.Swarm.LocalNodeState}}')" != active ]]; then
  docker swarm init --advertise-addr 127.0.0.1 >/dev/null 2>"$C960_DEPLOY_STATE/swarm.err" ||
    docker swarm init >/dev/null || fail "docker swarm init: $(cat "$C960_DEPLOY_STATE/swarm.err")"
  echo 1 >"$C960_DEPLOY_STATE/swarm.made"
fi
# TLS and tokens: the files become the stack's Swarm secrets (compose.yaml's secrets:). The
# certificate names "coordinator" (dialled by workers and the client) and 127.0.0.1 (by the
# health check); the defaults of make-secrets.sh.
rm -rf "$secrets"
c960_tool="$ROOT/build/release/cli/c960"
[[ -x "$c960_tool" ]] || c960_tool=""
# coordinator-a and coordinator-b are the second stack's coordinators; db.password its database's.
"$ROOT/deploy/make-secrets.sh" "$secrets" --hosts coordinator-a,coordinator-b ${c960_tool:+--c960 "$c960_tool"} >/dev/null
openssl rand -hex 24 >"$secrets/db.password"
# Short leases, so the units of the killed worker come back within seconds. This machine's
# kernel has no IPVS, which the coordinator's virtual IP needs: DNS round robin instead.
endpoint=vip
[[ -e /proc/net/ip_vs ]] || endpoint=dnsrr
C960_IMAGE=$image C960_SECRETS=$secrets C960_WORKERS=2 C960_WORKER_THREADS=1 C960_LEASE_SECONDS=5 \
  C960_ENDPOINT_MODE=$endpoint docker stack deploy -c "$ROOT/deploy/compose.yaml" "$stack" >/dev/null \
  2>"$C960_DEPLOY_STATE/stack.err" || fail "docker stack deploy: $(cat "$C960_DEPLOY_STATE/stack.err")"
log "stack $stack deployed (coordinator endpoint mode $endpoint), secrets: $(docker secret ls --filter "label=com.docker.stack.namespace=$stack" --format '{{.Name}}' | sort | tr '\n' ' ')"
container_of() { docker ps -q --filter "label=com.docker.swarm.service.name=${stack}_$1" | head -n 1; }
health_of() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$1" 2>/dev/null; }
# wait_healthy: waits for a running coordinator container whose health check passes; prints its id.
wait_healthy() {
  local c deadline=$((SECONDS + 180))
  while ((SECONDS < deadline)); do
    c=$(container_of coordinator)
    [[ -n "$c" && "$(health_of "$c")" == healthy ]] && { echo "$c"; return; }
    sleep 1
  done
  fail "no healthy coordinator container within 180 s (last: ${c:-none}, $(health_of "${c:-none}"))"
}
coordinator=$(wait_healthy)
log "coordinator container ${coordinator:0:12}: healthy (c960-healthcheck over TLS)"
# Read whole first: under pipefail, grep -q leaving at its first match can fail the pipeline
# (docker, still writing, gets SIGPIPE).
# The service's log may lag behind its container's health: read it again for a while.
for _ in $(seq 20); do
  coordinator_log=$(docker service logs "${stack}_coordinator" 2>&1)
  grep -q 'serving on port 7960 (TLS, 4 tokens)' <<<"$coordinator_log" && break
  sleep 0.5
done
grep -q 'serving on port 7960 (TLS, 4 tokens)' <<<"$coordinator_log" ||
  fail "the coordinator does not serve TLS with 4 tokens: $(tail -3 <<<"$coordinator_log")"
# The client service: the c960 tool with the CA (C960_TLS_CA) and the token of its secret.
c960() {
  local c
  c=$(container_of client)
  [[ -n "$c" ]] || { echo "no client container" >&2; return 1; }
  docker exec "$c" c960 "$@" --token-file /run/secrets/c960-client-token
}
for _ in $(seq 60); do [[ -n "$(container_of client)" ]] && break; sleep 1; done
# Without the CA the health check (and any client) cannot talk to it: TLS is on.
if docker exec -e C960_TLS_CA= "$(container_of client)" c960-healthcheck --addr coordinator:7960 --timeout 3 >/dev/null 2>&1; then
  fail "the coordinator answers a plaintext health check"
fi
replicas() { docker service ls --filter "name=${stack}_$1" --format '{{.Replicas}}'; }
for _ in $(seq 60); do [[ "$(replicas worker)" == 2/2 ]] && break; sleep 1; done
[[ "$(replicas worker)" == 2/2 ]] || fail "workers: $(replicas worker)"

step "perft 5 of all 960 with 2 workers"
job=$(c960 submit perft --depth 5 --sps 0-959 --verify hosts --request-id "swarm-test-$$" | tail -n 1 | awk '{print $NF}')
[[ "$job" =~ ^job- ]] || fail "submit: '$job'"
progress() {  # -> "DONE TOTAL STATE", or nothing while the coordinator is away
  c960 status "$job" 2>/dev/null |
    awk '/^job /{state=$3} match($0, /[0-9]+\/[0-9]+ units/){split(substr($0, RSTART, RLENGTH), a, "[/ ]"); d=a[1]; t=a[2]}
         END {if (state != "") print d, t, state}'
}
mid_job() {  # waits until some units are done and the job is still running; prints the progress
  local p deadline=$((SECONDS + 300))
  while ((SECONDS < deadline)); do
    p=$(progress)
    if [[ -n "$p" ]]; then
      read -r done total state <<<"$p"
      [[ "$state" == RUNNING ]] || fail "the job ended ($p) before the $1 could be killed"
      ((done > 0)) && { echo "$done/$total"; return; }
    fi
    sleep 0.2
  done
  fail "no progress on the job"
}
# Both at once: once the workers are trusted (after 10 confirmed results each) a unit is computed
# once, and the rest of the job takes seconds.
at=$(mid_job "worker and the coordinator")
victim=$(docker ps -q --filter "label=com.docker.swarm.service.name=${stack}_worker" | head -n 1)
docker kill "$victim" >/dev/null
log "killed worker container ${victim:0:12} at $at units"
victim=$(container_of coordinator)
docker kill "$victim" >/dev/null
log "killed coordinator container ${victim:0:12}"
step "scale to 4 workers"
docker service scale -d "${stack}_worker=4" >/dev/null
for _ in $(seq 120); do [[ "$(replicas worker)" == 4/4 && "$(replicas coordinator)" == 1/1 ]] && break; sleep 1; done
[[ "$(replicas worker)" == 4/4 && "$(replicas coordinator)" == 1/1 ]] ||
  fail "after the kills and the scale-up: workers $(replicas worker), coordinator $(replicas coordinator)"
coordinator=$(wait_healthy)
[[ "$coordinator" != "$victim"* ]] || fail "the healthy coordinator container is the killed one"
log "the replaced coordinator container ${coordinator:0:12} is healthy"
log "running: workers $(replicas worker), coordinator $(replicas coordinator); the job at $(progress)"

step "the job's end"
# wait_end: waits until the job has ended; fails unless it SUCCEEDED.
wait_end() {
  local state="" deadline=$((SECONDS + 900))
  while ((SECONDS < deadline)); do
    read -r _ _ state <<<"$(progress)" || true
    [[ "$state" == RUNNING || -z "$state" ]] || break
    sleep 1
  done
  [[ "$state" == SUCCEEDED ]] || fail "job $job: ${state:-no answer}"
}
# check_counts N: the job's depth-5 counts are the published ones, N rows.
check_counts() {
  local rows=0 sp depth nodes want csv="$C960_DEPLOY_STATE/$stack-d5.csv"
  c960 results "$job" --format csv >"$csv" || fail "results of $job"
  while IFS=, read -r sp _ depth nodes; do
    [[ "$sp" == sp ]] && continue
    want=$(awk -F, -v sp="$sp" '$1 == sp {print $8}' "$ROOT/tests/data/chess960_startpos_perft.csv")
    [[ "$depth" == 5 && "$nodes" == "$want" ]] || fail "sp $sp: depth $depth, $nodes nodes; the table says $want"
    rows=$((rows + 1))
  done <"$csv"
  ((rows == $1)) || fail "$rows rows, want $1"
  log "job $job: all $1 counts of depth 5 as published"
}
wait_end
# Swarm replaced both killed containers: each service has a task that did not end well.
for svc in worker coordinator; do
  n=$(docker service ps -q "${stack}_$svc" | wc -l)
  ((n > $([[ $svc == worker ]] && echo 4 || echo 1))) || fail "$svc: no replaced task in docker service ps ($n tasks)"
done
check_counts 960

# The second stack needs a coordinator whose standby lets a worker's enrolled credential through
# to its NOT_LEADER answer (ServerOptions::standby): without that, a worker that calls the standby
# first is refused UNAUTHENTICATED, stops, and enrolls again when restarted, until its join token
# is used up. C960_SWARM_HA=0 skips it.
if [[ "${C960_SWARM_HA:-1}" != 1 ]]; then
  log "second stack (compose-ha.yaml) skipped: C960_SWARM_HA=0"
  step "teardown"
  echo "swarm_test: 1 passed, 0 failed (total $(($(date +%s) - t_start)) s)"
  exit 0
fi
step "second stack: two coordinators on PostgreSQL"
# compose-ha.yaml in the same swarm: the first stack goes meanwhile (its workers drain as they stop).
docker stack rm "$stack" >/dev/null
wait "$pg_build" || { tail -20 "$C960_DEPLOY_STATE/postgres-build.log"; fail "docker build of deploy/docker/postgres"; }
pg_build=""
log "image $pg_image (deploy/docker/postgres): $(docker image inspect -f '{{.Size}}' "$pg_image" | awk '{printf "%d", $1 / 1e6}') MB"
stack=c960ha
node=$(docker info -f '{{.Swarm.NodeID}}')
if [[ -z "$(docker node inspect -f '{{index .Spec.Labels "c960-postgres"}}' "$node")" ]]; then
  docker node update --label-add c960-postgres=true "$node" >/dev/null
  echo "$node" >"$C960_DEPLOY_STATE/node-label.made"
fi
# A short leader lease: the standby's takeover is bounded by it when the lock holder vanishes.
# The workers start once a coordinator leads: a worker whose coordinators all refuse connections
# retries without pause and may not reach them for minutes (seen here; docs/deploy.md).
C960_IMAGE=$image C960_POSTGRES_IMAGE=$pg_image C960_SECRETS=$secrets C960_WORKERS=0 C960_WORKER_THREADS=1 \
  C960_LEASE_SECONDS=5 C960_LEADER_LEASE_SECONDS=4 C960_ENDPOINT_MODE=$endpoint \
  docker stack deploy -c "$ROOT/deploy/compose-ha.yaml" "$stack" >/dev/null 2>"$C960_DEPLOY_STATE/stack.err" ||
  fail "docker stack deploy of compose-ha.yaml: $(cat "$C960_DEPLOY_STATE/stack.err")"
# leads SERVICE: its container's health service says SERVING (a standby's says NOT_SERVING).
leads() {
  local c
  c=$(container_of "$1")
  [[ -n "$c" ]] && docker exec "$c" c960-healthcheck --addr 127.0.0.1:7960 --tls-ca /run/secrets/c960-ca.crt \
    --timeout 3 >/dev/null 2>&1
}
# wait_leader: waits until exactly one coordinator leads and the other's container is up and
# passes its health check (liveness) as a standby; prints the leader's service.
wait_leader() {
  local a b deadline=$((SECONDS + 180))
  while ((SECONDS < deadline)); do
    a=0 b=0
    leads coordinator-a && a=1
    leads coordinator-b && b=1
    if ((a + b == 1)); then
      local leader standby
      if ((a)); then leader="coordinator-a" standby="coordinator-b"; else leader="coordinator-b" standby="coordinator-a"; fi
      local c
      c=$(container_of $standby)
      [[ -n "$c" && "$(health_of "$c")" == healthy ]] && { echo $leader; return; }
    fi
    ((a + b == 2)) && fail "both coordinators lead"
    sleep 1
  done
  fail "no leader with a healthy standby within 180 s"
}
log "stack $stack deployed"
leader=$(wait_leader)
log "stack $stack: $leader leads, the other stands by (alive, NOT_SERVING)"
docker service scale -d "${stack}_worker=2" >/dev/null
for _ in $(seq 60); do [[ -n "$(container_of client)" && "$(replicas worker)" == 2/2 ]] && break; sleep 1; done
[[ "$(replicas worker)" == 2/2 ]] || fail "workers: $(replicas worker)"

step "perft 5 of 300 on PostgreSQL, the leader killed"
job=$(c960 submit perft --depth 5 --sps 0-299 --verify hosts --request-id "swarm-ha-test-$$" | tail -n 1 | awk '{print $NF}')
[[ "$job" =~ ^job- ]] || fail "submit: '$job'"
tasks_before=$(docker service ps -q "${stack}_$leader" | wc -l)  # with restarts while the database started
workers_before=$(docker service ps -q "${stack}_worker" | wc -l)
at=$(mid_job "leading coordinator")
victim=$(container_of "$leader")
docker kill "$victim" >/dev/null
log "killed the leader's container ${victim:0:12} ($leader) at $at units"
killed_at=$SECONDS
other="coordinator-a"
[[ $leader == coordinator-a ]] && other="coordinator-b"
until leads $other; do
  ((SECONDS - killed_at < 120)) || fail "$other did not take over within 120 s of the kill"
  sleep 0.5
done
log "$other leads $((SECONDS - killed_at)) s after the kill"
wait_end
# Swarm restarted the killed one, which now stands by: alive and healthy, not leading, and not
# restarted again (its liveness check passes while it stands by).
[[ "$(wait_leader)" == "$other" ]] || fail "after the kill, $other does not lead"
n=$(docker service ps -q "${stack}_$leader" | wc -l)
((n == tasks_before + 1)) || fail "$leader: $n tasks, want $((tasks_before + 1)) (one replacement for the killed one)"
check_counts 300
log "worker containers restarted during the takeover: $(($(docker service ps -q "${stack}_worker" | wc -l) - workers_before))"

step "teardown"
echo "swarm_test: 1 passed, 0 failed (total $(($(date +%s) - t_start)) s)"
