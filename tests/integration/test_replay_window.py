# SPDX-License-Identifier: Apache-2.0
"""The replay's memory budget, on the real binary and the real gRPC server
(tests/node/grpc_server.mjs): a spool of large records (~3 MiB each)
replayed by 16 consumers against a slow destination under a small
memory_limiter, with `compression: none` (a consumer then holds a copy of
the record until it is answered; with gzip the compressed copy, which the
budget also counts). Without a bound the consumers would hold 10 records
and their copies at once; the replay holds at most its budget
(sending_queue::replay_memory, by default half of the soft limit, here
16 MiB: the record as read and its copy while being prepared, then the
copy). This run's window (a quarter of the soft limit) is announced too.
Peak RSS (VmHWM) is checked against the budget, new pushes are answered
during replay, and everything arrives. The exporter's timeout is 30 s: the
Node server takes seconds per 3 MiB request on a loaded machine, and
several on one connection would pass the default 5 s together."""

import glob
import gzip
import json
import os
import re
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
N_SAMPLES = 110000
N_RECORDS = 10
BODY = gzip.compress(big_pprof(30000, N_SAMPLES, 1), 1)
HEADERS = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}
_meta = sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "fixtures", "sdk", "push*.json")))[0]
SMALL = open(_meta.replace(".json", ".pprof.gz"), "rb").read()
SMALL_HEADERS = {k: v for k, v in json.load(open(_meta))["headers"].items()
                 if k in ("content-type", "content-encoding")}
LIMIT_MIB, SPIKE_MIB = 40, 8           # soft limit 32 MiB: window 8 MiB


def ctl(port, path, obj=None):
    method = "GET" if path == "/stats" else "POST"
    data = json.dumps(obj).encode() if obj is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def config(grpc_port, spool, limiter):
    proc = (f"processors:\n  memory_limiter: {{check_interval: 100ms, limit_mib: {LIMIT_MIB}, "
            f"spike_limit_mib: {SPIKE_MIB}}}\n") if limiter else ""
    return f"""extensions:
  file_storage: {{directory: {spool}, fsync: interval, max_size: 1GiB}}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
{proc}exporters:
  otlp:
    endpoint: "127.0.0.1:{grpc_port}"
    tls: {{insecure: true}}
    compression: none
    timeout: 30s
    retry_on_failure: {{initial_interval: 100ms, max_interval: 500ms, max_elapsed_time: 0}}
    sending_queue: {{storage: file_storage, num_consumers: 16}}
service:
  extensions: [file_storage]
  pipelines:
    profiles: {{receivers: [pprof], {"processors: [memory_limiter], " if limiter else ""}exporters: [otlp]}}
"""


spool = tempfile.mkdtemp(prefix="pg-it-window-")
srv = subprocess.Popen(["node", SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, env=dict(os.environ, PG_GRPC_STORE="0"))
info = json.loads(srv.stdout.readline())
grpc, control = info["grpc_port"], info["control_port"]
try:
    ctl(control, "/stop")
    with Gateway(config(grpc, spool, False)) as gw:
        idle = gw.rss_kb() * 1024
        accepted = sum(post(gw.port, "/v1/pprof", BODY, HEADERS, timeout=60)[0] == 204
                       for _ in range(N_RECORDS))
        gw.stop(signal.SIGKILL)
    segs = glob.glob(f"{spool}/*/*.seg")
    spool_bytes = sum(os.path.getsize(p) for p in segs)
    record = spool_bytes / max(accepted, 1)
    print(f"     {accepted} records spooled, {record / MIB:.1f} MiB each; idle RSS "
          f"{idle / MIB:.0f} MiB")
    res.check("large records spooled", accepted == N_RECORDS, accepted)

    ctl(control, "/mode", {"mode": "slow", "delay_ms": 400})
    ctl(control, "/start")
    with Gateway(config(grpc, spool, True)) as gw:
        m = re.search(r"at most (\d+) bytes of this run's spooled",
                      gw.wait_log("read back into memory", 5) and gw.log() or "")
        window = int(m.group(1)) if m else 0
        res.check("window is a quarter of the soft limit", window == (LIMIT_MIB - SPIKE_MIB) * MIB // 4,
                  window)
        m = re.search(r"may hold ([0-9.]+) MiB", gw.log())
        replay_budget = float(m.group(1)) * MIB if m else 0
        res.check("the replay's budget is half the soft limit",
                  replay_budget == (LIMIT_MIB - SPIKE_MIB) * MIB // 2, replay_budget)
        # A small SDK push while the backlog replays (small, so that the
        # peak below is the replay's).
        status, headers, _ = post(gw.port, "/v1/pprof", SMALL, SMALL_HEADERS, timeout=30)
        during = "replayed" not in gw.log()
        answered = status == 204 or (status == 503 and "retry-after" in
                                     {k.lower() for k in headers})
        res.check("a push during replay is answered (204, or 503 + Retry-After)",
                  answered and during, (status, during))
        want = accepted * N_SAMPLES
        end = time.time() + 120
        st = ctl(control, "/stats")
        while st["samples"] < want and time.time() < end:
            time.sleep(0.3)
            st = ctl(control, "/stats")
        hwm = gw.hwm_kb() * 1024
        # The replay's budget (records as read and their copies) + buffers
        # (gRPC, the small push); with a window of all 10 records VmHWM was
        # idle + ~34 MiB without the copies.
        budget = idle + max(replay_budget, 2 * record) + 8 * MIB
        print(f"     replay budget {replay_budget / MIB:.0f} MiB; VmHWM {hwm / MIB:.0f} MiB (bound "
              f"{budget / MIB:.0f} MiB, {N_RECORDS} records = {spool_bytes / MIB:.0f} MiB)")
        res.check("VmHWM within idle + the replay's budget + allowance", hwm <= budget,
                  f"{hwm / MIB:.0f} > {budget / MIB:.0f} MiB")
        res.check("every spooled sample delivered", st["samples"] >= want, (st["samples"], want))
finally:
    srv.terminate()
    srv.wait(5)
    subprocess.run(["rm", "-rf", spool], check=False)
res.finish()
