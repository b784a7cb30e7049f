#!/usr/bin/env bash
# Removes whatever a Docker deploy test left behind if it was killed before its own cleanup
# ran (a ctest timeout): the test stacks with their secrets (and the files they were made from), a
# swarm it made and the label it gave its node, the images it made, the dockerd it started. Touches only what the tests recorded in build/deploy-tests.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if docker info >/dev/null 2>&1; then
  remove_stacks
  if [[ -s "$C960_DEPLOY_STATE/node-label.made" ]]; then
    docker node update --label-rm c960-postgres "$(cat "$C960_DEPLOY_STATE/node-label.made")" >/dev/null 2>&1 || true
  fi
  if [[ -s "$C960_DEPLOY_STATE/swarm.made" ]]; then
    docker swarm leave --force >/dev/null 2>&1 || true
    docker network rm docker_gwbridge >/dev/null 2>&1 || true
  fi
  remove_made_images
fi
rm -f "$C960_DEPLOY_STATE/swarm.made" "$C960_DEPLOY_STATE/node-label.made"
rm -rf "$C960_DEPLOY_STATE/swarm-secrets"
stop_dockerd
echo "docker_cleanup: 1 passed, 0 failed"
