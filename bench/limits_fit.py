#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What real profiles use of the pprof receiver's `limits` (issue 25 item 2):
decodes each pprof and prints, per profile, the figure each cap bounds, then
the default and the headroom (default / largest seen). Sources: the Go
fixtures (tests/fixtures/pprof/go), the Node SDK captures (../shared/
fixtures/sdk, @datadog/pprof via the Coralogix SDK) and, with --live, a Go
net/http/pprof process (tests/integration/scrape/pprof_target.go) scraped
for allocs, heap, goroutine, block, mutex and a 2 s CPU profile.

  python3 bench/limits_fit.py [--live]"""
import gzip
import glob
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

# cap -> its default (src/receiver/pprof_config.c; inflated bytes: 0 = the 20 MiB body cap)
DEFAULTS = {"inflated_bytes": 20 << 20, "samples": 2097152, "locations": 1048576,
            "functions": 1048576, "mappings": 65536, "strings": 4194304,
            "string_bytes": 64 << 20, "stack_depth": 4096, "labels_per_sample": 256,
            "sample_types": 64}


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def packed_len(wt, v):
    if wt == 0:
        return 1
    n, i = 0, 0
    while i < len(v):
        _, i = varint(v, i)
        n += 1
    return n


def measure(raw):
    data = raw
    while data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    m = dict.fromkeys(DEFAULTS, 0)
    m["inflated_bytes"] = len(data)
    for f, wt, v in fields(data):
        if f == 1:
            m["sample_types"] += 1
        elif f == 2:
            m["samples"] += 1
            depth = labels = 0
            for sf, swt, sv in fields(v):
                if sf == 1:
                    depth += packed_len(swt, sv)
                elif sf == 3:
                    labels += 1
            m["stack_depth"] = max(m["stack_depth"], depth)
            m["labels_per_sample"] = max(m["labels_per_sample"], labels)
        elif f == 3:
            m["mappings"] += 1
        elif f == 4:
            m["locations"] += 1
        elif f == 5:
            m["functions"] += 1
        elif f == 6:
            m["strings"] += 1
            m["string_bytes"] += len(v)
    return m


def live_profiles():
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "lib"))
    from scrape_target import build_target, start_target  # noqa: E402

    class R:
        def check(self, name, ok, detail=""):
            if not ok:
                print("live:", name, detail)

        def finish(self):
            sys.exit(1)
    exe = build_target(R())
    p, port = start_target(exe)
    try:
        time.sleep(2)
        out = []
        for name, q in (("allocs", ""), ("heap", ""), ("goroutine", ""), ("block", ""),
                        ("mutex", ""), ("profile", "?seconds=2")):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/pprof/{name}{q}",
                                        timeout=30) as r:
                out.append((f"live Go {name}", r.read()))
        return out
    finally:
        p.kill()
        p.wait()


def main():
    profs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "pprof", "go", "*.pb.gz"))):
        profs.append(("Go fixture " + os.path.basename(path), open(path, "rb").read()))
    for path in sorted(glob.glob(os.path.join(ROOT, "..", "shared", "fixtures", "sdk", "*.pprof.gz"))):
        profs.append(("Node SDK " + os.path.basename(path), open(path, "rb").read()))
    if "--live" in sys.argv:
        profs += live_profiles()
    keys = list(DEFAULTS)
    print("| profile | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    most = dict.fromkeys(keys, 0)
    for name, raw in profs:
        m = measure(raw)
        for k in keys:
            most[k] = max(most[k], m[k])
        print(f"| {name} | " + " | ".join(str(m[k]) for k in keys) + " |")
    print("| **largest** | " + " | ".join(str(most[k]) for k in keys) + " |")
    print("| default | " + " | ".join(str(DEFAULTS[k]) for k in keys) + " |")
    print("| headroom | " + " | ".join(f"{DEFAULTS[k] / max(most[k], 1):.0f}x" for k in keys) + " |")


if __name__ == "__main__":
    main()
