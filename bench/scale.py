#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 25's goals on loopback, printed as one table (no pass/fail: the
timed bounds live here, not in tests). Every loop is bounded in count and
time; every address is 127.0.0.1.

  python3 bench/scale.py [--targets 5000] [--only file_sd,churn,fair,spool]

file_sd: start-up to listening with N targets, then 10 rewrites (half the
targets change each time) while a client pushes every 50 ms: push latency
and /metrics latency. churn: the same rewrites with pushes every 20 ms and
nobody reading /metrics, one event loop (the scraper's loop's own stall). fair: 20 clients loop a 23 KB gzip body inflating to
1e6 identical samples while one client pushes a 4 KB Go heap profile every
100 ms: that client's latency. spool: a 3 GiB damaged (sparse) segment in
the persistent queue's directory: start-up to listening."""
import argparse
import gzip
import os
import shutil
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration", "lib"))
from pg_harness import FIXTURES, Gateway, post  # noqa: E402
from pg_pprof import field, varint  # noqa: E402
import test_scale_targets as scale  # noqa: E402

HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()
rows = []


def row(figure, value, goal):
    rows.append((figure, value, goal))
    print(f"  {figure}: {value} (goal {goal})", flush=True)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def timed_push(port, body=HEAP, timeout=60):
    t0 = time.time()
    try:
        st, _, _ = post(port, "/v1/pprof", body, timeout=timeout)
    except Exception as e:  # noqa: BLE001 - reported as a failure
        st = repr(e)
    return st, time.time() - t0


def bench_file_sd(n):
    scale.N_FILE = n
    gw = Gateway(scale.FILE_CONFIG, ready_timeout=600)
    os.makedirs(gw.path("sd"))
    scale.write_targets(gw.path("sd/targets.json"), 0)
    t0 = time.time()
    gw.start()
    row(f"file_sd {n} targets: start to listening", f"{time.time() - t0:.3f} s", "<= 2 s")
    with gw:
        mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)", 10).group(1))
        gw.wait_log(rf"{n} targets added", 120)
        lat, stop = [], threading.Event()

        def pusher():
            for _ in range(5000):
                if stop.is_set():
                    return
                lat.append(timed_push(gw.port))
                time.sleep(0.05)

        th = threading.Thread(target=pusher)
        th.start()
        mlat = []
        for gen in range(1, 11):
            scale.write_targets(gw.path("sd/targets.json"), gen)
            first_new = 10000 + n // 2 + (gen % 2) * n
            end = time.time() + 60
            while time.time() < end:
                t1 = time.time()
                with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=60) as r:
                    text = r.read().decode()
                mlat.append(time.time() - t1)
                if f'instance="127.0.0.1:{first_new}"' in text:
                    break
        stop.set()
        th.join()
        d = [x for _, x in lat]
        bad = sum(1 for s, _ in lat if s not in (200, 204))
        row(f"file_sd {n}: push during 10 rewrites, p50/p99/max ({len(d)} pushes, {bad} failed)",
            f"{pct(d, .5) * 1000:.0f} / {pct(d, .99) * 1000:.0f} / {max(d) * 1000:.0f} ms",
            "every push <= 200 ms")
        row(f"file_sd {n}: /metrics during rewrites, max", f"{max(mlat):.3f} s", "<= 1 s")


