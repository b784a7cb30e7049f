#!/usr/bin/env python3
"""Follows the TLS section of README.md ("## The cluster") as written, on one machine.

    tests/docs/readme_tls_test.py BUILD_DIR [--readme FILE] [--keep]

docs.examples runs every example of the docs at small sizes, with stand-ins of its own for the
coordinator's database and the certificate's host names. This test runs the first ```sh block
under "## The cluster" as a person would, in a scratch directory with the built binaries first on
PATH, and changes only what cannot be the same on a test machine (all of it in follow() below):
  - HOST is localhost; the ports 7960 and 7961 are ephemeral loopback ports (the coordinator
    listens on 127.0.0.1, port 0, and writes the ports it got to files);
  - perft's depth 7 is depth 2, and the workers' --threads $(nproc) --hash 256 are --threads 1
    --hash 16 (two workers share this machine);
  - JOB is the id the last `c960 submit` printed as its last word;
  - the worker line runs twice (the README says two at least), each with its own
    --credential-file (two machines).
Every command must exit 0, and what they say is checked: the certificate names localhost,
127.0.0.1 and ::1 (make-secrets.sh's --hosts adds to its defaults), `c960 status` by 127.0.0.1
works too, watch ends with the job SUCCEEDED, the CSV holds perft(2) of the 960 positions, status
lists the job, and the block's curl of the dashboard over HTTPS gets c960's metrics. Every process
started is stopped, also on failure. Exit status: 0 passed, 1 failed, 2 bad usage.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_examples_test import ROOT, sh_blocks  # noqa: E402

HEADING = "## The cluster"


def tls_block(readme):
    for heading, block in sh_blocks(readme):
        if heading == HEADING:
            return block
    return None


def follow(line, ports):
    """The README's line as this machine runs it (the module's docstring lists every change)."""
    if line.startswith("c960-coordinator"):
        line = re.sub(r"\b(?:0\.0\.0\.0|HOST):796[01]\b", "127.0.0.1:0", line)
        line += " --port-file port --http-port-file http-port"
    if "port" in ports:
        line = line.replace("HOST:7960", f"localhost:{ports['port']}")
    if "http-port" in ports:
        line = line.replace("HOST:7961", f"localhost:{ports['http-port']}")
    line = re.sub(r"\bHOST\b", "localhost", line)
    line = re.sub(r"--depth [3-9]\b", "--depth 2", line)
    line = line.replace("--threads $(nproc)", "--threads 1")
    line = re.sub(r"--hash [0-9]+", "--hash 16", line)
    return re.sub(r"\bJOB\b(?!=)", "$JOB", line)


class Run:
    def __init__(self, build, work):
        bins = [os.path.join(build, d) for d in ("cli", "coordinator", "worker")]
        self.env = dict(os.environ, PATH=os.pathsep.join(bins + [os.environ.get("PATH", "")]))
        for k in ("C960_COORDINATOR", "C960_TLS_CA", "C960_TLS_CERT", "C960_TLS_KEY", "C960_TOKEN",
                  "C960_TOKEN_FILE"):
            self.env.pop(k, None)
        self.work = work
        self.daemons = []
        self.failures = []
        self.outputs = []  # (README line, its line as run, stdout)

    def fail(self, where, why):
        self.failures.append(f"{where}: {why}")
        print(f"FAIL {where}: {why.splitlines()[0] if why else ''}")

    def start(self, line, name):
        log = open(os.path.join(self.work, f"{name}-{len(self.daemons)}.log"), "w")
        p = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=self.work, env=self.env, stdout=log,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.daemons.append(p)
        return p

    def log(self, name):
        out = []
        for f in sorted(os.listdir(self.work)):
            if f.startswith(name) and f.endswith(".log"):
                with open(os.path.join(self.work, f)) as fh:
                    out.append(f"--- {f}\n{fh.read()[-3000:]}")
        return "\n".join(out)

    def run(self, line, timeout=90):
        return subprocess.run(["bash", "-c", line], cwd=self.work, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def stop(self):
        for d in self.daemons:
            if d.poll() is None:
                os.killpg(d.pid, signal.SIGTERM)
        for d in self.daemons:
            try:
                d.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(d.pid, signal.SIGKILL)
                d.wait()
        self.daemons = []


def follow_readme(r, block, readme):
    ports, job = {}, None
    for n, cmd in block:
        where = f"{readme}:{n}"
        line = follow(cmd, ports)
        if "$JOB" in line:
            if not job:
                r.fail(where, f"JOB before any submit: {cmd}")
                continue
            r.env["JOB"] = job
        if cmd.startswith("c960-coordinator"):
            p = r.start(line, "coordinator")
            files = ["port"] + (["http-port"] if "--http-listen" in line else [])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and p.poll() is None and not all(
                    os.path.exists(os.path.join(r.work, f)) for f in files):
                time.sleep(0.05)
            time.sleep(0.1)  # each file is written once serving; give the second its moment
            for f in files:
                path = os.path.join(r.work, f)
                if os.path.exists(path):
                    with open(path) as fh:
                        ports[f] = fh.read().strip()
            if p.poll() is not None or len(ports) < len(files):
                r.fail(where, f"the coordinator did not start: {line}\n{r.log('coordinator')}")
                return
            print(f"ok   {where}: {line[:100]} (in the background, ports {', '.join(ports.values())})")
            continue
        if cmd.startswith("c960-worker"):
            for i in range(2):
                r.start(re.sub(r"(--credential-file \S+)", rf"\g<1>.{i}", line), "worker")
            print(f"ok   {where}: {line[:100]} (two, in the background)")
            continue
        if cmd.startswith("export "):
            p = r.run(f"{line} && env -0")
            if p.returncode != 0:
                r.fail(where, f"exit {p.returncode}: {line}\n{p.stderr[-2000:]}")
                continue
            r.env = dict(kv.split("=", 1) for kv in p.stdout.split("\0") if "=" in kv)
            print(f"ok   {where}: {line[:100]}")
            continue
        try:
            p = r.run(line)
        except subprocess.TimeoutExpired:
            r.fail(where, f"timed out: {line}\n{r.log('worker')}")
            continue
        if p.returncode != 0:
            r.fail(where, f"exit {p.returncode}: {line}\n{p.stdout[-1000:]}{p.stderr[-2000:]}")
            continue
        print(f"ok   {where}: {line[:100]}")
        r.outputs.append((cmd, line, p.stdout))
        if cmd.startswith("c960 submit"):
            words = p.stdout.split()
            job = words[-1] if words else None


def check_outcome(r, block):
    """What the commands said, beyond their exit status."""
    def output_of(prefix):
        return next((out for cmd, _, out in r.outputs if cmd.startswith(prefix)), None)

    san = r.run("openssl x509 -in secrets/coordinator.crt -noout -ext subjectAltName")
    for name in ("DNS:localhost", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1", "DNS:coordinator"):
        if name not in san.stdout:
            r.fail("secrets/coordinator.crt", f"the certificate does not name {name}: {san.stdout}{san.stderr}")
    watch = output_of("c960 watch")
    if watch is None or "SUCCEEDED" not in watch:
        r.fail("c960 watch", f"the job did not end SUCCEEDED: {watch}")
    csv_name = next((m.group(1) for cmd, _, _ in r.outputs for m in [re.search(r"--out (\S+\.csv)", cmd)] if m), None)
    if not csv_name:
        r.fail(HEADING, "no `c960 results JOB --format csv --out FILE` line")
    else:
        path = os.path.join(r.work, csv_name)
        rows = open(path).read().splitlines() if os.path.exists(path) else []
        if len(rows) != 961 or rows[0] != "sp,fen,depth,nodes" or not any(
                row.startswith("518,") and row.endswith(",2,400") for row in rows):
            r.fail(csv_name, f"not perft(2) of the 960 positions: {len(rows)} lines, {rows[:2]}")
    status = output_of("c960 status")
    if status is None or r.env.get("JOB", "?") not in status:
        r.fail("c960 status", f"does not list the job {r.env.get('JOB')}: {status}")
    curls = [(cmd, out) for cmd, _, out in r.outputs if cmd.startswith("curl ")]
    if not any(c.startswith("curl ") and "https://HOST:7961" in c for _, c in block):
        r.fail(HEADING, "no curl of the dashboard over https://HOST:7961 (it serves HTTPS with --tls-cert)")
    for cmd, out in curls:
        if "/metrics" in cmd and "c960_" not in out:
            r.fail(cmd, f"no c960 metrics in the answer: {out[:300]}")


def main():
    args = sys.argv[1:]
    keep = "--keep" in args
    args = [a for a in args if a != "--keep"]
    readme = "README.md"
    if "--readme" in args:
        i = args.index("--readme")
        if i + 1 >= len(args):
            print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
            return 2
        readme = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    if not all(os.path.isdir(os.path.join(build, d)) for d in ("cli", "coordinator", "worker")):
        print(f"readme_tls_test: {build} is not a build folder", file=sys.stderr)
        return 2
    block = tls_block(readme)
    if not block:
        print(f"FAILED {readme}: no ```sh block under '{HEADING}'", file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="c960-readme-tls-")
    shutil.copytree(os.path.join(ROOT, "deploy"), os.path.join(work, "deploy"))
    r = Run(build, work)
    t0 = time.monotonic()
    try:
        follow_readme(r, block, readme)
        if not r.failures:
            # A first try on one machine by address: the certificate names 127.0.0.1 too.
            port = open(os.path.join(work, "port")).read().strip()
            p = r.run(f"c960 status --coordinator 127.0.0.1:{port}")
            if p.returncode != 0:
                r.fail("c960 status --coordinator 127.0.0.1:PORT", f"exit {p.returncode}: {p.stderr[-1000:]}")
            check_outcome(r, block)
    finally:
        r.stop()
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(block)} lines of {readme} '{HEADING}' followed in {time.monotonic() - t0:.1f} s, "
          f"{len(r.failures)} failures")
    for f in r.failures:
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
