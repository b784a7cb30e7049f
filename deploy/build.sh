#!/usr/bin/env bash
# Installs the dependencies and builds c960 with the given CMake preset (default: release).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./deploy/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
