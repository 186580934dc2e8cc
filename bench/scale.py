#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 25's goals on loopback, printed as one table (no pass/fail: the
timed bounds live here, not in tests). Every loop is bounded in count and
time; every address is 127.0.0.1.

  python3 bench/scale.py [--targets 5000,20000] [--pods 5000]
                         [--only file_sd,churn,k8s,fair,hostile,spool]

Every figure of the issue but memory_limiter's (bench/goodput.sh) comes out
of one run with the defaults. PPROFGATE_BIN picks the binary (main's, to
compare in the same session).

file_sd: start-up to listening with N targets, then 10 rewrites (half the
targets change each time) while a client pushes every 50 ms: push latency
and /metrics latency. churn: the same rewrites with pushes every 20 ms and
nobody reading /metrics, one event loop (the scraper's loop's own stall). fair: 20 clients loop a 23 KB gzip body inflating to
1e6 identical samples while one client pushes a 4 KB Go heap profile every
100 ms: that client's latency. spool: a 3 GiB damaged (sparse) segment in
the persistent queue's directory: start-up to listening. churn also prints
the gateway's CPU (utime + stime from /proc) per changed target, and for a
rewrite that changes 10 addresses: churn costs what changed, not the file's
size. k8s: a fake Kubernetes API on loopback streams N pods ADDED then
DELETED (5 targets each) while a client pushes every 50 ms. hostile: 38
scrape targets every 2 s (15 serve the 1e6-sample body, 9 drip it, 10 a
4 MB header, 4 a thousand `100 Continue` lines) while a client pushes every
50 ms."""
import argparse
import gzip
import json
import os
import re
import socket
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


def cpu_s(gw):
    """The gateway's user + system CPU so far, seconds."""
    with open(f"/proc/{gw.proc.pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


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


def write_addrs(path, addrs):
    import json
    groups = [{"targets": addrs, "labels": {"env": "scale"}}]
    with open(path + ".tmp", "w") as f:
        json.dump(groups, f)
    os.rename(path + ".tmp", path)


def bench_churn(n):
    """Loop stall only: pushes every 20 ms while the file is rewritten 5 times
    (half the targets change each time), nobody polling /metrics; then the
    CPU of rewrites that change half the file vs 10 addresses."""
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
        # CPU per rewrite, measured until the log says the sync was applied.
        half = n // 2
        base = [f"127.0.0.1:{10000 + i}" for i in range(half)]

        def rewrite(addrs, expect):
            c0 = cpu_s(gw)
            mark = len(gw.log())
            write_addrs(gw.path("sd/targets.json"), addrs)
            end = time.time() + 120
            while time.time() < end and not re.search(
                    rf"{expect} targets added, {expect} removed", gw.log()[mark:]):
                time.sleep(0.05)
            time.sleep(0.3)  # the sync's tail (gauges)
            return cpu_s(gw) - c0
        big, small, cur = [], [], []
        for g in range(2):
            cur = base + [f"127.0.1.{g}:{10000 + i}" for i in range(n - half)]
            big.append(rewrite(cur, n - half))
        for g in range(3):
            cur = cur[:-10] + [f"127.0.2.{g}:{10000 + i}" for i in range(10)]
            small.append(rewrite(cur, 10))
        per = min(big) / (2 * (n - half)) * 1e6
        row(f"churn {n}: CPU of a rewrite changing {n - half} of {n} (min of 2)",
            f"{min(big) * 1000:.0f} ms = {per:.1f} us per target added or removed",
            "proportional to churn")
        row(f"churn {n}: CPU of a rewrite changing 10 of {n} (min of 3; the file's parse "
            "included)", f"{min(small) * 1000:.0f} ms", "proportional to churn")


class Pusher:
    """Pushes every @every s until stopped (bounded: 5 000 pushes)."""

    def __init__(self, port, every=0.05):
        self.port, self.every, self.lat, self.stop = port, every, [], threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        for _ in range(5000):
            if self.stop.is_set():
                return
            self.lat.append(timed_push(self.port))
            time.sleep(self.every)

    def finish(self):
        self.stop.set()
        self.th.join(timeout=120)
        d = [x for _, x in self.lat]
        bad = sum(1 for st, _ in self.lat if st not in (200, 204))
        return d, bad


def bench_k8s(pods):
    scale.N_PODS = pods
    api = scale.FakeAPI()
    cfg = scale.K8S_CONFIG.replace("APIPORT", str(api.srv.server_address[1]))
    with Gateway(cfg) as gw:
        mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)", 10).group(1))
        time.sleep(0.5)
        pusher = Pusher(gw.port)
        c0, t0 = cpu_s(gw), time.time()
        api.go.set()
        added = scale.wait(lambda: gw.wait_log(rf"{5 * pods} active", 0) is not None, 300)
        t_add, c_add = time.time() - t0, cpu_s(gw) - c0
        tl = []
        for _ in range(5):  # /targets with every target present
            t1 = time.time()
            n_t = len(json.loads(scale.http_get(mport, "/targets", 60)[0])["activeTargets"])
            tl.append(time.time() - t1)
        c1, t1 = cpu_s(gw), time.time()
        api.delete.set()
        gone = scale.wait(lambda: re.search(r"\(0 active", gw.log()) is not None, 300)
        t_del, c_del = time.time() - t1, cpu_s(gw) - c1
        d, bad = pusher.finish()
    api.srv.shutdown()
    row(f"k8s watch flood: {pods} pods ADDED ({5 * pods} targets) then DELETED, push "
        f"p50/p99/max ({len(d)} pushes, {bad} failed{'' if added and gone else ', INCOMPLETE'})",
        f"{pct(d, .5) * 1000:.0f} / {pct(d, .99) * 1000:.0f} / {max(d) * 1000:.0f} ms",
        "every push <= 200 ms")
    row(f"k8s: CPU (wall) for the ADDED / DELETED events",
        f"{c_add:.2f} s ({t_add:.1f} s) / {c_del:.2f} s ({t_del:.1f} s) = "
        f"{c_add / pods * 1e6:.0f} / {c_del / pods * 1e6:.0f} us per pod event",
        "proportional to churn")
    row(f"k8s: /targets with {n_t} targets, max of 5", f"{max(tl):.3f} s", "")


