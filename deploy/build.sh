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
# A compiler cache kept between builds on this machine, outside the clone, so that a fresh clone
# (a CI run) or another preset compiles only what changed: ccache when it is installed, in
# CCACHE_DIR (default ~/.cache/c960-ccache). C960_CCACHE=0 builds without it.
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
if [[ "${C960_CCACHE:-1}" == 1 ]] && command -v ccache >/dev/null; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/c960-ccache}" CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
  # Paths under the clone hashed relative to it: clones at other paths share the cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}")
fi
pgo=()
if [[ ("$preset" == release || "$preset" == portable) && "${C960_PGO:-1}" == 1 ]]; then
  # The instrumented build is for the same CPU baseline as the build it trains; each has its own
  # folders, so that the release and portable builds never share (or rebuild) each other's.
  gen=build/pgo-generate profiles="$PWD/build/pgo-profile" native=ON
  if [[ "$preset" == portable ]]; then gen=build/pgo-generate-portable profiles="$PWD/build/pgo-profile-portable" native=OFF; fi
  rm -rf "$profiles"
  cmake --preset pgo-generate -B "$gen" -DC960_NATIVE="$native" -DC960_PGO_GENERATE="$profiles" "${launcher[@]}" >/dev/null
  cmake --build "$gen" --target perft_bench
  # The slider method is chosen at run time: train both instantiations (magic is what CPUs
  # without fast PEXT run).
  for sliders in auto magic; do
    C960_SLIDERS=$sliders "./$gen/bench/perft_bench" --benchmark_filter='Perft|Count' \
      --benchmark_min_time=0.2 >/dev/null
  done
  pgo=(-DC960_PGO_USE="$profiles")
else
  pgo=(-DC960_PGO_USE=)
fi
cmake --preset "$preset" "${pgo[@]}" "${launcher[@]}" >/dev/null
cmake --build --preset "$preset" "${targets[@]}"
