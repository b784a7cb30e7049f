#!/usr/bin/env bash
# Docker Swarm, end to end: starts dockerd if none runs, makes debian:bookworm-slim with
# debootstrap when no registry can be reached, builds the image from deploy/docker/Dockerfile,
# `docker swarm init`, makes a CA, certificate and tokens with deploy/make-secrets.sh and deploys
# deploy/compose.yaml as a stack with them as Swarm secrets (TLS and tokens on) and 2 workers,
# waits for the coordinator container's health check, submits perft depth 5 of all 960 start
# positions (default verification: two workers compute each unit of a new worker), kills a
# worker container and then the coordinator container while the job runs (Swarm restarts both;
# the new coordinator must become healthy), scales the workers to 4, and checks the finished
# table against tests/data/chess960_startpos_perft.csv. Tears down everything it made (stack
# with its secrets, swarm, images, containers, the secrets' files, the dockerd it started) on
# success and on failure. Prints the image's size and the time of each step.
#   deploy/tests/swarm_test.sh              C960_PGO=1 for a profile-guided image (slower build)
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
    echo "--- on failure: services, tasks and logs"
    docker service ls 2>&1
    docker service ps --no-trunc "${stack}_coordinator" "${stack}_worker" 2>&1 | head -30
    docker service logs --tail 30 "${stack}_coordinator" 2>&1
    docker service logs --tail 10 "${stack}_worker" 2>&1
    for c in $(docker ps -aq --filter "label=com.docker.swarm.service.name=${stack}_coordinator" 2>/dev/null); do
      docker inspect -f '{{.Name}} health: {{if .State.Health}}{{.State.Health.Status}} {{range .State.Health.Log}}[{{.ExitCode}} {{.Output}}]{{end}}{{end}}' "$c" 2>&1
    done
  fi
  log "cleaning up"
  docker stack rm "$stack" >/dev/null 2>&1
  # The stack's containers, networks and volume go asynchronously.
  for _ in $(seq 60); do
    [[ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null)" ]] && break
    sleep 1
  done
  for _ in $(seq 30); do
    [[ -z "$(docker network ls -q --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null)" ]] && break
    sleep 1
  done
  docker volume ls -q --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null | xargs -r docker volume rm -f >/dev/null 2>&1
  docker secret ls -q --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null | xargs -r docker secret rm >/dev/null 2>&1
  rm -rf "$secrets"
  if [[ -s "$C960_DEPLOY_STATE/swarm.made" ]]; then
    docker swarm leave --force >/dev/null 2>&1
    docker network rm docker_gwbridge >/dev/null 2>&1  # made by swarm init
    rm -f "$C960_DEPLOY_STATE/swarm.made"
  fi
  remove_made_images
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
revision=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || true)
if [[ -n "$revision" && -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]]; then revision+=.dirty; fi
# The legacy builder: bookworm's dockerd has no BuildKit front end for this client.
echo "$image" >>"$C960_DEPLOY_STATE/images.made"
DOCKER_BUILDKIT=0 docker build -q -f "$ROOT/deploy/docker/Dockerfile" --build-arg "C960_REVISION=$revision" \
  --build-arg "C960_PGO=${C960_PGO:-0}" -t "$image" "$ROOT" >"$C960_DEPLOY_STATE/docker-build.log" 2>&1 ||
  { tail -40 "$C960_DEPLOY_STATE/docker-build.log"; fail "docker build"; }
size=$(docker image inspect -f '{{.Size}}' "$image")
log "image $image: $((size / 1000000)) MB ($(docker image inspect -f '{{.Size}}' debian:bookworm-slim | awk '{printf "%d", $1 / 1e6}') MB of it the base)"
want_version="$(docker run --rm "$image" c960 --version)"
log "in the image: $want_version, $(docker run --rm "$image" id -un)"
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
"$ROOT/deploy/make-secrets.sh" "$secrets" ${c960_tool:+--c960 "$c960_tool"} >/dev/null
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
coordinator_log=$(docker service logs "${stack}_coordinator" 2>&1)
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
at=$(mid_job worker)
victim=$(docker ps -q --filter "label=com.docker.swarm.service.name=${stack}_worker" | head -n 1)
docker kill "$victim" >/dev/null
log "killed worker container ${victim:0:12} at $at units"
at=$(mid_job coordinator)
victim=$(container_of coordinator)
docker kill "$victim" >/dev/null
log "killed coordinator container ${victim:0:12} at $at units"
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
state=""
deadline=$((SECONDS + 900))
while ((SECONDS < deadline)); do
  read -r _ _ state <<<"$(progress)" || true
  [[ "$state" == RUNNING || -z "$state" ]] || break
  sleep 1
done
[[ "$state" == SUCCEEDED ]] || fail "job $job: $state"
# Swarm replaced both killed containers: each service has a task that did not end well.
for svc in worker coordinator; do
  n=$(docker service ps -q "${stack}_$svc" | wc -l)
  ((n > $([[ $svc == worker ]] && echo 4 || echo 1))) || fail "$svc: no replaced task in docker service ps ($n tasks)"
done
c960 results "$job" --format csv >"$C960_DEPLOY_STATE/swarm-d5.csv" || fail "results of $job"
rows=0
while IFS=, read -r sp _ depth nodes; do
  [[ "$sp" == sp ]] && continue
  want=$(awk -F, -v sp="$sp" '$1 == sp {print $8}' "$ROOT/tests/data/chess960_startpos_perft.csv")
  [[ "$depth" == 5 && "$nodes" == "$want" ]] || fail "sp $sp: depth $depth, $nodes nodes; the table says $want"
  rows=$((rows + 1))
done <"$C960_DEPLOY_STATE/swarm-d5.csv"
((rows == 960)) || fail "$rows rows, want 960"
log "job $job: all 960 counts of depth 5 as published"
step "teardown"
echo "swarm_test: 1 passed, 0 failed (total $(($(date +%s) - t_start)) s)"
