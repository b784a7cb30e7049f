# Shared by the deploy tests (sourced): logging, a cached Debian bookworm root file system made
# with debootstrap, and the Docker daemon. Each test cleans up after itself with a trap; the
# cleanup functions here are idempotent and touch only what the tests made (recorded in
# $C960_DEPLOY_STATE).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
C960_DEPLOY_STATE="${C960_DEPLOY_STATE:-$ROOT/build/deploy-tests}"
# The bookworm root file systems stay on this machine between runs, outside the clone (as the
# compiler cache does: .ci/run), so that a fresh clone does not run debootstrap again.
C960_DEPLOY_CACHE="${C960_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/c960-deploy}"
C960_DEBIAN_MIRROR="${C960_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
mkdir -p "$C960_DEPLOY_STATE" "$C960_DEPLOY_CACHE"

log() { echo "[$(date +%H:%M:%S)] $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The key of bookworm's package set: the start of the SHA-256 of main's amd64 package list, from
# the mirror's InRelease (it changes with each point release). Where the mirror cannot be reached,
# the newest cached root's key (debootstrap would need the mirror anyway); nothing if none.
bookworm_key() {
  local release key
  if release=$(curl -fsS --max-time 20 "$C960_DEBIAN_MIRROR/dists/bookworm/InRelease" 2>/dev/null); then
    key=$(awk '/^SHA256:/ {s = 1; next} /^[^ ]/ {s = 0} s && $3 == "main/binary-amd64/Packages.xz" {print substr($1, 1, 16)}' \
      <<<"$release")
    [[ -n "$key" ]] && { echo "$key"; return 0; }
  fi
  key=$(ls -t "$C960_DEPLOY_CACHE"/bookworm-minbase-*.tar 2>/dev/null | head -n 1)
  key=${key##*/bookworm-minbase-}
  echo "${key%.tar}"
}

# A minimal Debian bookworm root file system (debootstrap --variant=minbase), as a tarball cached
# in $C960_DEPLOY_CACHE under the key of bookworm's package set (a few minutes when the key is
# new; the roots of older keys are removed then). Prints its path.
bookworm_rootfs_tar() {
  local key
  key=$(bookworm_key)
  [[ -n "$key" ]] || { echo "bookworm_rootfs_tar: no InRelease from $C960_DEBIAN_MIRROR and no cached root" >&2; return 1; }
  local tar="$C960_DEPLOY_CACHE/bookworm-minbase-$key.tar"
  if [[ ! -s "$tar" ]]; then
    local dir="$C960_DEPLOY_CACHE/bookworm-rootfs.$$.tmp"
    rm -rf "$dir"
    log "debootstrap bookworm (minbase) from $C960_DEBIAN_MIRROR, package set $key" >&2
    debootstrap --variant=minbase bookworm "$dir" "$C960_DEBIAN_MIRROR" >"$C960_DEPLOY_CACHE/debootstrap.log" 2>&1 ||
      { tail -20 "$C960_DEPLOY_CACHE/debootstrap.log" >&2; rm -rf "$dir"; return 1; }
    # As in Debian's bookworm images: the updates and security suites too, and a small image
    # (no package lists, no apt cache).
    cat >"$dir/etc/apt/sources.list" <<SOURCES
deb $C960_DEBIAN_MIRROR bookworm main
deb $C960_DEBIAN_MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
    tar -C "$dir" --numeric-owner -cf "$tar.$$.tmp" . && mv "$tar.$$.tmp" "$tar"
    rm -rf "$dir"
    # The roots of older package sets, and what was made from them.
    find "$C960_DEPLOY_CACHE" -maxdepth 1 -name 'bookworm-*.tar' -not -name "*-$key.tar" -delete
  fi
  echo "$tar"
}

# Starts dockerd unless one answers; records the one it started, so that stop_dockerd stops
# only that one.
start_dockerd() {
  if docker info >/dev/null 2>&1; then return 0; fi
  command -v dockerd >/dev/null || fail "dockerd not found (deploy/install-deps.sh --deploy installs docker.io)"
  log "starting dockerd"
  dockerd --pidfile "$C960_DEPLOY_STATE/dockerd.pid" >"$C960_DEPLOY_STATE/dockerd.log" 2>&1 &
  echo $! >"$C960_DEPLOY_STATE/dockerd.started"
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -20 "$C960_DEPLOY_STATE/dockerd.log" >&2
  fail "dockerd did not start"
}

stop_dockerd() {
  local f="$C960_DEPLOY_STATE/dockerd.started"
  [[ -s "$f" ]] || return 0
  local pid
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping the dockerd this test started (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
  fi
  rm -f "$f"
}

# debian:bookworm-slim from a registry if one can be reached, else made with debootstrap
# (this machine reaches Debian's archive but no container registry). Records an image it made.
ensure_base_image() {
  docker image inspect debian:bookworm-slim >/dev/null 2>&1 && return 0
  if timeout 30 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
    echo debian:bookworm-slim >>"$C960_DEPLOY_STATE/images.made"
    return 0
  fi
  local tar slim
  tar=$(bookworm_rootfs_tar) || fail "debootstrap failed"
  slim=${tar/bookworm-minbase-/bookworm-slim-}
  if [[ ! -s "$slim" ]]; then
    # Slim as Debian's own image: no documentation, manuals or translations, and apt keeps
    # neither downloaded packages nor its caches in the image.
    local dir="$C960_DEPLOY_CACHE/bookworm-slim.$$.tmp"
    rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xf "$tar"
    cat >"$dir/etc/dpkg/dpkg.cfg.d/docker" <<'EXCLUDES'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EXCLUDES
    cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'CLEAN'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CLEAN
    echo 'Acquire::Languages "none";' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
    find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/* "$dir"/usr/share/groff/* \
      "$dir"/usr/share/lintian/*
    tar -C "$dir" --numeric-owner -cf "$slim.$$.tmp" . && mv "$slim.$$.tmp" "$slim"
    rm -rf "$dir"
  fi
  log "importing $slim as debian:bookworm-slim"
  docker import -c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$slim" debian:bookworm-slim >/dev/null
  echo debian:bookworm-slim >>"$C960_DEPLOY_STATE/images.made"
}

# The Swarm stacks of deploy.swarm: the one of compose.yaml and the one of compose-ha.yaml.
C960_TEST_STACKS=(c960test c960ha)

# remove_stacks: removes the test stacks with their containers, networks, volumes and secrets,
# all at once (a stack's containers, networks and volumes go asynchronously: this waits for them).
# Their containers are killed once their services are gone, rather than given their grace
# periods (a worker's drain waits up to 30 s on a coordinator that is stopping too).
remove_stacks() {
  local stack filter
  for stack in "${C960_TEST_STACKS[@]}"; do docker stack rm "$stack" >/dev/null 2>&1 || true; done
  for stack in "${C960_TEST_STACKS[@]}"; do
    docker ps -q --filter "label=com.docker.stack.namespace=$stack" 2>/dev/null | xargs -r docker kill >/dev/null 2>&1 || true
  done
  for stack in "${C960_TEST_STACKS[@]}"; do
    filter="label=com.docker.stack.namespace=$stack"
    for _ in $(seq 60); do
      [[ -z "$(docker ps -aq --filter "$filter" 2>/dev/null)" ]] && break
      sleep 1
    done
    for _ in $(seq 30); do
      [[ -z "$(docker network ls -q --filter "$filter" 2>/dev/null)" ]] && break
      sleep 1
    done
    docker volume ls -q --filter "$filter" 2>/dev/null | xargs -r docker volume rm -f >/dev/null 2>&1 || true
    docker secret ls -q --filter "$filter" 2>/dev/null | xargs -r docker secret rm >/dev/null 2>&1 || true
  done
}

# Removes the images the tests recorded as made, and the build stages' leftovers.
remove_made_images() {
  local f="$C960_DEPLOY_STATE/images.made"
  docker image prune -f --filter label=org.c960.image >/dev/null 2>&1 || true
  if [[ -s "$f" ]]; then
    # Newest first: an image goes before the base it was built on.
    tac "$f" | awk '!seen[$0]++' | while read -r image; do
      docker image rm -f "$image" >/dev/null 2>&1 || true
    done
    rm -f "$f"
  fi
  docker image prune -f --filter label=org.c960.image >/dev/null 2>&1 || true
}

# The systemd units as `cmake --install` writes them (deploy/CMakeLists.txt), into DIR/units
# with their environment files in DIR/default, naming the binaries in BINDIR.
#   render_units DIR BINDIR
render_units() {
  local dir="$1" bindir="$2" unit
  mkdir -p "$dir/units" "$dir/default"
  for unit in c960-coordinator c960-worker; do
    sed -e "s|@C960_BINDIR@|$bindir|g" -e "s|@C960_ENV_DIR@|$dir/default|g" \
      "$ROOT/deploy/systemd/$unit.service.in" >"$dir/units/$unit.service"
    cp "$ROOT/deploy/systemd/$unit.env" "$dir/default/$unit"
    ! grep -q '@' "$dir/units/$unit.service" || fail "$unit.service: an unsubstituted @VARIABLE@"
  done
}

# unit_value FILE KEY: a key's value in a unit or environment file (first match, quotes removed).
unit_value() { sed -n "s/^$2=//p" "$1" | head -n 1 | sed -e 's/^"\(.*\)"$/\1/'; }

# unit_command UNIT_FILE ENV_FILE STATE_ROOT: the unit's ExecStart with the environment file's
# values, one word per line, as systemd splits it (${X} one word, $X split on spaces; an unset
# or empty $X no word at all). %S, the state root, is STATE_ROOT.
unit_command() {
  local line
  line=$(unit_value "$1" ExecStart)
  line=${line//%S/$3}
  while [[ "$line" =~ \$\{?([A-Z0-9_]+)\}? ]]; do
    line=${line/"${BASH_REMATCH[0]}"/$(unit_value "$2" "${BASH_REMATCH[1]}")}
  done
  printf '%s\n' $line
}

# secure_env ENV_FILE ETC_DIR [STATE_DIR]: switches TLS and tokens on as the environment file's
# comment says (its commented C960_SECURITY_FLAGS line replaces the empty one), with /etc/c960 at
# ETC_DIR and /var/lib at STATE_DIR (where a worker keeps the credential it enrolled for).
secure_env() {
  local line
  line=$(grep -E '^#C960_SECURITY_FLAGS=' "$1") || fail "$1: no commented C960_SECURITY_FLAGS line"
  line=${line#\#}
  line=${line//\/etc\/c960/$2}
  [[ -z "${3:-}" ]] || line=${line//\/var\/lib/$3}
  grep -q '^C960_SECURITY_FLAGS=$' "$1" || fail "$1: no empty C960_SECURITY_FLAGS line to replace"
  sed -i "s|^C960_SECURITY_FLAGS=\$|$line|" "$1"
}

# install_secrets SECRETS_DIR ETC_DIR: the files of deploy/make-secrets.sh where the environment
# files look for them under /etc/c960 (here ETC_DIR): tls/ca.crt, tls/coordinator.crt and .key,
# tokens, enroll.token.
install_secrets() {
  mkdir -p "$2/tls"
  cp "$1/ca.crt" "$1/coordinator.crt" "$1/coordinator.key" "$2/tls/"
  cp "$1/tokens" "$1/enroll.token" "$2/"
}

# --- network namespaces: several "machines" on one host (netns_test.sh, failover_test.sh) -----
# netns_remove_stale PREFIX: the namespaces named PREFIX<pid>-... whose test (that pid) no longer
# runs, with anything still running in them.
netns_remove_stale() {
  local ns
  while read -r ns _; do
    if [[ "$ns" =~ ^$1([0-9]+)- ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
      log "removing $ns, left by an earlier run"
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
      ip netns del "$ns" || true
    fi
  done < <(ip netns list)
}
# netns_switch SWITCH NET FIRST PORT HOST...: makes the namespaces SWITCH and HOST..., a bridge
# br0 in SWITCH, and for the k-th HOST (k from 1) a veth eth0 whose other end is port PORTk on the
# bridge, with the address NET.(FIRST + k - 1)/24. Nothing of it lives in the host's namespace, so
# the host's firewall (which may drop forwarded traffic, as Docker's does) never sees these
# packets, and deleting the namespaces removes everything.
netns_switch() {
  local sw=$1 net=$2 first=$3 port=$4 ns k=1
  shift 4
  for ns in "$sw" "$@"; do
    ip netns add "$ns"
    ip netns exec "$ns" ip link set lo up
  done
  ip netns exec "$sw" ip link add br0 type bridge
  ip netns exec "$sw" ip link set br0 up
  for ns in "$@"; do
    ip link add eth0 netns "$ns" type veth peer name "$port$k" netns "$sw"
    ip netns exec "$sw" ip link set "$port$k" master br0 up
    ip netns exec "$ns" ip addr add "$net.$((first + k - 1))/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    k=$((k + 1))
  done
}
# netns_remove TAG NS...: each NS with anything still running in it (nothing should), its veth
# ends and bridge; then fails (status 1, said on stderr) if a namespace named TAG-... is left.
netns_remove() {
  local tag=$1 ns left
  shift
  for ns in "$@"; do
    if grep -qw -- "$ns" <<<"$(ip netns list)"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
      ip netns del "$ns"
    fi
  done
  left=$(ip netns list | grep -- "$tag-")
  [[ -z "$left" ]] || { echo "FAIL: namespaces left: $left" >&2; return 1; }
}
