#!/usr/bin/env bash
# Instructions a leaf of the perft move generator, before and after, under callgrind:
#   bench/leaf_instructions.sh [--base COMMIT] [--arch ARCH] [--no-pgo]
# Builds bench/perft_hash_bench (this tree's driver) against the core of COMMIT (default: the
# merge base with main) and against this worktree's, each in its own tree under
# build/leaf-instructions/, for -march=ARCH (default x86-64-v2, the portable build; valgrind 3.19
# cannot run the native build's AVX-512), profile-guided as deploy/build.sh builds the portable
# release (an instrumented perft_bench trained with both slider methods) unless --no-pgo. Then
# counts, for each: perft 6 of 518 (RNBQKBNR) and perft 5 of kiwipete, one thread, no table, each
# minus the same at depth 1 (start-up and the root), over the leaves. Counts are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
base="" arch=x86-64-v2 pgo=1
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --no-pgo) pgo=0; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "leaf_instructions.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "leaf_instructions.sh: needs valgrind" >&2; exit 2; }
base="${base:-$(git merge-base HEAD main)}"
base=$(git rev-parse --verify "$base^{commit}") || { echo "leaf_instructions.sh: --base: not a commit" >&2; exit 2; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
build() {  # build SRC: SRC/build/use/bench/perft_hash_bench
  local src=$1 use=()
  grep -q perft_hash_bench "$src/bench/CMakeLists.txt" ||
    printf '\nadd_executable(perft_hash_bench perft_hash_bench.cpp)\ntarget_link_libraries(perft_hash_bench PRIVATE c960_core)\n' \
      >>"$src/bench/CMakeLists.txt"
  local common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DC960_NATIVE=OFF -DC960_PORTABLE_ARCH="$arch" "${launcher[@]}")
  if ((pgo)); then
    local profiles=$src/build/profile gen=$src/build/gen
    rm -rf "$profiles"
    cmake -S "$src" -B "$gen" "${common[@]}" -DC960_PGO_GENERATE="$profiles" >/dev/null
    cmake --build "$gen" --target perft_bench >/dev/null
    for sliders in auto magic; do
      C960_SLIDERS=$sliders "$gen/bench/perft_bench" --benchmark_filter='Perft|Count' --benchmark_min_time=0.2 >/dev/null 2>&1
    done
    use=(-DC960_PGO_USE="$profiles")
    rm -rf "$src/build/use/core/CMakeFiles"  # ninja does not see new profiles: recompile the core
  else
    use=(-DC960_PGO_USE=)
  fi
  cmake -S "$src" -B "$src/build/use" "${common[@]}" "${use[@]}" >/dev/null
  cmake --build "$src/build/use" --target perft_hash_bench >/dev/null
}
snapshot() {  # snapshot COMMIT|WORKTREE DIR: the sources, with this tree's driver
  rm -rf "$2" && mkdir -p "$2"
  if [[ $1 == WORKTREE ]]; then
    git ls-files -z --cached --others --exclude-standard | xargs -0 tar -c | tar -x -C "$2"
  else
    git archive "$1" | tar -x -C "$2"
  fi
  cp bench/perft_hash_bench.cpp "$2/bench/"
}
root=build/leaf-instructions
echo "building ${base:0:12} and this worktree for $arch (pgo=$pgo) under $root ..." >&2
snapshot "$base" "$root/old" && build "$root/old"
snapshot WORKTREE "$root/new" && build "$root/new"

kiwipete='r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1'
ir() {  # ir BINARY DEPTH ROOT-ARGS... -> "instructions nodes"
  local bin=$1 depth=$2 out
  shift 2
  out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" --depth "$depth" --threads 1 --hash 0 2>&1)
  echo "$(sed -n 's/.*Collected : //p' <<<"$out") $(sed -n 's/.* nodes=\([0-9]*\).*/\1/p' <<<"$out")"
}
printf '# %s (old) vs %s%s (new); -march=%s; pgo=%s\n' "${base:0:12}" "$(git rev-parse --short=12 HEAD)" \
  "$(git diff --quiet HEAD -- core || echo '+changes')" "$arch" "$pgo"
printf '%-9s %-5s %5s %15s %12s %10s\n' root depth core "instructions" "at depth 1" "per leaf"
for side in old new; do
  bin=$root/$side/build/use/bench/perft_hash_bench
  for spec in "518 6 119060324" "kiwipete 5 193690690"; do
    read -r name depth want <<<"$spec"
    args=(--sps 518)
    [[ $name == kiwipete ]] && args=(--fen "$kiwipete")
    read -r deep nodes < <(ir "$bin" "$depth" "${args[@]}")
    read -r shallow _ < <(ir "$bin" 1 "${args[@]}")
    [[ $nodes == "$want" ]] || { echo "leaf_instructions.sh: $side $name perft $depth = $nodes, not $want" >&2; exit 1; }
    printf '%-9s %-5s %5s %15s %12s %10.3f\n' "$name" "$depth" "$side" "$deep" "$shallow" \
      "$(python3 -c "print(($deep - $shallow) / $nodes)")"
  done
done
