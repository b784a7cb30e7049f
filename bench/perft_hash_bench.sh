#!/usr/bin/env bash
# Deep hashed perft, before and after: builds bench/perft_hash_bench.cpp against this tree's core
# and against a base commit's core (default: the merge base with main), runs both on every
# configuration, old and new interleaved (order alternating by repetition), and prints for each
# the median seconds of the count and of the whole (table made, count, table freed), nodes per
# second of both, and the load average of the runs.
#   bench/perft_hash_bench.sh             the small default: perft 7 of 518 and perft 6 of
#                                         kiwipete, 1 and 2 threads, 256 and 1024 MB (a minute)
#   bench/perft_hash_bench.sh --big       depths 7 to 9, 256 MB to 20 GB (most of a 24 GB
#                                         machine): hours; --depths/--hash/... narrow it
#   bench/perft_hash_bench.sh --extrapolate "0 104 208 312 416 518 601 720 840 959"
#       perft 8 of each listed start position (2 threads, 4096 MB, new core only unless --old,
#       then old and new alternate), and the all-960 time extrapolated from their mean
# Other options: --roots "518 kiwipete" (start position numbers, or kiwipete) --depths "7 8"
#   --threads "1 2" --hash "256 1024 4096" --reps N --base COMMIT
#   --pgo: both cores profile-guided, trained as deploy/build.sh trains them (the shipped build)
#   --mode table|units (table: perft_parallel, as `c960 perft --table`; units: the root's
#   children counted by perft() on a pool of threads, as cluster workers do)
# total = setup + count + teardown: what a process pays beyond its start-up; the table's set-up
# cost shows as total - count. CPU seconds (raw lines) are user + system time of all three.
# Raw lines go to results/perft_hash_bench-<time>.txt. A benchmark, not a test: it only checks
# that old and new agree on every count (and with the published counts of 518 and kiwipete).
set -euo pipefail
cd "$(dirname "$0")/.."

depths="" roots="518 kiwipete" threads="1 2" hashes="256 1024" reps=1 mode=table
base="" extrapolate="" extrapolate_old=0 pgo=0
while (($#)); do
  case "$1" in
    --depths) depths="$2"; shift 2 ;;
    --roots | --sps) roots="$2"; shift 2 ;;
    --big) depths="7 8 9" hashes="256 1024 4096 16384 20480"; shift ;;
    --pgo) pgo=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --hash) hashes="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --extrapolate) extrapolate="$2"; shift 2 ;;
    --old) extrapolate_old=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "perft_hash_bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "perft_hash_bench.sh: --reps: '$reps' is not a positive number" >&2; exit 2; }
[[ "$mode" == table || "$mode" == units ]] || { echo "perft_hash_bench.sh: --mode: '$mode' is not table or units" >&2; exit 2; }
base="${base:-$(git merge-base HEAD main)}"
base=$(git rev-parse --verify "$base^{commit}") || { echo "perft_hash_bench.sh: --base: not a commit" >&2; exit 2; }

