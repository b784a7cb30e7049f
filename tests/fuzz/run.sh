#!/usr/bin/env bash
# Builds and runs the HTTP fuzz target (tests/fuzz/http_fuzz.cpp) with libFuzzer:
#   tests/fuzz/run.sh [SECONDS]      (default 60; a crash or sanitizer report fails the run)
# The target and the code it fuzzes (coordinator/http_wire.cpp, coordinator/http_api.cpp) are built
# with clang++ -fsanitize=fuzzer,address,undefined; the rest (the coordinator, store, protobuf) is
# linked from the release build, which must exist (deploy/build.sh release), uninstrumented.
# Inputs that grow coverage go to build/fuzz/corpus; tests/fuzz/corpus/ holds the seeds (real
# requests), and crashes are written to build/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
release=build/release
out=build/fuzz
mkdir -p "$out/corpus"
[[ -f "$release/build.ninja" ]] || { echo "run.sh: no release build in $release (deploy/build.sh release)" >&2; exit 1; }
cmake --build "$release" --target c960_coordinator_http >/dev/null
# The libraries the coordinator's HTTP library links with, as CMake has them for its wire test.
libs=$(ninja -C "$release" -t commands tests/cluster_http_wire_test | tail -1 | sed 's/^: && //; s/ && .*//' |
       tr ' ' '\n' | grep -E '\.a$|\.so|^-l|^-Wl' | grep -v gtest | sed "s|^\([a-z][a-z/]*/lib\)|$release/\1|")
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -isystem "$release/proto/gen" -pthread -Wno-unused-command-line-argument)
clang++ "${flags[@]}" tests/fuzz/http_fuzz.cpp coordinator/http_wire.cpp coordinator/http_api.cpp \
  $libs -o "$out/http_fuzz"
ASAN_OPTIONS=detect_leaks=0 "$out/http_fuzz" -max_total_time="$seconds" -max_len=20000 -timeout=10 \
  -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" tests/fuzz/corpus
