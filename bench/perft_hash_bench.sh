#!/usr/bin/env bash
# Deep hashed perft, before and after: builds bench/perft_hash_bench.cpp against this tree's core
# (build/release) and against a base commit's core (default: the merge base with main), runs both
# on every configuration, old and new interleaved (order alternating by repetition), and prints
# median wall and CPU seconds, the speed-up and Mnps, with the load average of the runs.
#   bench/perft_hash_bench.sh                         depth 8; 518 and 601; 1 and 2 threads;
#                                                     256, 1024 and 4096 MB; 3 repetitions
#   bench/perft_hash_bench.sh --depths "8 9" --reps 1 the full table (depth 9: minutes a run)
#   bench/perft_hash_bench.sh --extrapolate "0 104 208 312 416 518 601 720 840 959"
#       perft 8 of each listed start position (2 threads, 4096 MB, new core only unless --old,
#       then old and new alternate), and the all-960 time extrapolated from their mean
# Other options: --sps "518 601" --threads "1 2" --hash "256 1024 4096" --base COMMIT
#   --mode table|units (table: perft_parallel, as `c960 perft --table`; units: the root's
#   children counted by perft() on a pool of threads, as cluster workers do)
# CPU seconds are the process's user + system time of the count (the table is mapped and
# prefaulted before); on a shared machine they move less than the wall time. Raw lines go to
# results/perft_hash_bench-<time>.txt. A benchmark, not a test: it only checks that old and new
# agree on every count (and with the known perft 8 and 9 of 518).
set -euo pipefail
cd "$(dirname "$0")/.."

depths="8" sps="518 601" threads="1 2" hashes="256 1024 4096" reps=3 mode=table
base="" extrapolate="" extrapolate_old=0
while (($#)); do
  case "$1" in
    --depths) depths="$2"; shift 2 ;;
    --sps) sps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --hash) hashes="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --extrapolate) extrapolate="$2"; shift 2 ;;
    --old) extrapolate_old=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "perft_hash_bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "perft_hash_bench.sh: --reps: '$reps' is not a positive number" >&2; exit 2; }
[[ "$mode" == table || "$mode" == units ]] || { echo "perft_hash_bench.sh: --mode: '$mode' is not table or units" >&2; exit 2; }
base="${base:-$(git merge-base HEAD main)}"
base=$(git rev-parse --verify "$base^{commit}") || { echo "perft_hash_bench.sh: --base: not a commit" >&2; exit 2; }

# --- builds ---------------------------------------------------------------------------------
[[ -f build/release/build.ninja ]] || cmake --preset release -DC960_PGO_USE= >/dev/null
cmake --build --preset release --target perft_hash_bench >/dev/null
new=build/release/bench/perft_hash_bench
old_dir=build/perft-hash-base/${base:0:12}
old=$old_dir/build/bench/perft_hash_bench
if [[ ! -x "$old" || bench/perft_hash_bench.cpp -nt "$old" ]]; then
  echo "building the base core ${base:0:12} in $old_dir ..." >&2
  rm -rf "$old_dir/src" && mkdir -p "$old_dir/src"
  git archive "$base" | tar -x -C "$old_dir/src"
  # The same driver, built the same way (release, no PGO) against the base commit's core.
  cp bench/perft_hash_bench.cpp "$old_dir/src/bench/"
  printf '\nadd_executable(perft_hash_bench perft_hash_bench.cpp)\ntarget_link_libraries(perft_hash_bench PRIVATE c960_core)\n' \
    >>"$old_dir/src/bench/CMakeLists.txt"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$old_dir/src" -B "$old_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DC960_PGO_USE= "${launcher[@]}" >/dev/null
  cmake --build "$old_dir/build" --target perft_hash_bench >/dev/null
fi

mkdir -p results
log=results/perft_hash_bench-$(date +%Y%m%d-%H%M%S).txt
echo "# base ${base:0:12} (old) vs $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- core || echo '+changes') (new); $(nproc) CPUs; mode $mode" | tee "$log"

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
known_count() {  # published perft of 518 (the standard start position)
  case "$1:$2" in 518:8) echo 84998978956 ;; 518:9) echo 2439530234167 ;; *) echo "" ;; esac
}
run() {  # run BINARY LABEL SP DEPTH THREADS HASH -> appends "LABEL <driver line>" to the log
  local line
  line=$("$1" --sps "$3" --depth "$4" --threads "$5" --hash "$6" --mode "$mode")
  echo "$2 $line" >>"$log"
  echo "$line"
}

