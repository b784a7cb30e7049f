#!/usr/bin/env python3
"""Runs the command examples of README.md and docs/cluster.md, as written, at small sizes.

    tests/docs/docs_examples_test.py BUILD_DIR [--keep]

Every ```sh block of the two files is read; each command in it is run by bash with the built
binaries first on PATH, in a scratch directory, and must exit 0. Only three kinds of change are
made, all listed below so that a reader can see what "as written" means here:
  - sizes shrink (SIZES: depths, games, nodes, position ranges), so that the whole run takes
    seconds;
  - placeholders get values (placeholders(): HOST, the ports 7960 and 7961, JOB, "FEN",
    /var/lib/...), JOB being the id the last `c960 submit` printed as its last word;
  - daemons (c960-coordinator, c960-worker) run in the background on an ephemeral loopback port,
    two workers for each worker line (the docs say "two at least"), each with its own
    --credential-file (two machines), stopped at the end.
Blocks or lines that cannot run here are listed in SKIPPED with the reason. A command that
fails names its file and line. Exit status: 0 all ran, 1 one failed, 2 bad usage.
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md", "docs/cluster.md"]

# Lines (by their first words) not run here, and why.
SKIPPED = [
    ("./deploy/", "the project's install/build/test entry points: CI runs them"),
    ("deploy/run-cluster.sh", "the main command (deploy/run.sh) runs it in CI"),
    ("cmake ", "building: CI does it"),
    ("ctest ", "testing: CI does it"),
    ("build/release/bench/", "benchmarks take minutes"),
    ("bench/", "benchmarks take minutes"),
    ("c960-coordinator ... ", "an elided command line"),
    ("curl -s http://127.0.0.1:7961", "needs the elided coordinator above"),
    ("c960 report --from selfplay.csv --reference other.csv", "needs a reference table of the reader's"),
]

# Sizes: (regex, replacement), applied in order.
SIZES = [
    (r"--depth [5-9]\b", "--depth 2"),
    (r"--depth 1[0-9]\b", "--depth 2"),
    (r"--depth 4\b", "--depth 3"),
    (r"--max-depth [3-9]\b", "--max-depth 2"),
    (r"--sps 0-959\b", "--sps 0-2"),
    (r"--sps 0-9,518\b", "--sps 0,518"),
    (r"--sps 0-9\b", "--sps 0-1"),
    (r"--games-per-position [0-9]+", "--games-per-position 2"),
    (r"--nodes [0-9]+", "--nodes 300"),
    (r"--random 20\b", "--random 2"),
    (r"--hash [0-9]+", "--hash 16"),
    (r"--threads \$\(nproc\)", "--threads 1"),
    (r"--games-per-unit [0-9]+", "--games-per-unit 1"),
]

# "FEN" is followed by moves from the initial position in the README (e2e4 e7e5).
FEN1 = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
FEN2 = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"


def placeholders(line, port, http_port):
    line = line.replace('"FEN 1" "FEN 2"', f'"{FEN1}" "{FEN2}"').replace('"FEN"', f'"{FEN1}"')
    line = line.replace("/var/lib/c960/coordinator.db", "coordinator.db")
    line = line.replace("0.0.0.0:7960", f"127.0.0.1:{port}").replace("0.0.0.0:7961", f"127.0.0.1:{http_port}")
    line = line.replace("HOST:7960", f"localhost:{port}").replace("HOST:7961", f"localhost:{http_port}")
    line = line.replace("--hosts HOST", "--hosts localhost,127.0.0.1")
    # docs/cluster.md's hand-made certificate names these; here they are the loopback.
    line = line.replace("coord.example.org", "localhost").replace("203.0.113.7", "127.0.0.1")
    line = line.replace("127.0.0.1:7961", "127.0.0.1:0")
    return re.sub(r"\bJOB\b(?!=)", "$JOB", line)  # JOB=$(...) sets it


def sh_blocks(path):
    """The ```sh blocks of a file, in order: (the heading above the block, [(line number, command)]),
    comments dropped, continuations joined."""
    blocks, out, block, pending, start, heading, fenced = [], [], False, "", 0, "", False
    with open(os.path.join(ROOT, path)) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("```"):
                if block:
                    blocks.append((heading, out))
                    out = []
                block = line.strip() == "```sh" if not block else False
                fenced = not fenced
                continue
            if not block:
                if line.startswith("#") and not fenced:
                    heading = line.strip()
                continue
            # A comment: '#' at the start or after whitespace, outside quotes.
            code, quote = [], None
            for i, c in enumerate(line):
                if quote:
                    quote = None if c == quote else quote
                elif c in "\"'":
                    quote = c
                elif c == "#" and (i == 0 or line[i - 1].isspace()):
                    break
                code.append(c)
            code = "".join(code).rstrip()
            if not pending:
                start = n
            if code.endswith("\\"):
                pending += code[:-1] + " "
                continue
            cmd = (pending + code).strip()
            pending = ""
            if cmd:
                out.append((start, cmd))
    return blocks


