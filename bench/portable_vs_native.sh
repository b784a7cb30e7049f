#!/usr/bin/env bash
# Perft speed of the portable build (x86-64-v2, slider method chosen at run time) against the
# native one (-march=native), single-threaded, no hash.
#   bench/portable_vs_native.sh [REPS]             default 5 repetitions
#   DEPTH=7 SPS="518 601" PGO=1 bench/portable_vs_native.sh 7
# Builds the c960 tool twice, in build/bench-native and build/bench-portable (Release; PGO=1
# makes both profile-guided, trained like deploy/build.sh on perft_bench with both slider
# methods), then runs `c960 perft --sp N --depth D` for each start position, interleaving the
# variants (native, portable, portable with magic sliders forced) so that a change in the load
# of a shared machine hits them alike. Prints, per position and variant, the median user CPU
# time (what the process itself used: the figure to compare on a busy machine) and the median
# wall time, the ratio to native, and the load average before and after. A benchmark, not a
# test: it only checks that every run prints the same count.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-5}"
depth="${DEPTH:-7}"
read -r -a sps <<<"${SPS:-518 601}"
pgo="${PGO:-0}"

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
build() {  # build DIR NATIVE
  local dir="$1" native="$2" pgo_args=(-DC960_PGO_USE=)
  if [[ "$pgo" == 1 ]]; then
    local profiles="$PWD/$dir-profile"
    rm -rf "$profiles"
    cmake -S . -B "$dir-pgo-gen" -G Ninja -DCMAKE_BUILD_TYPE=Release -DC960_NATIVE="$native" \
      -DC960_PGO_GENERATE="$profiles" "${launcher[@]}" >/dev/null
    cmake --build "$dir-pgo-gen" --target perft_bench >/dev/null
    for method in auto magic; do
      C960_SLIDERS=$method "$dir-pgo-gen/bench/perft_bench" --benchmark_filter='Perft|Count' \
        --benchmark_min_time=0.2 >/dev/null 2>&1
    done
    pgo_args=(-DC960_PGO_USE="$profiles")
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DC960_NATIVE="$native" -DC960_PGO_GENERATE= \
    "${pgo_args[@]}" "${launcher[@]}" >/dev/null
  cmake --build "$dir" --target c960 >/dev/null
}
echo "building build/bench-native and build/bench-portable (PGO=$pgo) ..."
build build/bench-native ON
build build/bench-portable OFF

variants=(native portable portable-magic)
run_variant() {  # run_variant VARIANT SP -> "user wall nodes"
  local bin=build/bench-portable/cli/c960 env=(C960_SLIDERS=auto)
  case "$1" in
    native) bin=build/bench-native/cli/c960 ;;
    portable-magic) env=(C960_SLIDERS=magic) ;;
  esac
  local out times
  TIMEFORMAT='%U %R'
  times=$({ time env "${env[@]}" "$bin" perft --sp "$2" --depth "$depth" --threads 1 --hash 0 >"$tmp/out" 2>/dev/null; } 2>&1)
  out=$(awk '/Nodes searched/{print $3}' "$tmp/out")
  echo "$times $out"
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in "${variants[@]}"; do
  echo "$v: $(env C960_SLIDERS=$([[ $v == portable-magic ]] && echo magic || echo auto) \
    build/bench-${v%%-magic}/cli/c960 version | tr '\n' ' ')"
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for sp in "${sps[@]}"; do
  for ((r = 0; r < reps; ++r)); do
    for v in "${variants[@]}"; do
      read -r user wall nodes < <(run_variant "$v" "$sp")
      echo "$user $wall" >>"$tmp/$sp.$v"
      echo "$nodes" >>"$tmp/$sp.nodes"
    done
  done
  if (($(sort -u "$tmp/$sp.nodes" | wc -l) != 1)); then
    echo "COUNT MISMATCH at sp $sp: $(sort -u "$tmp/$sp.nodes" | tr '\n' ' ')" >&2
    exit 1
  fi
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "perft --depth $depth --threads 1 --hash 0, median of $reps interleaved runs"
printf "%-5s %-15s %12s %10s %12s %10s\n" sp variant user_s vs_native wall_s vs_native
for sp in "${sps[@]}"; do
  nu=$(cut -d' ' -f1 "$tmp/$sp.native" | median)
  nw=$(cut -d' ' -f2 "$tmp/$sp.native" | median)
  for v in "${variants[@]}"; do
    u=$(cut -d' ' -f1 "$tmp/$sp.$v" | median)
    w=$(cut -d' ' -f2 "$tmp/$sp.$v" | median)
    printf "%-5s %-15s %12.3f %+9.1f%% %12.3f %+9.1f%%\n" "$sp" "$v" "$u" \
      "$(awk "BEGIN {print 100 * ($u / $nu - 1)}")" "$w" "$(awk "BEGIN {print 100 * ($w / $nw - 1)}")"
  done
done
