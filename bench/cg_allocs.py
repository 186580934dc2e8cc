#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Heap calls per request in a callgrind dump (callgrind_push.sh with
CG_KEEP=prefix keeps them): malloc/calloc/realloc/free and friends, counted
from the call edges, by direct caller. The per-stage table of
callgrind_push.sh gives their instructions; this gives how many there are
and who makes them.
Usage: cg_allocs.py DUMP REQUESTS [TOP]"""
import re
import sys
from collections import Counter

ALLOC = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
         "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_free", "cfree"}


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    path, n = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    names = {}       # "(id)" -> name, per kind (fn ids are shared by fn/cfn)
    fn = cfn = None
    edges = Counter()  # (caller, callee) -> calls
    ref = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")
    with open(path, errors="replace") as f:
        for line in f:
            m = ref.match(line)
            if m:
                kind, ident, name = m.groups()
                if name is not None:
                    names[ident] = name
                if kind == "fn":
                    fn = names.get(ident, ident)
                else:
                    cfn = names.get(ident, ident)
                continue
            if line.startswith("calls=") and cfn is not None and fn is not None:
                edges[(fn.split("'")[0], cfn.split("'")[0])] += int(line[6:].split()[0])
    into = {}
    for (a, b), c in edges.items():
        into.setdefault(b, []).append((a, c))
    by_caller = Counter()
    by_kind = Counter()

    def callers(name, depth=0):
        # A PLT stub (an address, no name) stands for whoever calls it.
        if depth < 3 and name.startswith("0x") and name in into:
            for a, c in into[name]:
                for a2, share in callers(a, depth + 1):
                    yield a2, share * c
            return
        yield name, 1.0

    for (a, b), c in edges.items():
        if b in ALLOC and a not in ALLOC:
            kind = "free" if "free" in b else "alloc"
            by_kind[kind] += c
            if a.startswith("0x") and a in into:
                tot = sum(cc for _, cc in into[a])
                for a2, cc in into[a]:
                    by_caller[(kind, a2)] += c * cc / tot
            else:
                by_caller[(kind, a)] += c
    print(f"heap calls per request: {by_kind['alloc'] / n:.1f} allocations, "
          f"{by_kind['free'] / n:.1f} frees")
    for (kind, caller), c in by_caller.most_common(top):
        print(f"  {c / n:7.2f}  {kind:5s}  {caller}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
