#!/usr/bin/env bash
# Removes whatever a Docker deploy test left behind if it was killed before its own cleanup
# ran (a ctest timeout): the test stack with its secrets (and the files they were made from), a
# swarm it made, the images it made, the dockerd it started. Touches only what the tests recorded in build/deploy-tests.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if docker info >/dev/null 2>&1; then
  docker stack rm c960test >/dev/null 2>&1 || true
  for _ in $(seq 60); do
    [[ -z "$(docker ps -aq --filter label=com.docker.stack.namespace=c960test)" ]] && break
    sleep 1
  done
  for _ in $(seq 30); do
    [[ -z "$(docker network ls -q --filter label=com.docker.stack.namespace=c960test)" ]] && break
    sleep 1
  done
  docker volume ls -q --filter label=com.docker.stack.namespace=c960test | xargs -r docker volume rm -f >/dev/null 2>&1 || true
  docker secret ls -q --filter label=com.docker.stack.namespace=c960test 2>/dev/null | xargs -r docker secret rm >/dev/null 2>&1 || true
  if [[ -s "$C960_DEPLOY_STATE/swarm.made" ]]; then
    docker swarm leave --force >/dev/null 2>&1 || true
    docker network rm docker_gwbridge >/dev/null 2>&1 || true
  fi
  remove_made_images
fi
rm -f "$C960_DEPLOY_STATE/swarm.made"
rm -rf "$C960_DEPLOY_STATE/swarm-secrets"
stop_dockerd
echo "docker_cleanup: 1 passed, 0 failed"
