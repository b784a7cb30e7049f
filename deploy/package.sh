#!/usr/bin/env bash
# Builds the portable release (any x86-64-v2 CPU; the slider method is chosen at run time;
# profile-guided unless C960_PGO=0) and the Debian package build/package/c960_<version>_amd64.deb,
# which depends on Debian's runtime libraries only:
#   deploy/package.sh && apt install ./build/package/c960_*_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
# Installed under /usr, configuration in /etc: the prefix is baked into the units and conffiles.
cmake --preset portable -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
# The man pages and completion scripts are build targets of their own (made from the binaries).
./deploy/build.sh portable c960 c960-coordinator c960-worker c960-healthcheck man completion
rm -rf build/package
cpack --config build/portable/CPackConfig.cmake -B build/package
deb=$(ls build/package/c960_*_amd64.deb)
echo "package: $deb"
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends
