#!/usr/bin/env python3
"""The library's functions longer than a limit (default 60 lines), longest first.

A function is a definition that starts in column 0 and ends at the next line holding only "}", in
the .c and .h files of the library's folders (LIB_DIRS and its kernel folders in mk/sources.mk).
Its length counts the lines from the first of its signature to the closing brace. Exit status 1
when one is over the limit, so `tools/long_functions.py` can gate a change.

usage: tools/long_functions.py [LIMIT]
"""
import glob
import os
import re
import sys


def lib_dirs(root):
    dirs = []
    with open(os.path.join(root, "mk", "sources.mk")) as f:
        for line in f:
            m = re.match(r"LIB_DIRS(?:_X86|_ARM)?\s*:=\s*(.*)", line)
            if m:
                dirs += m.group(1).split()
    return dirs


def functions(path):
    """(length, first line, name) of each function defined in path."""
    lines = open(path, errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        head = line.split("(")[0]
        if (line and not line[0].isspace() and line[0] not in "#/}*" and "(" in line and "=" not in head
                and not line.rstrip().endswith(";") and not line.startswith("typedef")):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                name = re.findall(r"(\w+)\s*\(", line)
                yield k - i + 1, i + 1, name[0] if name else line[:40]
                i = k + 1
                continue
        i += 1


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for d in lib_dirs(root):
        for path in sorted(glob.glob(os.path.join(root, d, "*.[ch]"))):
            rel = os.path.relpath(path, root)
            found += [(n, rel, ln, name) for n, ln, name in functions(path) if n > limit]
    for n, rel, ln, name in sorted(found, reverse=True):
        print(f"{n:4d} {rel}:{ln} {name}")
    if not found:
        print(f"no library function over {limit} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
