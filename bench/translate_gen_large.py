#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Generates the large benchmark profile for bench/translate: a Go-CPU-shaped
# pprof with ~60 000 samples, 6 000 functions, ~9 000 locations (some with
# inlined frames), 20 000 distinct trace ids (a span id per sample), a route
# label and a numeric label; ~7 MB uncompressed. Deterministic (fixed seed).
# usage: translate_gen_large.py OUT.pprof [--gzip OUT.pprof.gz] [--samples N]
# (--samples: 60 000 by default; 140 000 gives the ~4 MB gzip, 15.6 MB raw body of bench/flood.sh)
import gzip
import random
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def fu(f, v):
    return varint(f << 3) + varint(v)


def fb(f, data):
    return varint(f << 3 | 2) + varint(len(data)) + data


def main():
    n_samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 60000
    rnd = random.Random(42)
    strs, index = [""], {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strs)
            strs.append(x)
        return index[x]

    out = bytearray()
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        out += fb(1, fu(1, s(t)) + fu(2, s(u)))
    n_maps = 6
    for m in range(1, n_maps + 1):
        out += fb(3, fu(1, m) + fu(2, 0x400000 * m) + fu(3, 0x400000 * m + 0x3FFFFF) + fu(4, 0)
                  + fu(5, s("/usr/lib/lib%d.so" % m)) + fu(6, s("%040x" % rnd.getrandbits(160)))
                  + fu(7, 1) + fu(8, 1) + fu(9, 1))
    n_funcs = 6000
    for f in range(1, n_funcs + 1):
        pkg = "github.com/example/service/pkg%d" % (f % 97)
        name = "%s.(*Handler%d).method%d" % (pkg, f % 211, f)
        out += fb(5, fu(1, f) + fu(2, s(name)) + fu(3, s(name)) + fu(4, s("%s/file%d.go" % (pkg, f % 300)))
                  + fu(5, rnd.randint(1, 2000)))
    n_locs = 9000
    for l in range(1, n_locs + 1):
        lines = bytearray()
        for _ in range(2 if l % 7 == 0 else 1):
            lines += fb(4, fu(1, rnd.randint(1, n_funcs)) + fu(2, rnd.randint(1, 3000)))
        out += fb(4, fu(1, l) + fu(2, 1 + l % n_maps) + fu(3, 0x400000 * (1 + l % n_maps) + 16 * l) + bytes(lines))
    stacks = []
    for _ in range(15000):
        depth = rnd.randint(8, 32)
        stacks.append([rnd.randint(1, n_locs) for _ in range(depth)])
    traces = ["%032x" % rnd.getrandbits(128) for _ in range(20000)]
    routes = ["/api/v1/resource%d" % i for i in range(12)]
    k_trace, k_span, k_route, k_thr, k_unit = s("trace_id"), s("span_id"), s("http.route"), s("thread"), s("count")
    for i in range(n_samples):
        st = stacks[int(rnd.paretovariate(1.2) * 7) % len(stacks)]
        body = bytearray(fb(1, b"".join(varint(x) for x in st)))
        n = rnd.randint(1, 5)
        body += fb(2, varint(n) + varint(n * 10000000))
        body += fb(3, fu(1, k_trace) + fu(2, s(traces[i % 20000])))
        body += fb(3, fu(1, k_span) + fu(2, s("%016x" % rnd.getrandbits(64))))
        body += fb(3, fu(1, k_route) + fu(2, s(routes[i % len(routes)])))
        body += fb(3, fu(1, k_thr) + fu(3, rnd.randint(1, 64)) + fu(4, k_unit))
        out += fb(2, bytes(body))
    out += fu(9, 1700000000000000000) + fu(10, 10000000000) + fb(11, fu(1, s("cpu")) + fu(2, s("nanoseconds")))
    out += fu(12, 10000000)
    data = bytes(out) + b"".join(fb(6, x.encode()) for x in strs)
    with open(sys.argv[1], "wb") as f:
        f.write(data)
    if "--gzip" in sys.argv:
        with open(sys.argv[sys.argv.index("--gzip") + 1], "wb") as f:
            f.write(gzip.compress(data, compresslevel=6, mtime=0))
    print("%s: %d bytes, %d strings" % (sys.argv[1], len(data), len(strs)))


if __name__ == "__main__":
    main()
