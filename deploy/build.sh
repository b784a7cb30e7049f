#!/usr/bin/env bash
# Installs the dependencies and builds c960 with the given CMake preset (default: release),
# all targets or the ones named after the preset.
#   deploy/build.sh [PRESET [TARGET ...]]
# The release and portable builds are profile-guided: an instrumented core runs a short perft
# workload first, once with each slider method (about a minute more; C960_PGO=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
targets=()
for t in "$@"; do targets+=(--target "$t"); done
./deploy/install-deps.sh
pgo=()
if [[ ("$preset" == release || "$preset" == portable) && "${C960_PGO:-1}" == 1 ]]; then
  profiles="$PWD/build/pgo-profile"
  rm -rf "$profiles"
  # Instrumented for the same CPU baseline as the build it trains.
  native=ON
  if [[ "$preset" == portable ]]; then native=OFF; fi
  cmake --preset pgo-generate -DC960_NATIVE="$native" >/dev/null
  cmake --build --preset pgo-generate --target perft_bench
  # The slider method is chosen at run time: train both instantiations (magic is what CPUs
  # without fast PEXT run).
  for sliders in auto magic; do
    C960_SLIDERS=$sliders ./build/pgo-generate/bench/perft_bench --benchmark_filter='Perft|Count' \
      --benchmark_min_time=0.2 >/dev/null
  done
  pgo=(-DC960_PGO_USE="$profiles")
else
  pgo=(-DC960_PGO_USE=)
fi
cmake --preset "$preset" "${pgo[@]}" >/dev/null
cmake --build --preset "$preset" "${targets[@]}"