# --- builds ---------------------------------------------------------------------------------
# The same driver, built the same way (release, native, with or without PGO) against both cores,
# each in a tree of its own under build/perft-hash-base/.
kind=nopgo
((pgo)) && kind=pgo
build_driver() {  # build_driver SRC_DIR: builds SRC_DIR/build/<kind>/bench/perft_hash_bench
  local src=$1 out=$1/build/$kind
  grep -q perft_hash_bench "$src/bench/CMakeLists.txt" ||
    printf '\nadd_executable(perft_hash_bench perft_hash_bench.cpp)\ntarget_link_libraries(perft_hash_bench PRIVATE c960_core)\n' \
      >>"$src/bench/CMakeLists.txt"
  local launcher=() use=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if ((pgo)); then
    # As deploy/build.sh trains the shipped build: an instrumented perft_bench, both slider methods.
    local profiles=$src/build/pgo-profile gen=$src/build/pgo-generate
    rm -rf "$profiles"
    cmake -S "$src" -B "$gen" -G Ninja -DCMAKE_BUILD_TYPE=Release -DC960_PGO_GENERATE="$profiles" "${launcher[@]}" >/dev/null
    cmake --build "$gen" --target perft_bench >/dev/null
    for sliders in auto magic; do
      C960_SLIDERS=$sliders "$gen/bench/perft_bench" --benchmark_filter='Perft|Count' --benchmark_min_time=0.2 >/dev/null 2>&1
    done
    use=(-DC960_PGO_USE="$profiles")
    rm -rf "$out/core/CMakeFiles"  # ninja does not see new profiles: recompile the core
  else
    use=(-DC960_PGO_USE=)
  fi
  cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release "${use[@]}" "${launcher[@]}" >/dev/null
  cmake --build "$out" --target perft_hash_bench >/dev/null
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
old_dir=build/perft-hash-base/${base:0:12} new_dir=build/perft-hash-base/worktree
echo "building the base core ${base:0:12} and this tree's ($kind) under build/perft-hash-base ..." >&2
[[ -x "$old_dir/build/$kind/bench/perft_hash_bench" ]] || { snapshot "$base" "$old_dir" && build_driver "$old_dir"; }
snapshot WORKTREE "$new_dir" && build_driver "$new_dir"
old=$old_dir/build/$kind/bench/perft_hash_bench new=$new_dir/build/$kind/bench/perft_hash_bench

mkdir -p results
log=results/perft_hash_bench-$(date +%Y%m%d-%H%M%S).txt
echo "# base ${base:0:12} (old) vs $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- core || echo '+changes') (new); $kind; $(nproc) CPUs; mode $mode; $(uptime)" | tee "$log"

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Published perft of 518 (the standard start position) and of kiwipete. Kiwipete 8 and 9 as the
# public perft tables give them (the Cinnamon engine's, marked verified, and the PerftWar
# leaderboard's); the 15485037751992 written here before was wrong (both cores count 15493944087984).
known_count() {
  case "$1:$2" in
    518:7) echo 3195901860 ;; 518:8) echo 84998978956 ;; 518:9) echo 2439530234167 ;;
    kiwipete:5) echo 193690690 ;; kiwipete:6) echo 8031647685 ;; kiwipete:7) echo 374190009323 ;;
    kiwipete:8) echo 15493944087984 ;; kiwipete:9) echo 708027759953502 ;; *) echo "" ;;
  esac
}
kiwipete='r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1'
run() {  # run BINARY LABEL ROOT DEPTH THREADS HASH -> appends "LABEL <driver line>" to the log
  local line root=(--sps "$3")
  [[ $3 == kiwipete ]] && root=(--fen "$kiwipete")
  line=$("$1" "${root[@]}" --depth "$4" --threads "$5" --hash "$6" --mode "$mode")
  echo "$2 $line" >>"$log"
  echo "$line"
}

# --- the before/after table -----------------------------------------------------------------
cases=()  # ROOT:DEPTH, depth by depth
if [[ -z "$depths" ]]; then
  for root in $roots; do
    if [[ $root == kiwipete ]]; then cases+=(kiwipete:6); else cases+=("$root:7"); fi
  done
else
  for depth in $depths; do for root in $roots; do cases+=("$root:$depth"); done; done
