#!/usr/bin/env bash
# The Debian package (deploy/package.sh, run first by the ctest fixture): named
# c960_<version>_amd64.deb; holds the binaries, man pages, units and conffiles; installs with apt
# into a fresh Debian bookworm root (debootstrap; only Debian's archive as a source, so every
# dependency is a Debian package) where the binaries print the build's version and count perft
# right, with the c960 user made and removed again by a purge; and its binaries run on an old
# CPU model (qemu-x86_64 -cpu Nehalem: magic sliders) and pick PEXT on a newer one.
#   deploy/tests/package_test.sh [DEB]       default: build/package/c960_*_amd64.deb
set -euo pipefail
source "$(dirname "$0")/lib.sh"
deb="${1:-$(ls "$ROOT"/build/package/c960_*_amd64.deb 2>/dev/null | head -n 1)}"
[[ -s "$deb" ]] || fail "no package: run deploy/package.sh first"
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
[[ $(id -u) == 0 ]] || fail "needs root (chroot)"

work=$(mktemp -d "$C960_DEPLOY_STATE/package.XXXXXX")
root="$work/root"
cleanup() {
  if mountpoint -q "$root/proc" 2>/dev/null; then umount "$root/proc" || umount -l "$root/proc"; fi
  mountpoint -q "$root/proc" 2>/dev/null || rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Name, version and fields.
project_version=$(sed -n 's/^project(c960 VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[[ "$(basename "$deb")" == "c960_${project_version}_amd64.deb" ]] || fail "$(basename "$deb"): want c960_${project_version}_amd64.deb"
[[ "$(dpkg-deb -f "$deb" Version)" == "$project_version" ]] || fail "Version $(dpkg-deb -f "$deb" Version)"
depends=$(dpkg-deb -f "$deb" Depends)
log "$(basename "$deb"): Depends: $depends"
grep -q 'libgrpc++1.51' <<<"$depends" || fail "Depends lacks libgrpc++1.51 (dpkg-shlibdeps did not run?)"

# Contents and conffiles.
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
for f in ./usr/bin/c960 ./usr/libexec/c960/c960-cluster ./usr/bin/c960-coordinator ./usr/bin/c960-worker ./usr/bin/c960-healthcheck \
  ./usr/lib/systemd/system/c960-coordinator.service ./usr/lib/systemd/system/c960-worker.service \
  ./etc/default/c960-coordinator ./etc/default/c960-worker ./usr/share/man/man1/c960.1.gz \
  ./usr/share/man/man1/c960-coordinator.1.gz ./usr/share/man/man1/c960-worker.1.gz \
  ./usr/share/bash-completion/completions/c960 ./usr/share/zsh/vendor-completions/_c960 \
  ./usr/share/doc/c960/examples/compose.yaml ./usr/share/doc/c960/examples/cloud-init/worker.yaml; do
  grep -qx -- "$f" <<<"$contents" || fail "the package lacks $f"
done
dpkg-deb -e "$deb" "$work/control"
[[ "$(sort "$work/control/conffiles")" == "$(printf '/etc/default/c960-coordinator\n/etc/default/c960-worker')" ]] ||
  fail "conffiles: $(cat "$work/control/conffiles")"
grep -q 'ExecStart=/usr/bin/c960-worker ' <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/c960-worker.service) ||
  fail "c960-worker.service does not run /usr/bin/c960-worker"
log "contents: binaries, units, conffiles, man pages, completion scripts, examples"

# The build's own version, as the installed binaries must print it.
dpkg-deb -x "$deb" "$work/extracted"
want_version=$("$work/extracted/usr/bin/c960" --version)
[[ "$want_version" =~ ^c960\ ${project_version//./\\.}\+ ]] || fail "c960 --version: '$want_version'"

# Old and new CPU models (user-mode emulation): the portable binary runs everywhere and
# picks its slider method from the CPU.
if command -v qemu-x86_64 >/dev/null; then
  want4=$(awk -F, '$1 == 518 {print $7}' "$ROOT/tests/data/chess960_startpos_perft.csv")
  for model in Nehalem:magic EPYC-Rome:magic Haswell:pext EPYC-Milan:pext; do
    cpu=${model%%:*} method=${model#*:}
    out=$(qemu-x86_64 -cpu "$cpu" "$work/extracted/usr/bin/c960" version 2>/dev/null) || fail "c960 version under -cpu $cpu: exit $?"
    grep -qx "sliders: $method" <<<"$out" || fail "-cpu $cpu: want sliders: $method, got: $out"
    nodes=$(qemu-x86_64 -cpu "$cpu" "$work/extracted/usr/bin/c960" perft --sp 518 --depth 4 2>/dev/null | awk '/Nodes searched/{print $3}')
    [[ "$nodes" == "$want4" ]] || fail "-cpu $cpu: perft 4 of 518 is '$nodes', want $want4"
    log "qemu-x86_64 -cpu $cpu: runs, sliders: $method, perft 4 of 518 = $nodes"
  done
else
  fail "qemu-x86_64 not found (deploy/install-deps.sh --deploy installs qemu-user)"
fi

# A fresh bookworm root, with Debian's archive as its only package source.
tar=$(bookworm_rootfs_tar) || fail "debootstrap failed"
mkdir -p "$root"
tar -C "$root" -xf "$tar"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
log "apt-get install ./$(basename "$deb") in a fresh bookworm root"
in_root apt-get update -qq >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get update in the root"; }
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >>"$work/apt.log" 2>&1 ||
  { tail -30 "$work/apt.log"; fail "apt-get install of the package in a fresh bookworm root"; }

[[ "$(in_root c960 --version)" == "$want_version" ]] || fail "installed c960 --version: $(in_root c960 --version)"
[[ "$(in_root c960-healthcheck --version)" == "c960-healthcheck ${want_version#c960 }" ]] ||
  fail "installed c960-healthcheck --version: $(in_root c960-healthcheck --version)"
for daemon in c960-coordinator c960-worker; do
  out=$(in_root "$daemon" --version 2>&1) || fail "$daemon --version: exit status $?: $out"
  [[ "$out" == "$daemon ${want_version#c960 }" ]] || fail "installed $daemon --version: $out"
done
want5=$(awk -F, '$1 == 518 {print $8}' "$ROOT/tests/data/chess960_startpos_perft.csv")
nodes=$(in_root c960 perft --sp 518 --depth 5 2>/dev/null | awk '/Nodes searched/{print $3}')
[[ "$nodes" == "$want5" ]] || fail "installed c960 perft 5 of 518: '$nodes', want $want5"
# A command in c960-cluster (/usr/libexec/c960), which c960 executes.
out=$(in_root c960 token new --role read --name package-test 2>&1) || fail "installed c960 token new: exit $?: $out"
grep -q '^read package-test sha256:' <<<"$out" || fail "installed c960 token new: $out"
in_root getent passwd c960 >/dev/null || fail "postinst made no c960 user"
[[ "$(in_root stat -c %G /etc/c960)" == c960 ]] || fail "/etc/c960 is not group c960"
for page in c960 c960-coordinator c960-worker c960-healthcheck; do
  [[ -s "$root/usr/share/man/man1/$page.1.gz" ]] || fail "no man page $page.1"
done
log "installed: $want_version; perft 5 of 518 = $nodes; c960 token new (c960-cluster); user c960; man pages"

in_root apt-get purge -y -qq c960 >>"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; fail "apt-get purge c960"; }
in_root getent passwd c960 >/dev/null && fail "purge left the c960 user"
[[ -e "$root/usr/bin/c960" || -e "$root/usr/libexec/c960" || -e "$root/etc/default/c960-worker" || -e "$root/etc/c960" ]] && fail "purge left files"
log "purged: binaries, configuration and the c960 user gone"
echo "package_test: 1 passed, 0 failed"
