#!/usr/bin/env python3
"""Code size figures: the longest functions and the largest files of the project's sources.

  bench/code_size.py [--top N] [DIR ...]     (default: the library and tool folders)

A function is a brace block opened by a line that looks like a definition `name(...) ... {`
at namespace or class level (not if/for/while/switch/lambda bodies); its length counts every
line from the signature to the closing brace. A heuristic, but the same one before and after.
"""
import argparse
import os
import re
import subprocess

DEFAULT_DIRS = ["core", "selfplay", "cluster", "coordinator", "worker", "cli", "report"]
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return|namespace|class|struct|enum|union)\b")


def strip(src):
    """Source with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:])
            end = src.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(path):
    lines = strip(open(path, encoding="utf-8", errors="replace").read()).split("\n")
    found, stack, sig_start = [], [], None
    for ln, line in enumerate(lines, 1):
        for k, ch in enumerate(line):
            if ch == "{":
                head = line[:k]
                # The signature may start on an earlier line: walk back to a line ending a statement.
                start = ln
                text = head
                while start > 1 and not re.search(r"[;{}]\s*$", lines[start - 2]) and lines[start - 2].strip() and not lines[start - 2].strip().startswith("#"):
                    start -= 1
                    text = lines[start - 1] + " " + text
                is_fn = (all(kind != "fn" for kind, *_ in stack) and re.search(r"\w\s*\([^;]*\)\s*(const|noexcept|override|final|->[^{]*|:\s*[^{]*|\s)*$", text)
                         and not CONTROL.match(text.strip()) and "=" not in text.split("(")[0] and not text.strip().startswith("[")
                         and "[" not in text.split("(")[0])
                name = re.findall(r"([\w:~<>]+)\s*\(", text)
                stack.append(("fn" if is_fn else "block", start, name[0] if name else "?"))
            elif ch == "}" and stack:
                kind, start, name = stack.pop()
                if kind == "fn":
                    found.append((ln - start + 1, f"{path}:{start}", name))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--rev", help="measure this git revision instead of the working tree")
    ap.add_argument("dirs", nargs="*", default=DEFAULT_DIRS)
    a = ap.parse_args()
    root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    os.chdir(root)
    if a.rev:
        tmp = subprocess.check_output(["mktemp", "-d"], text=True).strip()
        subprocess.check_call(f"git archive {a.rev} | tar -x -C {tmp}", shell=True)
        os.chdir(tmp)
    files = [os.path.join(d, f) for top in a.dirs if os.path.isdir(top) for d, _, fs in os.walk(top) for f in fs
             if f.endswith((".cpp", ".h"))]
    fns = sorted((f for p in files for f in functions(p)), reverse=True)
    print(f"longest functions ({len(fns)} in {len(files)} files):")
    for n, where, name in fns[: a.top]:
        print(f"  {n:5d}  {name:40s} {where}")
    sizes = sorted(((sum(1 for _ in open(p, encoding='utf-8', errors='replace')), p) for p in files), reverse=True)
    print("largest files:")
    for n, p in sizes[:2]:
        print(f"  {n:5d}  {p}")


if __name__ == "__main__":
    main()
