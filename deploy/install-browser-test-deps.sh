#!/usr/bin/env bash
# Installs what the browser tests (tests/browser/, ctest label "browser") need: Debian's
# Chromium and the pinned npm package playwright-core (tests/browser/package-lock.json), which
# drives it. playwright-core downloads no browser; the tests launch /usr/bin/chromium.
# Safe to run again: apt-get and npm skip what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(chromium nodejs npm fonts-dejavu-core)
missing=()
for p in "${PACKAGES[@]}"; do
  # nodejs from another source (e.g. NodeSource) also provides npm: skip npm when it is there.
  if [[ $p == npm ]] && command -v npm >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-browser-test-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# node_modules matches the lock file exactly; nothing is downloaded when it already does.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
if ! (cd tests/browser && npm ls --depth=0 >/dev/null 2>&1); then
  (cd tests/browser && npm ci --no-audit --no-fund)
fi
echo "install-browser-test-deps: chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), node $(node --version)"
