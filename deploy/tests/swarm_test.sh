#!/usr/bin/env bash
# Docker Swarm, end to end: starts dockerd if none runs, makes debian:bookworm-slim with
# debootstrap when no registry can be reached, builds the image from deploy/docker/Dockerfile,
# `docker swarm init`, deploys deploy/compose.yaml as a stack with 2 workers, submits perft
# depth 5 of all 960 start positions, kills a worker container and then the coordinator
# container while the job runs (Swarm restarts both), scales the workers to 4, and checks the
# finished table against tests/data/chess960_startpos_perft.csv. Tears down everything it made
# (stack, swarm, images, containers, the dockerd it started) on success and on failure.
# Prints the image's size and the time of each step.
#   deploy/tests/swarm_test.sh              C960_PGO=1 for a profile-guided image (slower build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || fail "needs root (dockerd)"
# The log stays in build/deploy-tests/swarm.log (image size, time of each step).
exec > >(tee "$C960_DEPLOY_STATE/swarm.log") 2>&1
stack=c960test
image=c960:swarm-test
client=c960test-client
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
  fi
  log "cleaning up"
  docker rm -f -v "$client" >/dev/null 2>&1
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
# Short leases, so the units of the killed worker come back within seconds. This machine's
# kernel has no IPVS, which the coordinator's virtual IP needs: DNS round robin instead.
endpoint=vip
[[ -e /proc/net/ip_vs ]] || endpoint=dnsrr
C960_IMAGE=$image C960_WORKERS=2 C960_WORKER_THREADS=1 C960_LEASE_SECONDS=5 C960_ENDPOINT_MODE=$endpoint \
  docker stack deploy -c "$ROOT/deploy/compose.yaml" "$stack" >/dev/null 2>"$C960_DEPLOY_STATE/stack.err" ||
  fail "docker stack deploy: $(cat "$C960_DEPLOY_STATE/stack.err")"
log "stack $stack deployed (coordinator endpoint mode $endpoint)"
# A client on the stack's network (attachable), for the c960 tool.
docker run -d --name "$client" --network "${stack}_c960" -e C960_COORDINATOR=coordinator:7960 "$image" \
  sleep infinity >/dev/null
c960() { docker exec "$client" c960 "$@"; }
# TODO(health service): wait for the coordinator's health instead (docker inspect
# .State.Health.Status of its container, or c960-healthcheck --addr coordinator:7960), once
# c960-coordinator serves grpc.health.v1 and compose.yaml keeps the image's HEALTHCHECK.
# (c960 status itself retries an unreachable coordinator for about half a minute.)
deadline=$((SECONDS + 180))
until c960 status >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "the coordinator does not answer"
  sleep 1
done
replicas() { docker service ls --filter "name=${stack}_$1" --format '{{.Replicas}}'; }
for _ in $(seq 60); do [[ "$(replicas worker)" == 2/2 ]] && break; sleep 1; done
[[ "$(replicas worker)" == 2/2 ]] || fail "workers: $(replicas worker)"

step "perft 5 of all 960 with 2 workers"
job=$(c960 submit perft --depth 5 --sps 0-959 --request-id "swarm-test-$$" | tail -n 1 | awk '{print $NF}')
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
victim=$(docker ps -q --filter "label=com.docker.swarm.service.name=${stack}_coordinator")
docker kill "$victim" >/dev/null
log "killed coordinator container ${victim:0:12} at $at units"
step "scale to 4 workers"
docker service scale -d "${stack}_worker=4" >/dev/null
for _ in $(seq 120); do [[ "$(replicas worker)" == 4/4 && "$(replicas coordinator)" == 1/1 ]] && break; sleep 1; done
[[ "$(replicas worker)" == 4/4 && "$(replicas coordinator)" == 1/1 ]] ||
  fail "after the kills and the scale-up: workers $(replicas worker), coordinator $(replicas coordinator)"
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