def hostile_server(n, body):
    """@n loopback listeners; target i misbehaves by i % 4: the 1e6-sample
    body (0, 2), a 4 MB header (1), a 1 KB/100 ms drip of that body (3);
    i % 8 == 6: 1 000 `100 Continue` lines before it."""
    bighdr = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * (4 << 20) + b"\r\n\r\n"
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    socks, stop = [], threading.Event()

    def handle(c, mode):
        try:
            c.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                d = c.recv(4096)
                if not d:
                    return
                data += d
            if mode == 1:
                c.sendall(bighdr)
            elif mode == 3:
                for i in range(0, len(ok), 1024):
                    if stop.is_set():
                        return
                    c.sendall(ok[i:i + 1024])
                    time.sleep(0.1)
            elif mode == 4:
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 1000 + ok)
            else:
                c.sendall(ok)
        except OSError:
            pass
        finally:
            c.close()

    def serve(ls, mode):
        while not stop.is_set():
            try:
                c, _ = ls.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(c, mode), daemon=True).start()

    ports = []
    for i in range(n):
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        socks.append(ls)
        ports.append(ls.getsockname()[1])
        mode = 4 if i % 8 == 6 else i % 4
        threading.Thread(target=serve, args=(ls, mode), daemon=True).start()

    def close():
        stop.set()
        for ls in socks:
            ls.close()
    return ports, close


def bench_hostile(n=38, seconds=20):
    ports, close = hostile_server(n, expensive_body())
    targets = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    cfg = f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
    scrape:
      scrape_configs:
        - job_name: hostile
          scrape_interval: 2s
          static_configs: [{{targets: [{targets}]}}]
""" + scale.ONLY_MEMORY + """
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
service:
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""
    try:
        with Gateway(cfg) as gw:
            time.sleep(3)  # the first round of scrapes is under way
            c0 = cpu_s(gw)
            pusher = Pusher(gw.port)
            time.sleep(seconds)
            d, bad = pusher.finish()
            cpu = cpu_s(gw) - c0
            scraped = len(re.findall(r"sample_records=1000000", open(gw.debug_path).read()))
    finally:
        close()
    row(f"hostile: {n} scrape targets every 2 s, a push every 50 ms, p50/p99/max "
        f"({len(d)} pushes, {bad} failed)",
        f"{pct(d, .5) * 1000:.0f} / {pct(d, .99) * 1000:.0f} / {max(d) * 1000:.0f} ms",
        "p99 <= 50 ms")
    row("hostile: meanwhile", f"{scraped} heavy profiles translated, gateway CPU "
        f"{cpu / (seconds + 0.0) * 100:.0f} %", "")


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
    ap.add_argument("--targets", default="5000,20000")
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--only", default="file_sd,churn,k8s,fair,hostile,spool")
    a = ap.parse_args()
    only = a.only.split(",")
    for n in [int(x) for x in a.targets.split(",")]:
        if "file_sd" in only:
            bench_file_sd(n)
        if "churn" in only:
            bench_churn(n)
    if "k8s" in only:
        bench_k8s(a.pods)
    if "fair" in only:
        bench_fair()
    if "hostile" in only:
        bench_hostile()
    if "spool" in only:
        bench_spool()
    print("\n| figure | measured | goal |\n|---|---|---|")
    for f, v, g in rows:
        print(f"| {f} | {v} | {g} |")


if __name__ == "__main__":
    main()
