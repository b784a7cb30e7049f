#!/usr/bin/env bash
# clang-tidy (clang-tidy-14, the checks of .clang-tidy) over the project's own sources: every
# tracked .cpp but the tests' and benchmarks', with the compile commands of the release build
# (build/release/compile_commands.json: run deploy/build.sh release first). Fails on any finding.
#   deploy/tidy.sh [FILE ...]      the named sources only
# C960_TIDY_JOBS: parallel clang-tidy processes (default 2); C960_TIDY_BUILD: the build folder.
# A source found clean is remembered (C960_TIDY_CACHE, default ~/.cache/c960-tidy; "0": none) by
# a hash of what clang-tidy reads: its version, .clang-tidy, the compile command and the
# preprocessed source with every header it includes, paths under the clone taken relative to it.
# Only sources whose hash is new are checked again, so that a CI run checks what changed since the
# last one, wherever its clone lies.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${C960_TIDY_BUILD:-build/release}"
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
if [[ -z "$tidy" ]]; then
  echo "tidy: clang-tidy not found (deploy/install-deps.sh installs it)" >&2
  exit 2
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "tidy: $build/compile_commands.json is missing: configure the release build (deploy/build.sh release)" >&2
  exit 2
fi
if (($# > 0)); then
  files=("$@")
else
  # The sources that include report/json.h are left out: clang 14 with libstdc++ 12 refuses its
  # std::pair of the still incomplete JsonValue, which GCC accepts.
  mapfile -t files < <(git ls-files '*.cpp' | grep -Ev '^(tests|bench)/' | grep -vxE 'report/(json|tables)\.cpp')
fi
exec python3 - "$tidy" "$build/compile_commands.json" "${C960_TIDY_JOBS:-2}" \
  "${C960_TIDY_CACHE:-$HOME/.cache/c960-tidy}" "$#" "${files[@]}" <<'EOF'
import concurrent.futures, hashlib, json, os, re, shlex, subprocess, sys, tempfile, time

tidy, db_path, jobs, cache, named = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
files = sys.argv[6:]
root = os.getcwd()
start = time.monotonic()

# The compile commands without GCC's profile-guided flags (clang reads other profiles) and with
# GCC's constexpr limit in clang's words (core/bitboard.cpp's tables are made at compile time), in
# a folder of their own; the sources that have a command there are the ones checked.
entries = json.load(open(db_path))
commands = {}
for e in entries:
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    e.pop("command", None)
    gcc = [a for a in args if not a.startswith("-fprofile-")]
    e["arguments"] = [a.replace("-fconstexpr-ops-limit=", "-fconstexpr-steps=") for a in gcc]
    path = os.path.normpath(os.path.join(e["directory"], e["file"]))
    commands[os.path.relpath(path, root)] = (e, gcc)
sources = []
for f in files:
    if f in commands:
        sources.append(f)
    elif named:
        sys.exit(f"tidy: {f}: not in {db_path}")
work = tempfile.mkdtemp()
json.dump(entries, open(os.path.join(work, "compile_commands.json"), "w"))

version = subprocess.run([tidy, "--version"], capture_output=True, text=True, check=True).stdout
config = open(".clang-tidy").read()


def key(source):
    """A hash of everything clang-tidy reads for this source, or None if it cannot be made."""
    e, gcc = commands[source]
    args = e["arguments"]
    # GCC's command (clang's words would fail it) preprocessing only, to stdout.
    out = []
    skip = False
    for a in gcc:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a in ("-c", "-MD") or a.startswith(("-MF", "-MT")):
            if a in ("-MF", "-MT"):
                skip = True
            continue
        out.append(a)
    p = subprocess.run(out + ["-E", "-P"], cwd=e["directory"], capture_output=True)
    if p.returncode != 0:
        return None
    # Paths under the clone relative to it, so that a clone elsewhere (a CI run's, a worktree)
    # finds what another found clean: they change where clang-tidy reads, not what it says.
    rel = lambda b: b.replace(root.encode() + b"/", b"./").replace(root.encode(), b".")
    h = hashlib.sha256()
    for part in (version.encode(), config.encode(), rel(json.dumps(args).encode()), rel(p.stdout)):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


generated = re.compile(r"^\d+ (warnings?|errors?)( and \d+ errors?)? generated\.$")


def check(source):
    k = key(source) if cache != "0" else None
    if k and os.path.exists(os.path.join(cache, k)):
        return source, True, "", True
    p = subprocess.run([tidy, "-p", work, "--quiet", source], capture_output=True, text=True)
    text = "\n".join(l for l in (p.stdout + p.stderr).splitlines() if not generated.match(l))
    if cache != "0" and not k:
        text += f"\ntidy: {source}: not remembered (preprocessing it for the cache key failed)"
    if p.returncode == 0 and k:
        os.makedirs(cache, exist_ok=True)
        open(os.path.join(cache, k), "w").close()
    return source, p.returncode == 0, text, False


failed = cached = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    for source, ok, text, hit in pool.map(check, sources):
        cached += hit
        if text.strip():
            print(text, flush=True)
        if not ok:
            failed += 1
            print(f"tidy: {source}: clang-tidy failed", file=sys.stderr, flush=True)
elapsed = int(time.monotonic() - start)
summary = f"{len(sources)} files ({cached} unchanged since a clean check) in {elapsed} s, {jobs} jobs"
if failed:
    sys.exit(f"tidy: {failed} of {summary} have findings")
print(f"tidy: clang-tidy clean on {summary}")
EOF
