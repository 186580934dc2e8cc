#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shape of src/ the layering probes cannot see: no file over 1 100 lines,
and no two .c files that include each other's headers (A.c includes B.h and
B.c includes A.h, in one room or two). Such a pair is a knot: neither file
reads alone, and a change ripples both ways.

A header belongs to the .c file of the same path stem (otlp/dict.h belongs to
otlp/dict.c); headers without a .c of their own (internal.h, clock.h) hold
types and inlines and belong to no one. Includes are "room/file.h" from src/.

  file_shape.py [--src DIR] [--exclude src/x/y.c ...]   check a tree (exit 1 on a finding)
  file_shape.py --self-test                            plant each violation in a scratch tree
                                                       and prove the check reports it
"""
import argparse
import os
import re
import sys
import tempfile

MAX_LINES = 1100
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_files(src):
    for root, _dirs, files in os.walk(src):
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(root, name), src)


def check(src, exclude=()):
    """Every finding in the tree under src, as lines of text."""
    found = []
    files = [f for f in source_files(src) if f not in exclude]
    includes = {}
    for rel in sorted(files):
        with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_LINES:
            found.append(f"src/{rel}: {lines} lines (the cap is {MAX_LINES}; split it by job)")
        if rel.endswith(".c"):
            includes[rel] = set(INCLUDE.findall(text))
    for a in sorted(includes):
        a_header = a[:-2] + ".h"
        for header in sorted(includes[a]):
            b = header[:-2] + ".c"
            if b == a or b not in includes or a >= b:
                continue
            if a_header in includes[b]:
                found.append(f"src/{a} includes {header} and src/{b} includes {a_header}: "
                             "calls must go one way (a callback struct or a narrower header "
                             "owned by the caller)")
    return found


def self_test():
    """The check must be able to fail: a long file and a pair of mutual includes."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "room"))
        os.makedirs(os.path.join(tmp, "other"))

        def put(rel, text):
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
                fh.write(text)

        put("room/long.c", "int x;\n" * (MAX_LINES + 1))
        put("room/ok.c", "int y;\n" * MAX_LINES)
        put("room/a.h", "int a(void);\n")
        put("room/a.c", '#include "room/a.h"\n#include "other/b.h"\nint a(void) { return b(); }\n')
        put("other/b.h", "int b(void);\n")
        put("other/b.c", '#include "other/b.h"\n#include "room/a.h"\nint b(void) { return a(); }\n')
        # One way only: c.c uses a.h, a.c does not use c.h: no finding.
        put("room/c.h", "int c(void);\n")
        put("room/c.c", '#include "room/c.h"\n#include "room/a.h"\nint c(void) { return a(); }\n')
        found = check(tmp)
        want = ["src/room/long.c: 1101 lines",
                "src/other/b.c includes room/a.h and src/room/a.c includes other/b.h"]
        ok = len(found) == len(want) and all(any(f.startswith(w) for f in found) for w in want)
        for f in found:
            print("  planted:", f)
        if not ok:
            print("self-test FAILED: expected exactly", want, file=sys.stderr)
            return 1
        # And an exclusion takes a file out of the count.
        if any("long.c" in f for f in check(tmp, exclude=("room/long.c",))):
            print("self-test FAILED: --exclude ignored", file=sys.stderr)
            return 1
    print("self-test: both planted violations reported, the one-way include and the "
          f"{MAX_LINES}-line file were not")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--src", default=os.path.join(here, "..", "..", "src"))
    ap.add_argument("--exclude", action="append", default=[],
                    help="a file to leave out (src/room/file.c), for a local dry run only")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    exclude = tuple(e[4:] if e.startswith("src/") else e for e in args.exclude)
    found = check(args.src, exclude)
    for f in found:
        print(f)
    if found:
        print(f"file shape: {len(found)} finding(s)", file=sys.stderr)
        return 1
    print("file shape: every src/ file under", MAX_LINES, "lines, no two .c files include each other's headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