# --- the before/after table -----------------------------------------------------------------
if [[ -z "$extrapolate" ]]; then
  printf "%-4s %-5s %-7s %-6s | %9s %9s | %9s %9s | %7s %7s | %8s | %s\n" sp depth threads MB \
    old_wall new_wall old_cpu new_cpu wall_x cpu_x new_Mnps load
  for depth in $depths; do
    for sp in $sps; do
      for t in $threads; do
        for mb in $hashes; do
          ow=() nw=() oc=() nc=() loads=() counts=()
          for ((r = 0; r < reps; r++)); do
            order=(old new)
            ((r % 2)) && order=(new old)
            for which in "${order[@]}"; do
              bin=$new
              [[ $which == old ]] && bin=$old
              line=$(run "$bin" "$which" "$sp" "$depth" "$t" "$mb")
              counts+=("$(field nodes <<<"$line")")
              loads+=("$(field load <<<"$line")")
              if [[ $which == old ]]; then
                ow+=("$(field wall_s <<<"$line")") oc+=("$(field cpu_s <<<"$line")")
              else
                nw+=("$(field wall_s <<<"$line")") nc+=("$(field cpu_s <<<"$line")")
              fi
            done
          done
          want=$(known_count "$sp" "$depth")
          for c in "${counts[@]}"; do
            if [[ "$c" != "${counts[0]}" || (-n "$want" && "$c" != "$want") ]]; then
              echo "COUNT MISMATCH: sp $sp depth $depth threads $t hash $mb: ${counts[*]} (known: ${want:-none})" >&2
              exit 1
            fi
          done
          mow=$(printf '%s\n' "${ow[@]}" | median) mnw=$(printf '%s\n' "${nw[@]}" | median)
          moc=$(printf '%s\n' "${oc[@]}" | median) mnc=$(printf '%s\n' "${nc[@]}" | median)
          lmin=$(printf '%s\n' "${loads[@]}" | sort -g | head -1) lmax=$(printf '%s\n' "${loads[@]}" | sort -g | tail -1)
          printf "%-4s %-5s %-7s %-6s | %9.2f %9.2f | %9.2f %9.2f | %7.2f %7.2f | %8.0f | %s-%s\n" "$sp" "$depth" "$t" "$mb" \
            "$mow" "$mnw" "$moc" "$mnc" "$(awk "BEGIN { print $mow / $mnw }")" "$(awk "BEGIN { print $moc / $mnc }")" \
            "$(awk "BEGIN { print ${counts[0]} / $mnw / 1e6 }")" "$lmin" "$lmax" | tee -a "$log"
        done
      done
    done
  done
  echo "(medians of $reps; wall_x and cpu_x: old / new; load: 1-minute load average after each run)" | tee -a "$log"
  exit 0
fi

# --- all-960 extrapolation ------------------------------------------------------------------
# Old and new alternate by position. The CPU-based figure assumes both cores free and the two
# threads fully used (a count's CPU time hardly changes from 1 to 2 threads); the wall-based one
# is what this machine gave under its load at the time.
bins=(new)
((extrapolate_old)) && bins=(old new)
printf "%-4s %-4s %-16s %9s %9s %s\n" sp core nodes wall_s cpu_s load
declare -A total_wall total_cpu
for which in "${bins[@]}"; do total_wall[$which]=0 total_cpu[$which]=0; done
n=0
for sp in $extrapolate; do
  for which in "${bins[@]}"; do
    bin=$new
    [[ $which == old ]] && bin=$old
    line=$(run "$bin" "$which" "$sp" 8 2 4096)
    printf "%-4s %-4s %-16s %9s %9s %s\n" "$sp" "$which" "$(field nodes <<<"$line")" "$(field wall_s <<<"$line")" \
      "$(field cpu_s <<<"$line")" "$(field load <<<"$line")" | tee -a "$log"
    total_wall[$which]=$(awk "BEGIN { print ${total_wall[$which]} + $(field wall_s <<<"$line") }")
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
