#!/usr/bin/env bash
# Installs, builds (release) and runs the default test suite: everything but the tests
# labelled "slow". Pass --slow to run only those instead.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh release
if [[ "${1:-}" == "--slow" ]]; then
  ctest --preset slow
else
  ctest --preset release
fi
