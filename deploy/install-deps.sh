#!/usr/bin/env bash
# Installs every build, test and runtime dependency of c960 from Debian bookworm packages.
# With --deploy, also what the deploy tests need (deploy/test-deploy.sh): Docker, debootstrap,
# qemu-user, cloud-init, kubectl, and iproute2 and iptables for the network namespace test.
# Safe to run again: apt-get skips what is already installed, and the package index is only
# refreshed when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format clang-tidy
  ccache  # deploy/build.sh compiles through it: a cache kept between builds and CI runs
  libgrpc++-dev libgrpc-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev sqlite3
  # The coordinator's store on a PostgreSQL server: libpq to build; the server for the tests, which
  # run scratch clusters of their own (tests/cluster/pg_server.h; skipped where it is missing).
  libpq-dev postgresql-15
  libssl-dev openssl  # TLS files and token hashes (OpenSSL libcrypto); test certificates (openssl)
  stockfish pgn-extract
  libjs-chart.js  # Chart.js, embedded into the HTML reports at build time (report/CMakeLists.txt)
  # The coordinator's HTTP side (coordinator/http_*): gzip (zlib), the Prometheus text format.
  zlib1g-dev prometheus-cpp-dev
  # The metrics tests (tests/cluster/prometheus_test.sh): promtool and a Prometheus server that
  # scrapes a test coordinator on loopback (the package's own service is not used), curl to fetch
  # /metrics, python3 to read Prometheus' JSON answers.
  prometheus curl python3
  # The Debian package (deploy/package.sh): man pages from --help; CPack's dpkg-shlibdeps.
  help2man file dpkg-dev
  # systemd-analyze checks the systemd units.
  systemd
  # The zsh completion script's test (tests/completion_test.cpp) runs it in zsh.
  zsh
)
DEPLOY_PACKAGES=(
  docker.io debootstrap qemu-user cloud-init iproute2 iptables curl ca-certificates
)

deploy=0
case "${1:-}" in
  --deploy) deploy=1 ;;
  "") ;;
  *) echo "usage: deploy/install-deps.sh [--deploy]" >&2; exit 2 ;;
esac
wanted=("${PACKAGES[@]}")
if ((deploy)); then
  wanted+=("${DEPLOY_PACKAGES[@]}")
  # kubectl renders the Kubernetes manifests; Debian's kubernetes-client only where none is.
  command -v kubectl >/dev/null || wanted+=(kubernetes-client)
fi

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#wanted[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
# cloud-init is here only for `cloud-init schema`: keep it from configuring this machine at its
# next boot.
# postgresql-15 is here for the tests' scratch clusters: keep Debian from making and starting a
# cluster of its own ("main" on port 5432) as it installs.
for p in "${missing[@]}"; do
  if [[ "$p" == cloud-init ]]; then $SUDO mkdir -p /etc/cloud && $SUDO touch /etc/cloud/cloud-init.disabled; fi
  if [[ "$p" == postgresql-15 ]]; then
    $SUDO mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/c960.conf >/dev/null
  fi
done
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
