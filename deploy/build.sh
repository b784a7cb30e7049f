#!/usr/bin/env bash
# Installs the dependencies and builds c960 with the given CMake preset (default: release).
# The release build is profile-guided: an instrumented core runs a short perft workload first
# (about a minute more; C960_PGO=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./deploy/install-deps.sh
pgo=()
if [[ "$preset" == release && "${C960_PGO:-1}" == 1 ]]; then
  profiles="$PWD/build/pgo-profile"
  rm -rf "$profiles"
  cmake --preset pgo-generate >/dev/null
  cmake --build --preset pgo-generate --target perft_bench
  ./build/pgo-generate/bench/perft_bench --benchmark_filter='Perft|Count' --benchmark_min_time=0.2 >/dev/null
  pgo=(-DC960_PGO_USE="$profiles")
else
  pgo=(-DC960_PGO_USE=)
fi
cmake --preset "$preset" "${pgo[@]}" >/dev/null
cmake --build --preset "$preset"
