#!/usr/bin/env bash
# Installs every build, test and runtime dependency of c960 from Debian bookworm packages.
# Safe to run again: apt-get skips what is already installed, and the package index is only
# refreshed when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format clang-tidy
  libgrpc++-dev libgrpc-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev sqlite3
  libssl-dev openssl  # TLS files and token hashes (OpenSSL libcrypto); test certificates (openssl)
  stockfish pgn-extract
  libjs-chart.js  # Chart.js, embedded into the HTML reports at build time (report/CMakeLists.txt)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