fi
if [[ -z "$extrapolate" ]]; then
  printf "%-8s %-5s %-3s %-6s | %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s %6s | %6s %6s | %s\n" root depth thr MB \
    old_cnt old_tot old_set old_cpu new_cnt new_tot new_set new_cpu cnt_x tot_x cpu_x Mnps_c Mnps_t load
  for c in "${cases[@]}"; do
    root=${c%%:*} depth=${c##*:}
    for t in $threads; do
      for mb in $hashes; do
        declare -A v=()
        for k in oc ot ou nc nt nu; do v[$k]=""; done
        loads=() counts=()
        for ((r = 0; r < reps; r++)); do
          order=(old new)
          ((r % 2)) && order=(new old)
          for which in "${order[@]}"; do
            bin=$new
            [[ $which == old ]] && bin=$old
            line=$(run "$bin" "$which" "$root" "$depth" "$t" "$mb")
            counts+=("$(field nodes <<<"$line")")
            loads+=("$(field load <<<"$line")")
            v[${which:0:1}c]+="$(field count_s <<<"$line") "
            v[${which:0:1}t]+="$(field total_s <<<"$line") "
            v[${which:0:1}u]+="$(field cpu_s <<<"$line") "
          done
        done
        want=$(known_count "$root" "$depth")
        for n in "${counts[@]}"; do
          if [[ "$n" != "${counts[0]}" || (-n "$want" && "$n" != "$want") ]]; then
            echo "COUNT MISMATCH: $root depth $depth threads $t hash $mb: ${counts[*]} (known: ${want:-none})" >&2
            exit 1
          fi
        done
        m() { printf '%s\n' ${v[$1]} | median; }
        oc=$(m oc) ot=$(m ot) ou=$(m ou) nc=$(m nc) nt=$(m nt) nu=$(m nu)
        lmin=$(printf '%s\n' "${loads[@]}" | sort -g | head -1) lmax=$(printf '%s\n' "${loads[@]}" | sort -g | tail -1)
        printf "%-8s %-5s %-3s %-6s | %8.2f %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f %8.2f | %6.2f %6.2f %6.2f | %6.0f %6.0f | %s-%s\n" \
          "$root" "$depth" "$t" "$mb" "$oc" "$ot" "$(awk "BEGIN { print $ot - $oc }")" "$ou" "$nc" "$nt" \
          "$(awk "BEGIN { print $nt - $nc }")" "$nu" "$(awk "BEGIN { print $oc / $nc }")" "$(awk "BEGIN { print $ot / $nt }")" \
          "$(awk "BEGIN { print $ou / $nu }")" \
          "$(awk "BEGIN { print ${counts[0]} / $nc / 1e6 }")" "$(awk "BEGIN { print ${counts[0]} / $nt / 1e6 }")" \
          "$lmin" "$lmax" | tee -a "$log"
    done
  done
  done
  echo "(medians of $reps; cnt: the count, tot: table made + count + table freed, set = tot - cnt, in seconds;" \
    "cpu: user + system seconds of the whole; cnt_x, tot_x, cpu_x: old / new; Mnps_c, Mnps_t: the new core's nodes per second of cnt and of tot;" \
    "load: 1-minute load average after each run)" | tee -a "$log"
  exit 0
fi

# --- all-960 extrapolation ------------------------------------------------------------------
# Old and new alternate by position. The CPU-based figure assumes both cores free and the two
# threads fully used (a count's CPU time hardly changes from 1 to 2 threads); the wall-based one
# is what this machine gave under its load at the time.
bins=(new)
((extrapolate_old)) && bins=(old new)
printf "%-4s %-4s %-16s %9s %9s %s\n" sp core nodes total_s cpu_s load
declare -A total_wall total_cpu
for which in "${bins[@]}"; do total_wall[$which]=0 total_cpu[$which]=0; done
n=0
for sp in $extrapolate; do
  for which in "${bins[@]}"; do
    bin=$new
    [[ $which == old ]] && bin=$old
    line=$(run "$bin" "$which" "$sp" 8 2 4096)
    printf "%-4s %-4s %-16s %9s %9s %s\n" "$sp" "$which" "$(field nodes <<<"$line")" "$(field total_s <<<"$line")" \
      "$(field cpu_s <<<"$line")" "$(field load <<<"$line")" | tee -a "$log"
    total_wall[$which]=$(awk "BEGIN { print ${total_wall[$which]} + $(field total_s <<<"$line") }")
    total_cpu[$which]=$(awk "BEGIN { print ${total_cpu[$which]} + $(field cpu_s <<<"$line") }")
  done
  n=$((n + 1))
done
for which in "${bins[@]}"; do
  w=${total_wall[$which]} c=${total_cpu[$which]}
  printf "%s: %d positions; mean %.2f s wall, %.2f s CPU; all 960 at 2 threads, 4096 MB: about %.0f min from CPU time on 2 free cores, %.0f min from wall time as measured\n" \
    "$which" "$n" "$(awk "BEGIN { print $w / $n }")" "$(awk "BEGIN { print $c / $n }")" \
    "$(awk "BEGIN { print 960 * $c / $n / 2 / 60 }")" "$(awk "BEGIN { print 960 * $w / $n / 60 }")" | tee -a "$log"
done
