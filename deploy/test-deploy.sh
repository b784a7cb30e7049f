#!/usr/bin/env bash
# The deploy tests (ctest label "deploy"; docs/deploy.md): cloud-init user-data, Kubernetes
# manifests, the Debian package installed into a fresh bookworm root, and a Docker Swarm stack
# that survives killed containers. Installs what they need (Docker, debootstrap, qemu-user,
# cloud-init, kubectl), takes minutes, and leaves nothing running. .ci/run calls it after
# deploy/test.sh (which builds build/release).
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh --deploy
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset deploy "$@"
