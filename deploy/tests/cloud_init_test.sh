#!/usr/bin/env bash
# The cloud-init user-data (deploy/cloud-init): valid for `cloud-init schema`; the environment
# file each writes sets exactly the variables of the package's (deploy/systemd/*.env), so the
# unit's command line is complete, with TLS and tokens on as the package's comment offers them
# (the same flags and files), and every file those flags read is fetched from the metadata; its
# shell scripts parse; it installs the package and enables the right unit; and the worker's
# drain grace stays below the unit's stop timeout and a spot VM's 30 s preemption notice.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v cloud-init >/dev/null || fail "cloud-init not found (deploy/install-deps.sh --deploy installs it)"

for role in coordinator worker; do
  file="$ROOT/deploy/cloud-init/$role.yaml"
  out=$(cloud-init schema --config-file "$file" 2>&1) || fail "cloud-init schema $role.yaml: $out"
  grep -q '^Valid cloud-config' <<<"$out" || fail "cloud-init schema $role.yaml: $out"
  log "$out"
  python3 - "$file" "$role" "$ROOT/deploy/systemd/c960-$role.env" "$ROOT/deploy/systemd/c960-$role.service.in" <<'PY'
import re, subprocess, sys, yaml
path, role, env_path, unit_path = sys.argv[1:]
doc = yaml.safe_load(open(path))
def fail(msg):
    sys.exit(f"FAIL: {path}: {msg}")
def keys(text):
    return {m.group(1) for m in re.finditer(r"^([A-Z0-9_]+)=", text, re.M)}
files = {f["path"]: f for f in doc.get("write_files", [])}
env_file = f"/etc/default/c960-{role}"
if env_file not in files:
    fail(f"writes no {env_file}")
written, shipped = keys(files[env_file]["content"]), keys(open(env_path).read())
if written != shipped:
    fail(f"{env_file} sets {sorted(written)}, the package's sets {sorted(shipped)}")
security = re.search(r"^C960_SECURITY_FLAGS=(.*)$", files[env_file]["content"], re.M).group(1).split()
offered = re.search(r"^#C960_SECURITY_FLAGS=(.*)$", open(env_path).read(), re.M).group(1).split()
if security != offered:
    fail(f"C960_SECURITY_FLAGS={' '.join(security)}: want TLS and tokens as the package's comment has them: {' '.join(offered)}")
fetched = set(re.findall(r"^\s*fetch \S+ (\S+)$", "".join(f.get("content", "") for f in files.values()), re.M))
# Every file the flags read is fetched; the credential the worker enrolls for it writes itself.
for path in (a for i, a in enumerate(security) if a.startswith("/") and security[i - 1] != "--credential-file"):
    if path not in fetched:
        fail(f"{path} (C960_SECURITY_FLAGS) is not fetched from the metadata")
for p, f in files.items():
    if f.get("content", "").startswith("#!/bin/sh"):
        r = subprocess.run(["sh", "-n"], input=f["content"], text=True, capture_output=True)
        if r.returncode:
            fail(f"{p} does not parse: {r.stderr}")
runcmd = [c if isinstance(c, str) else " ".join(c) for c in doc.get("runcmd", [])]
if not any("apt-get install" in c and ".deb" in c for c in runcmd):
    fail("runcmd installs no c960 package")
if f"systemctl enable --now c960-{role}" not in runcmd:
    fail(f"runcmd does not enable c960-{role}")
if role == "worker":
    grace = int(re.search(r"^C960_GRACE_SECONDS=(\d+)", files[env_file]["content"], re.M).group(1))
    stop = int(re.search(r"^TimeoutStopSec=(\d+)s?$", open(unit_path).read(), re.M).group(1))
    # Spot VMs get about 30 s between the preemption notice and the power-off.
    if not grace < 30 <= stop:
        fail(f"drain grace {grace}s: want below 30 s, and the unit's TimeoutStopSec ({stop}s) at least 30 s")
print(f"{role}.yaml: {env_file} sets {len(written)} variables like the package's, TLS and tokens on, their {len(fetched)} files fetched; scripts parse; installs and enables c960-{role}")
PY
done
echo "cloud_init_test: 1 passed, 0 failed"
