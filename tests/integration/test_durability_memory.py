# SPDX-License-Identifier: Apache-2.0
"""Bounded memory under pressure, on the real binary and the real gRPC
server (tests/node/grpc_server.mjs):

1. Destination down, large pushes, `sending_queue: {sizer: bytes}`: RSS
   stays within the queue budget (plus a fixed allowance for requests being
   received), pushes past the budget get 503 + Retry-After, and once the
   destination is back every accepted sample arrives.
2. A spool of large requests left by a killed gateway: the next start reads
   it back a record per consumer (RSS growth below the spool's size),
   answers new pushes with 204 while the backlog is replayed, and delivers
   everything."""

import glob
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, post  # noqa: E402
from pg_pprof import big_pprof  # noqa: E402

res = Results()
SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
MIB = 1 << 20
N_SAMPLES = 60000
BODY = gzip.compress(big_pprof(20000, N_SAMPLES, 1), 1)
HEADERS = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen(["node", SERVER, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     env=dict(os.environ, PG_GRPC_STORE="0"))
        info = json.loads(self.proc.stdout.readline())
        self.port, self.control = info["grpc_port"], info["control_port"]

    def call(self, path, obj=None):
        data = json.dumps(obj).encode() if obj is not None else None
        method = "POST" if path != "/stats" else "GET"
        req = urllib.request.Request(f"http://127.0.0.1:{self.control}{path}",
                                     data=data if data is not None else (b"" if method == "POST"
                                                                         else None),
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def wait_samples(self, want, timeout):
        end = time.time() + timeout
        st = self.call("/stats")
        while st["samples"] < want and time.time() < end:
            time.sleep(0.2)
            st = self.call("/stats")
        return st

    def close(self):
        self.proc.terminate()
        self.proc.wait(5)


def config(port, queue, extensions=""):
    return f"""{extensions}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{port}"
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 500ms, max_elapsed_time: 0}}
    sending_queue: {queue}
service:
  {"extensions: [file_storage]" if extensions else ""}
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""


def push():
    return post(gw.port, "/v1/pprof", BODY, HEADERS, timeout=30)


# ---- 1. destination down, bytes budget, no storage ----------------------------
BUDGET = 96 * MIB
srv = Server()
try:
    srv.call("/stop")
    with Gateway(config(srv.port, f"{{sizer: bytes, queue_size: {BUDGET}, num_consumers: 2}}")) as gw:
        base = gw.rss_kb() * 1024
        ok = busy = 0
        retry_after = True
        t0 = time.time()
        for i in range(40):
            status, headers, body = push()
            if status == 204:
                ok += 1
            elif status == 503:
                busy += 1
                retry_after = retry_after and "retry-after" in headers
            if busy >= 3 or time.time() - t0 > 30:
                break
        hwm = gw.hwm_kb() * 1024
        grow = hwm - base
        print(f"     {ok} accepted, {busy} refused; VmHWM grew {grow / MIB:.0f} MiB over "
              f"{base / MIB:.0f} MiB (budget {BUDGET / MIB:.0f} MiB)")
        res.check("pushes accepted until the budget is full", ok >= 2, ok)
        res.check("then 503 (budget full)", busy >= 1, busy)
        res.check("503s carry Retry-After", retry_after)
        # Allowance: requests being received and translated (a few times one push).
        res.check("RSS within the budget (+64 MiB allowance)", grow <= BUDGET + 64 * MIB,
                  f"{grow / MIB:.0f} MiB")
        srv.call("/start")
        st = srv.wait_samples(ok * N_SAMPLES, 60)
        res.check("every accepted sample delivered after the destination returns",
                  st["samples"] == ok * N_SAMPLES, (st["samples"], ok * N_SAMPLES))
finally:
    srv.close()

# ---- 2. restart on a large spool ---------------------------------------------------
spool = tempfile.mkdtemp(prefix="pg-it-spool-")
EXT = f"""extensions:
  file_storage:
    directory: {spool}
    fsync: interval
    max_size: 2GiB
"""
srv = Server()
try:
    srv.call("/stop")
    queue = "{storage: file_storage, sizer: bytes, queue_size: 2000000000, num_consumers: 2}"
    with Gateway(config(srv.port, queue, EXT)) as gw:
        accepted = 0
        t0 = time.time()
        for i in range(30):
            status, _, body = push()
            accepted += status == 204
            if time.time() - t0 > 20:
                break
        gw.stop(signal.SIGKILL)
    spool_bytes = sum(os.path.getsize(p) for p in glob.glob(f"{spool}/*/*.seg"))
    print(f"     {accepted} pushes spooled: {spool_bytes / MIB:.0f} MiB on disk")
    res.check("pushes spooled while the destination is down", accepted >= 15, accepted)
    srv.call("/mode", {"mode": "slow", "delay_ms": 150})
    srv.call("/start")
    t0 = time.time()
    with Gateway(config(srv.port, queue, EXT)) as gw:
        ready = time.time() - t0
        base = gw.rss_kb() * 1024
        new_ok = 0
        for i in range(3):
            status, _, body = post(gw.port, "/v1/pprof", BODY, HEADERS, timeout=30)
            new_ok += status == 204
        during = "replayed" not in gw.log()
        res.check("new pushes answered 204 while the backlog replays", new_ok == 3 and during,
                  (new_ok, during))
        st = srv.wait_samples((accepted + 3) * N_SAMPLES, 90)
        hwm = gw.hwm_kb() * 1024
        print(f"     start-up {ready:.2f}s; VmHWM {hwm / MIB:.0f} MiB (base {base / MIB:.0f} MiB) "
              f"replaying {spool_bytes / MIB:.0f} MiB")
        res.check("every spooled and new sample delivered", st["samples"] >= (accepted + 3) *
                  N_SAMPLES, (st["samples"], (accepted + 3) * N_SAMPLES))
        # Decoded, the backlog would take ~8x its encoded size; reading it a
        # record per consumer keeps the growth under the spool's own size.
        res.check("RSS growth below the spool size (a record per consumer)",
                  hwm - base < spool_bytes,
                  f"{(hwm - base) / MIB:.0f} MiB vs {spool_bytes / MIB:.0f} MiB")
        res.check("start-up does not read the spool (< 3 s)", ready < 3, ready)
        gw.wait_log("replayed", 5)
finally:
    srv.close()
    subprocess.run(["rm", "-rf", spool], check=False)
res.finish()