def commands(path):
    """(line number, command) of every ```sh block (sh_blocks); blocks that make certificates first
    (docs/cluster.md uses them before it shows how they are made)."""
    blocks = [b for _, b in sh_blocks(path)]
    makes_certificates = [b for b in blocks if any(c.startswith("openssl req -x509") for _, c in b)]
    return [c for b in makes_certificates + [b for b in blocks if b not in makes_certificates] for c in b]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = [a for a in sys.argv[1:] if a != "--keep"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    bins = [os.path.join(build, d) for d in ("cli", "coordinator", "worker")]
    if not all(os.path.isdir(b) for b in bins):
        print(f"docs_examples_test: {build} is not a build folder", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="c960-docs-")
    env = dict(os.environ, PATH=os.pathsep.join(bins + [os.environ.get("PATH", "")]))
    for k in ("C960_COORDINATOR", "C960_TLS_CA", "C960_TOKEN", "C960_TOKEN_FILE"):
        env.pop(k, None)
    daemons, failures, ran = [], [], 0
    try:
        for doc in DOCS:
            # Each file is one session: its exports and files carry from block to block.
            session = os.path.join(work, doc.replace("/", "_"))
            os.makedirs(session)
            shutil.copytree(os.path.join(ROOT, "tests"), os.path.join(session, "tests"), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.cpp", "*.h"))
            shutil.copytree(os.path.join(ROOT, "deploy"), os.path.join(session, "deploy"))
            port, http_port = free_port(), free_port()
            senv = dict(env)
            job = None
            for n, cmd in commands(doc):
                where = f"{doc}:{n}"
                skip = next((why for prefix, why in SKIPPED if cmd.startswith(prefix)), None)
                if skip:
                    print(f"skip {where}: {cmd[:60]} ({skip})")
                    continue
                line = placeholders(cmd, port, http_port)
                for pattern, repl in SIZES:
                    line = re.sub(pattern, repl, line)
                if "$JOB" in line:
                    if not job:
                        failures.append(f"{where}: JOB before any submit: {cmd}")
                        continue
                    senv["JOB"] = job
                words = shlex.split(line)
                assignment = re.match(r"([A-Z_][A-Z0-9_]*)=", line)
                if words and (words[0] == "export" or assignment):
                    # Evaluated by bash so that $(...) works, then kept for the session (JOB=$(c960
                    # submit ... --quiet) names the job the next lines use).
                    exported = line if words[0] == "export" else f"export {line}"
                    r = subprocess.run(["bash", "-c", f"{exported} && env -0"], cwd=session, env=senv,
                                       capture_output=True, text=True, timeout=180)
                    ran += 1
                    if r.returncode != 0:
                        failures.append(f"{where}: exit {r.returncode}: {line}\n{r.stderr[-2000:]}")
                        print(f"FAIL {where}: {line[:100]}")
                        continue
                    senv = dict(kv.split("=", 1) for kv in r.stdout.split("\0") if "=" in kv)
                    if assignment and assignment.group(1) == "JOB":
                        job = senv.get("JOB") or None
                    print(f"ok   {where}: {line[:100]}")
                    continue
                if words and words[0] in ("c960-coordinator", "c960-worker"):
                    extra = []
                    if words[0] == "c960-coordinator":
                        extra = ["--port-file", "port"]
                        if os.path.exists(os.path.join(session, "port")):
                            os.remove(os.path.join(session, "port"))
                    copies = 1 if words[0] == "c960-coordinator" else 2
                    for i in range(copies):
                        w = list(words) + extra
                        if words[0] == "c960-worker":
                            # The docs' self-play example names an engine the workers offer.
                            w += ["--name", f"docs-{i}", "--engine", "sf=/usr/games/stockfish"]
                            # Two machines, each with its own credential file.
                            if "--credential-file" in w:
                                k = w.index("--credential-file") + 1
                                w[k] = f"{w[k]}.{i}"
                        log = open(os.path.join(session, f"{words[0]}-{len(daemons)}.log"), "w")
                        daemons.append(subprocess.Popen(w, cwd=session, env=senv, stdout=log, stderr=log,
                                                        stdin=subprocess.DEVNULL, start_new_session=True))
                    if words[0] == "c960-coordinator":
                        for _ in range(200):
                            if os.path.exists(os.path.join(session, "port")) or daemons[-1].poll() is not None:
                                break
                            time.sleep(0.05)
                        if daemons[-1].poll() is not None:
                            failures.append(f"{where}: the coordinator exited: {cmd}")
                    ran += 1
                    print(f"ok   {where}: {line[:100]} (in the background)")
                    continue
                r = subprocess.run(["bash", "-c", line], cwd=session, env=senv, capture_output=True, text=True,
                                   timeout=180)
                ran += 1
                if r.returncode != 0:
                    failures.append(f"{where}: exit {r.returncode}: {line}\n{r.stderr[-2000:]}")
                    print(f"FAIL {where}: {line[:100]}")
                    continue
                print(f"ok   {where}: {line[:100]}")
                if words[:2] == ["c960", "submit"]:
                    last = r.stdout.split()
                    job = last[-1] if last else None
            for d in daemons:
                if d.poll() is None:
                    os.killpg(d.pid, signal.SIGTERM)
            for d in daemons:
                try:
                    d.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    os.killpg(d.pid, signal.SIGKILL)
                    d.wait()
            daemons = []
    finally:
        for d in daemons:
            if d.poll() is None:
                os.killpg(d.pid, signal.SIGKILL)
                d.wait()
        if "--keep" in sys.argv:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{ran} commands ran, {len(failures)} failed")
    for f in failures:
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
