#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Large-body flood against memory_limiter: CLIENTS concurrent clients push the
large benchmark profile (bench/translate_gen_large.py, 2 MB gzip, 7.5 MB raw)
over and over for DURATION seconds while tests/hostile/probe.py pushes a
small SDK-sized profile every 20 ms from its own process. Samples the
gateway's VmRSS every 20 ms and prints peak RSS / limit_mib (goal <= 1.0),
VmHWM / limit_mib, the status mix and the probe's p50/p99 (goal < 50 ms).
Env: CLIENTS (60), DURATION (10 s), LIMIT_MIB (200), SPIKE_MIB (50),
     WORKERS (receiver default), AUTH (1 = bearer auth on), PPROFGATE_BIN, PG_BUILD_DIR."""

import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "lib"))
from pg_harness import Gateway, fixture, gzip_bytes, read  # noqa: E402

BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(ROOT, "build"))
CLIENTS = int(os.environ.get("CLIENTS", "60"))
DURATION = float(os.environ.get("DURATION", "10"))
LIMIT = int(os.environ.get("LIMIT_MIB", "200"))
SPIKE = int(os.environ.get("SPIKE_MIB", "50"))
WORKERS = os.environ.get("WORKERS", "")
AUTH = os.environ.get("AUTH", "0") == "1"
TOKEN = "bench-token"

large = os.path.join(BUILD, "hostile-large.pprof.gz")
if not os.path.exists(large):
    subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), large + ".raw",
                    "--gzip", large], check=True, capture_output=True)
BIG = read(large)
small = os.path.join(BUILD, "hostile-small.pprof.gz")
with open(small, "wb") as f:
    f.write(gzip_bytes(read(fixture("debug/worked_example.pprof"))))

extra = f"      max_request_body_size: 16MiB\n"
if WORKERS:
    extra += f"      workers: {WORKERS}\n"
if AUTH:
    extra += '      auth: {bearer_token_file: "{tmp}/token"}\n'
cfg = f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
{extra}
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: {LIMIT}
    spike_limit_mib: {SPIKE}
exporters:
  debug:
    verbosity: basic
    output_paths: ["{{debug}}"]
service:
  pipelines:
    profiles: {{receivers: [pprof], processors: [memory_limiter], exporters: [debug]}}
"""
gw = Gateway(cfg)
with open(gw.path("token"), "w") as f:
    f.write(TOKEN + "\n")

head = (b"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n" +
        (b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" if AUTH else b"") +
        b"Content-Length: %d\r\n\r\n" % len(BIG))
statuses = {}
lock = threading.Lock()
stop = threading.Event()


def pusher(port):
    import socket
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(head + BIG)
            buf = b""
            while b"\r\n" not in buf:
                d = s.recv(4096)
                if not d:
                    break
                buf += d
            s.close()
            st = buf.split(b" ", 2)[1].decode() if buf.startswith(b"HTTP/1.1 ") else "closed"
        except OSError as e:
            st = type(e).__name__
        with lock:
            statuses[st] = statuses.get(st, 0) + 1
        if st != "204":
            time.sleep(0.05)  # a client that honours Retry-After a little


# The same probe against a second, idle gateway at the same time: the part
# of the probe's latency that the machine (the flooding clients, other
# processes) adds whatever the flooded gateway does.
ctl = Gateway(cfg)
with open(ctl.path("token"), "w") as f:
    f.write(TOKEN + "\n")


def start_probe(port, src):
    pr = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "hostile", "probe.py"),
                           str(port), TOKEN, src, small], stdout=subprocess.PIPE, text=True)
    pr.stdout.readline()
    return pr


def probe_result(pr):
    pr.terminate()
    out, _ = pr.communicate(timeout=10)
    lat, fail = [], []
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ok":
            lat = sorted(float(x) * 1000 for x in rest.split())
        elif kind == "fail":
            fail = rest.split()
    return lat, fail


def pct(lat, q):
    return lat[min(len(lat) - 1, int(len(lat) * q))] if lat else float("nan")


with gw, ctl:
    rss_peak = 0
    probe = start_probe(gw.port, "127.0.0.2")
    cprobe = start_probe(ctl.port, "127.0.0.3")
    rss_idle = gw.rss_kb() or 0
    ths = [threading.Thread(target=pusher, args=(gw.port,), daemon=True) for _ in range(CLIENTS)]
    for t in ths:
        t.start()
    end = time.monotonic() + DURATION
    while time.monotonic() < end:
        rss_peak = max(rss_peak, gw.rss_kb() or 0)
        time.sleep(0.02)
    stop.set()
    for t in ths:
        t.join(35)
    lat, pfail = probe_result(probe)
    clat, cfail = probe_result(cprobe)
    hwm = gw.hwm_kb() or 0

    print(f"flood: {CLIENTS} clients x {len(BIG) >> 10} KiB gzip for {DURATION:.0f} s, "
          f"memory_limiter limit_mib {LIMIT} spike {SPIKE}, auth {'on' if AUTH else 'off'}")
    print(f"  RSS idle {rss_idle // 1024} MiB, peak (sampled 20 ms) {rss_peak // 1024} MiB, "
          f"VmHWM {hwm // 1024} MiB")
    print(f"  peak RSS / limit_mib = {rss_peak / 1024 / LIMIT:.2f}   VmHWM / limit_mib = "
          f"{hwm / 1024 / LIMIT:.2f}   (goal <= 1.0)")
    print(f"  status mix: {dict(sorted(statuses.items()))}")
    print(f"  small pushes meanwhile: {len(lat)} ok, {len(pfail)} failed, p50 {pct(lat, 0.5):.1f} ms, "
          f"p99 {pct(lat, 0.99):.1f} ms (goal < 50)")
    print(f"  same probe against an idle gateway meanwhile (the machine's share): {len(clat)} ok, "
          f"{len(cfail)} failed, p50 {pct(clat, 0.5):.1f} ms, p99 {pct(clat, 0.99):.1f} ms; "
          f"p99 ratio flooded / idle = {pct(lat, 0.99) / max(pct(clat, 0.99), 0.001):.1f}")
