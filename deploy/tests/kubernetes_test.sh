#!/usr/bin/env bash
# The Kubernetes manifests (deploy/kubernetes), offline: no cluster runs here. `kubectl
# kustomize` renders the base, then the render is checked for what can be checked without a
# cluster: every flag the containers pass exists in the binary's --help; the ports of the
# coordinator's --listen, container, Service, probes and the workers' --coordinator agree; the
# workers' termination grace period is longer than their drain; one image for all containers;
# TLS and tokens on (the coordinator's --tls-cert, --tls-key, --tokens; the workers' --tls-ca,
# --enroll-token-file); every file a flag or probe reads lies in a mounted Secret, required (not
# optional), readable by the pod's group, and created by docs/deploy.md with that file as a key;
# the probes run c960-healthcheck over TLS against the coordinator's port (the kubelet's gRPC
# probe cannot do TLS); non-root as the Dockerfile's user, read-only root file system, requests
# and limits everywhere; the PodDisruptionBudget and the HorizontalPodAutoscaler select the
# workers.
#   deploy/tests/kubernetes_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
build="$(cd "${1:?usage: kubernetes_test.sh BUILD_DIR}" && pwd)"
command -v kubectl >/dev/null || fail "kubectl not found (deploy/install-deps.sh --deploy installs kubernetes-client)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kubectl kustomize "$ROOT/deploy/kubernetes" >"$work/base.yaml" 2>"$work/kustomize.err" ||
  fail "kubectl kustomize: $(cat "$work/kustomize.err")"
log "kubectl kustomize deploy/kubernetes: $(grep -c '^kind:' "$work/base.yaml") objects"
for b in coordinator/c960-coordinator worker/c960-worker tools/healthcheck/c960-healthcheck; do
  { "$build/$b" --help 2>&1 || true; "$build/$b" --helpfull 2>&1 || true; } |
    grep -oE -- '--[a-z][a-z0-9_-]*' | tr _ - | sort -u >"$work/${b##*/}.flags"
done
uid=$(sed -n 's/^USER \([0-9]*\):.*/\1/p' "$ROOT/deploy/docker/Dockerfile")