def bench_churn(n):
    """Loop stall only: pushes every 20 ms while the file is rewritten 5 times
    (half the targets change each time), nobody polling /metrics."""
    scale.N_FILE = n
    one = '    server: {endpoint: "127.0.0.1:0"}\n'
    # One loop: every push meets the loop the scraper runs on.
    gw = Gateway(scale.FILE_CONFIG.replace(one, one[:-2] + ", loops: 1}\n"), ready_timeout=600)
    os.makedirs(gw.path("sd"))
    scale.write_targets(gw.path("sd/targets.json"), 0)
    gw.start()
    with gw:
        gw.wait_log(rf"{n} targets added", 300)
        lat = []
        for gen in range(1, 6):
            scale.write_targets(gw.path("sd/targets.json"), gen)
            end = time.time() + 4
            while time.time() < end and len(lat) < 2000:
                lat.append(timed_push(gw.port)[1])
                time.sleep(0.02)
        row(f"churn {n}: push during 5 rewrites, no /metrics polling, p50/p99/max ({len(lat)})",
            f"{pct(lat, .5) * 1000:.0f} / {pct(lat, .99) * 1000:.0f} / {max(lat) * 1000:.0f} ms",
            "every push <= 200 ms")


def expensive_body():
    """1e6 identical one-frame samples: ~8 MB of pprof, gzip'd to tens of KB."""
    out = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    out += field(5, 2, field(1, 0, 1) + field(2, 0, 3))
    out += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1)))
    sample = field(2, 2, field(1, 2, varint(1)) + field(2, 2, varint(1)))
    out += sample * 1_000_000
    for s in (b"", b"samples", b"count", b"main.spin"):
        out += field(6, 2, s)
    return gzip.compress(bytes(out), 9)


def bench_fair(clients=20, seconds=15):
    body = expensive_body()
    cfg = scale.FILE_CONFIG.replace(
        "    scrape:\n      scrape_configs:\n        - job_name: cmdb\n          scrape_interval: 1h\n"
        "          file_sd_configs: [{files: [\"{tmp}/sd/targets.json\"]}]\n", "")
    cfg = cfg.replace(scale.ONLY_MEMORY, "")
    with Gateway(cfg) as gw:
        stop = threading.Event()
        heavy = []

        def loop():
            for _ in range(1000):
                if stop.is_set():
                    return
                heavy.append(timed_push(gw.port, body, 120))

        ths = [threading.Thread(target=loop) for _ in range(clients)]
        for t in ths:
            t.start()
        time.sleep(1)
        lat = []
        end = time.time() + seconds
        while time.time() < end and len(lat) < 1000:
            lat.append(timed_push(gw.port)[1])
            time.sleep(0.1)
        stop.set()
        for t in ths:
            t.join()
        row(f"fair: {len(body) // 1024} KB body -> 1e6 samples, {clients} clients looping",
            f"{len(heavy)} heavy pushes answered in {seconds + 1} s", "")
        row("fair: a normal push meanwhile, p50/p99/max",
            f"{pct(lat, .5) * 1000:.0f} / {pct(lat, .99) * 1000:.0f} / {max(lat) * 1000:.0f} ms",
            "<= 250 ms")


def bench_spool(size=3 << 30):
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pg-bench-spool-{os.getpid()}")
    qdir = os.path.join(root, "exporter_otlp")
    os.makedirs(qdir)
    with open(os.path.join(qdir, "%016x.seg" % 1), "wb") as f:
        f.truncate(size)
    cfg = f"""
extensions:
  file_storage/q: {{directory: {root}}}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:1"
    tls: {{insecure: true}}
    sending_queue: {{storage: file_storage/q}}
service:
  extensions: [file_storage/q]
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""
    try:
        gw = Gateway(cfg, ready_timeout=600)
        t0 = time.time()
        gw.start()
        row(f"spool: damaged {size >> 30} GiB segment, start to listening",
            f"{time.time() - t0:.3f} s", "<= 1 s")
        gw.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", type=int, default=5000)
    ap.add_argument("--only", default="file_sd,fair,spool")
    a = ap.parse_args()
    only = a.only.split(",")
    if "file_sd" in only:
        bench_file_sd(a.targets)
    if "churn" in only:
        bench_churn(a.targets)
    if "fair" in only:
        bench_fair()
    if "spool" in only:
        bench_spool()
    print("\n| figure | measured | goal |\n|---|---|---|")
    for f, v, g in rows:
        print(f"| {f} | {v} | {g} |")


if __name__ == "__main__":
    main()
