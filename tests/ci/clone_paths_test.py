#!/usr/bin/env python3
"""No compile command of a build names the clone's paths but where ccache can take them relative.

    tests/ci/clone_paths_test.py BUILD_DIR SOURCE_DIR

deploy/build.sh compiles through ccache with CCACHE_BASEDIR set to the clone, so that a fresh clone
(every CI run's) finds the objects an earlier clone compiled: ccache rewrites the paths it knows to
be paths (the source, -I, -o, the dependency file) relative to the clone before it hashes them, but
not a path inside a -D value or any other option. One such -D given to every test binary (the test
data folder) once made each CI run compile all 91 test sources again in each of its three builds;
the paths now live in one generated object (tests/test_paths.cpp.in). This test reads the build's
compile_commands.json and fails, naming the source and the argument, where any other argument
holds the clone's source folder or the build folder. Profile-guided options are exempt: ccache
4.8 does not cache those compiles at all (-fprofile-prefix-path). Exit status: 0 passed, 1 failed,
2 bad usage.
"""
import json
import os
import shlex
import sys

# Options whose next argument is a path ccache rewrites, and prefixes that carry the path joined.
PATH_NEXT = {"-o", "-I", "-isystem", "-iquote", "-MF", "-MT", "-MQ", "-c"}
PATH_JOINED = ("-I", "-isystem", "-iquote", "-MF", "-MT", "-MQ", "-fprofile-use=",
               "-fprofile-generate=", "-fprofile-prefix-path=", "-fprofile-dir=")


def findings(entries, dirs):
    out = []
    for e in entries:
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        source = os.path.normpath(os.path.join(e["directory"], e["file"]))
        skip = False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in PATH_NEXT:
                skip = True
                continue
            if a.startswith(PATH_JOINED) or a.startswith("/"):
                continue  # a path option, or a bare path (the source): rewritten by ccache
            if any(d in a for d in dirs):
                out.append(f"{os.path.relpath(source, dirs[0])}: argument {a!r} holds the clone's path")
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build, source = (os.path.realpath(p) for p in sys.argv[1:3])
    db = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(db):
        print(f"clone_paths_test: {db}: missing (CMAKE_EXPORT_COMPILE_COMMANDS)", file=sys.stderr)
        return 2
    entries = json.load(open(db))
    # The test's own check, on a made-up command: it must find what it is for.
    probe = [{"directory": build, "file": os.path.join(source, "x.cpp"),
              "arguments": ["c++", f'-DDATA="{source}/tests/data"', "-c", os.path.join(source, "x.cpp")]}]
    if len(findings(probe, [source, build])) != 1:
        print("clone_paths_test: the check misses a -D holding the source folder", file=sys.stderr)
        return 1
    found = findings(entries, [source, build])
    for f in found:
        print(f"clone_paths_test: {f}", file=sys.stderr)
    if found:
        print(f"clone_paths_test: {len(found)} arguments in {db} hold the clone's paths: ccache cannot share "
              "those objects between clones (put such paths in tests/test_paths.cpp.in)", file=sys.stderr)
        return 1
    print(f"clone_paths_test: {len(entries)} compile commands, none holds the clone's paths outside "
          "the path options ccache rewrites")
    return 0


if __name__ == "__main__":
    sys.exit(main())