python3 - "$work" "$ROOT" "$uid" <<'PY'
import re, sys, yaml
work, root, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [d for d in yaml.safe_load_all(open(f"{work}/base.yaml")) if d]
hpa = yaml.safe_load(open(f"{root}/deploy/kubernetes/extras/hpa.yaml"))
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)
def one(kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    check(len(found) == 1, f"want one {kind} {name}, found {len(found)}")
    return found[0] if found else {}
flags = {b: set(open(f"{work}/c960-{b}.flags").read().split()) for b in ("coordinator", "worker", "healthcheck")}
doc = open(f"{root}/docs/deploy.md").read()
# The keys each Secret gets in docs/deploy.md: kubectl create secret generic NAME --from-file=KEY[=PATH] ...
created = {}
for m in re.finditer(r"kubectl create secret generic (\S+)((?: --from-file=\S+)+)", doc):
    created[m.group(1)] = {f.split("=", 2)[1] for f in m.group(2).split()}
def arg(args, name):
    vals = [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]
    check(len(vals) == 1, f"want one {name}=... in {args}")
    return vals[0] if vals else ""

sts = one("StatefulSet", "c960-coordinator")
dep = one("Deployment", "c960-worker")
svc = one("Service", "c960-coordinator")
headless = one("Service", "c960-coordinator-headless")
pdb = one("PodDisruptionBudget", "c960-worker")
check(sts["spec"]["replicas"] == 1, "the coordinator StatefulSet must have exactly one replica")
check(sts["spec"]["serviceName"] == "c960-coordinator-headless" and headless["spec"].get("clusterIP") == "None",
      "the StatefulSet's serviceName must be the headless Service")
claims = sts["spec"].get("volumeClaimTemplates", [])
check([c["metadata"]["name"] for c in claims] == ["data"], "want one volume claim 'data' for the SQLite file")

images = set()
for workload, binary in ((sts, "coordinator"), (dep, "worker")):
    pod = workload["spec"]["template"]["spec"]
    labels = workload["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in workload["spec"]["selector"]["matchLabels"].items()),
          f"{binary}: the selector does not match the pod's labels")
    sc = pod.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == uid and sc.get("runAsGroup") == uid,
          f"{binary}: want runAsNonRoot as user {uid} (the Dockerfile's USER)")
    (c,) = pod["containers"]
    images.add(c["image"])
    args = c["args"]
    check(args[0] == f"c960-{binary}", f"{binary}: runs {args[0]}")
    for a in args[1:]:
        f = a.split("=", 1)[0]
        check(f in flags[binary], f"{binary}: {f} is not in c960-{binary} --help")
    csc = c.get("securityContext", {})
    check(csc.get("readOnlyRootFilesystem") is True, f"{binary}: root file system not read-only")
    check(csc.get("allowPrivilegeEscalation") is False, f"{binary}: privilege escalation allowed")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], f"{binary}: capabilities not all dropped")
    res = c.get("resources", {})
    check(all(k in res.get(r, {}) for r in ("requests", "limits") for k in ("cpu", "memory")),
          f"{binary}: cpu and memory requests and limits wanted")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    secrets = {v["name"]: v["secret"] for v in pod.get("volumes", []) if "secret" in v}
    # Every file a flag or a probe names: in a mounted Secret that docs/deploy.md creates with it.
    probes = [c.get(p, {}).get("exec", {}).get("command", []) for p in ("readinessProbe", "livenessProbe")]
    files = [a.split("=", 1)[1] for a in args[1:] + [a for p in probes for a in p[1:]]
             if a.startswith("--") and "=" in a and a.split("=", 1)[1].startswith("/etc/")]
    used = set()
    for f in files:
        vol = [n for n, path in mounts.items() if n in secrets and f.startswith(path + "/")]
        check(len(vol) == 1, f"{binary}: {f} is in no mounted Secret")
        if vol:
            used.add(vol[0])
            name, key = secrets[vol[0]]["secretName"], f[len(mounts[vol[0]]) + 1:]
            check(name in created, f"docs/deploy.md does not create Secret {name}")
            check(key in created.get(name, {key}), f"{binary}: reads {f}, but docs/deploy.md creates {name} without the key {key}")
    for n, sec in secrets.items():
        check(n in used, f"{binary}: Secret {sec['secretName']} is mounted but no flag reads it")
        check(sec.get("optional") is not True, f"{binary}: Secret {sec['secretName']} must not be optional (TLS and tokens are required)")
        check(pod.get("securityContext", {}).get("fsGroup") == uid and (sec.get("defaultMode", 0o644) & 0o040),
              f"{binary}: Secret {sec['secretName']}: want fsGroup {uid} and a group-readable defaultMode")
    for v in pod.get("volumes", []):
        if v["name"] == "tmp":
            check("emptyDir" in v, f"{binary}: /tmp should be an emptyDir")
    if binary == "coordinator":
        listen_port = int(arg(args, "--listen").rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        check(ports.get("grpc") == listen_port, f"coordinator: containerPort {ports} vs --listen port {listen_port}")
        for a in ("--tls-cert", "--tls-key", "--tokens"):
            arg(args, a)  # exactly one each: TLS and tokens on
        for probe in ("readinessProbe", "livenessProbe"):
            cmd = c.get(probe, {}).get("exec", {}).get("command", [])
            check(cmd[:1] == ["c960-healthcheck"], f"coordinator: {probe} must run c960-healthcheck (exec)")
            if cmd[:1] == ["c960-healthcheck"]:
                for a in cmd[1:]:
                    check(a.split("=", 1)[0] in flags["healthcheck"], f"coordinator: {probe}: {a} is not in c960-healthcheck --help")
                check(arg(cmd, "--addr") == f"127.0.0.1:{listen_port}", f"coordinator: {probe} must ask 127.0.0.1:{listen_port}")
                check(arg(cmd, "--tls-ca") == arg(args, "--tls-cert").rsplit("/", 1)[0] + "/ca.crt",
                      f"coordinator: {probe} must trust the CA beside the coordinator's certificate")
                check(float(arg(cmd, "--timeout")) < c[probe].get("timeoutSeconds", 1),
                      f"coordinator: {probe}: --timeout must end before the probe's timeoutSeconds")
        check(mounts.get("data") == arg(args, "--db").rsplit("/", 1)[0], "coordinator: --db is not on the data volume")
        grace = pod["terminationGracePeriodSeconds"]
        check(grace >= 10, "coordinator: grace period too short")
    else:
        host, port = arg(args, "--coordinator").rsplit(":", 1)
        check(host == svc["metadata"]["name"], f"worker: --coordinator host {host} is not the Service")
        sp = {p["name"]: p for p in svc["spec"]["ports"]}
        check(sp.get("grpc", {}).get("port") == int(port), f"worker: --coordinator port {port} is not the Service's")
        check(sp.get("grpc", {}).get("targetPort") == "grpc", "Service: targetPort must be the named port grpc")
        drain = int(arg(args, "--grace-seconds"))
        check(pod["terminationGracePeriodSeconds"] >= drain + 10,
              f"worker: terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} not above the drain {drain} s")
        check("$(C960_THREADS)" in arg(args, "--threads"), "worker: --threads should follow the CPU limit")
        for a in ("--tls-ca", "--enroll-token-file", "--credential-file"):
            arg(args, a)  # exactly one each: TLS, the join token, and where its own credential is kept
        check(arg(args, "--credential-file").rsplit("/", 1)[0] in
              {path for n, path in mounts.items() if any(v["name"] == n and "emptyDir" in v for v in pod["volumes"])},
              "worker: --credential-file must lie in an emptyDir (the read-only root holds nothing)")
        check(pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"],
              "the PodDisruptionBudget does not select the workers")
        ref = hpa["spec"]["scaleTargetRef"]
        check(ref["kind"] == "Deployment" and ref["name"] == dep["metadata"]["name"], "the HPA does not scale the workers")
check(svc["spec"]["selector"].items() <= sts["spec"]["template"]["metadata"]["labels"].items(),
      "the Service does not select the coordinator")
check(len(images) == 1, f"one image for all containers, found {images}")
if errors:
    sys.exit("FAIL:\n  " + "\n  ".join(errors))
print(f"render checked: image {images.pop()}, user {uid}, ports, grace periods, flags, TLS and tokens from Secrets, exec probes over TLS, PDB, HPA")
PY
# The standby overlay (deploy/kubernetes-ha): two coordinators on PostgreSQL, ready only while
# leading, alive while their port answers; the SQLite StatefulSet gone; the database's password
# from a required Secret that docs/deploy.md creates; every flag in the binaries' --help.
kubectl kustomize "$ROOT/deploy/kubernetes-ha" >"$work/ha.yaml" 2>"$work/kustomize-ha.err" ||
  fail "kubectl kustomize deploy/kubernetes-ha: $(cat "$work/kustomize-ha.err")"
python3 - "$work" "$ROOT" <<'PY'
import re, sys, yaml
work, root = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(f"{work}/ha.yaml")) if d]
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)
flags = {b: set(open(f"{work}/c960-{b}.flags").read().split()) for b in ("coordinator", "healthcheck")}
byname = {(d["kind"], d["metadata"]["name"]): d for d in docs}
check(("StatefulSet", "c960-coordinator") not in byname, "ha: the SQLite StatefulSet must be gone")
dep = byname.get(("Deployment", "c960-coordinator"), {})
check(dep.get("spec", {}).get("replicas") == 2, "ha: the coordinator Deployment must have two replicas")
pod = dep.get("spec", {}).get("template", {}).get("spec", {})
c = (pod.get("containers") or [{}])[0]
args = c.get("args", [])
for a in args[1:]:
    check(a.split("=", 1)[0] in flags["coordinator"], f"ha: {a} is not in c960-coordinator --help")
