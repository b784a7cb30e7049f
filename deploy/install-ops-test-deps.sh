#!/usr/bin/env bash
# Installs what the monitoring tests (ctest label "prometheus") need: Debian's prometheus, whose
# promtool checks the coordinator's /metrics and whose server scrapes a test coordinator. No
# service is started: the tests run their own Prometheus on loopback with a generated config.
# Safe to run again: apt-get skips what is already there.
set -euo pipefail

PACKAGES=(prometheus)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-ops-test-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # Without recommends (node exporter); the package's own service is not wanted here.
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-ops-test-deps: $(prometheus --version 2>&1 | head -1)"