vals = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args[1:] if "=" in a}
check(vals.get("--db", "").startswith("postgresql://"), "ha: --db must name a PostgreSQL database")
check("@" in vals.get("--db", "") and ":" not in vals.get("--db", "").split("@")[0].split("//")[1],
      "ha: --db must not carry a password")
check(vals.get("--advertise", "") == "$(POD_IP):7960", "ha: --advertise must be the pod's address")
check(any(e.get("name") == "POD_IP" and e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP"
          for e in c.get("env", [])), "ha: POD_IP must come from status.podIP")
mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
pw = vals.get("--db-password-file", "")
vol = [v for v in pod.get("volumes", []) if mounts.get(v["name"]) == pw.rsplit("/", 1)[0]]
check(len(vol) == 1 and "secret" in vol[0] and not vol[0]["secret"].get("optional", False),
      "ha: --db-password-file must lie in a required Secret")
doc = open(f"{root}/docs/deploy.md").read()
if vol:
    name = vol[0]["secret"]["secretName"]
    check(re.search(rf"kubectl create secret generic {name} --from-file={pw.rsplit('/', 1)[1]}=", doc) is not None,
          f"ha: docs/deploy.md must create the Secret {name} with the key {pw.rsplit('/', 1)[1]}")
ready = c.get("readinessProbe", {}).get("exec", {}).get("command", [])
check(ready[:1] == ["c960-healthcheck"], "ha: readiness must ask the health service (a standby is NOT_SERVING)")
check("exec" not in c.get("livenessProbe", {}) and "tcpSocket" in c.get("livenessProbe", {}),
      "ha: liveness must not ask the health service (it would restart every standby)")
pdb = byname.get(("PodDisruptionBudget", "c960-coordinator"), {})
check(pdb.get("spec", {}).get("selector", {}).get("matchLabels") == dep.get("spec", {}).get("selector", {}).get("matchLabels"),
      "ha: a PodDisruptionBudget must select the coordinators")
svc = byname.get(("Service", "c960-coordinator"), {})
check(svc.get("spec", {}).get("selector", {}).items() <= dep.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {}).items(),
      "ha: the Service must select the coordinators")
check(("StatefulSet", "c960-postgres") in byname, "ha: the trial PostgreSQL must be there")
if errors:
    sys.exit("FAIL:\n  " + "\n  ".join(errors))
print("ha overlay checked: two coordinators on PostgreSQL, readiness on leadership, liveness on the port, the password from a Secret")
PY
echo "kubernetes_test: 1 passed, 0 failed"
