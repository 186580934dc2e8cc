#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# On-demand soak (not part of `make test`, whose short form is
# tests/integration/test_durability_memory.py): the destination is down for
# DOWN_SECONDS while large pushes arrive steadily at a gateway with a
# persistent queue (disk budget) and a memory_limiter (memory budget).
# Passes when
#   * the gateway's peak RSS (VmHWM) stays within memory_limiter's limit_mib,
#   * every 503 carries Retry-After and comes only once a budget is full (the
#     spool holds at least DISK_BUDGET minus SLACK_MIB, since the exporter
#     checks a push by its in-memory size before encoding it; or the memory
#     limit is named in the answer),
#   * after the destination returns, every sample of every 204 arrives.
# usage: tests/soak/durability_soak.sh [BUILD_DIR]
#   env: DOWN_SECONDS (600) PUSH_PER_SEC (2) DISK_BUDGET_MIB (256) LIMIT_MIB (192)
#        SLACK_MIB (16)
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
export PPROFGATE_BIN="${PPROFGATE_BIN:-$build/pprofgate}"
export PG_SOURCE_DIR="$src" PG_FIXTURES="$src/tests/fixtures"
exec python3 - <<'PY'
import glob, gzip, json, os, shutil, subprocess, sys, tempfile, time, urllib.request
sys.path.insert(0, os.path.join(os.environ["PG_SOURCE_DIR"], "tests", "integration", "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, post
from pg_pprof import big_pprof

MIB = 1 << 20
down = int(os.environ.get("DOWN_SECONDS", "600"))
rate = float(os.environ.get("PUSH_PER_SEC", "2"))
disk_budget = int(os.environ.get("DISK_BUDGET_MIB", "256")) * MIB
limit_mib = int(os.environ.get("LIMIT_MIB", "192"))
slack = int(os.environ.get("SLACK_MIB", "16")) * MIB
N_SAMPLES = 60000
HEADERS = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}
bodies = [gzip.compress(big_pprof(20000, N_SAMPLES, t), 1) for t in range(4)]
res = Results()
srv = subprocess.Popen(["node", os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       env=dict(os.environ, PG_GRPC_STORE="0"))
info = json.loads(srv.stdout.readline())


def ctl(path):
    method = "GET" if path == "/stats" else "POST"
    req = urllib.request.Request(f"http://127.0.0.1:{info['control_port']}{path}", method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


spool = tempfile.mkdtemp(prefix="pg-soak-spool-")
cfg = f"""
extensions:
  file_storage:
    directory: {spool}
    fsync: interval
    max_size: {disk_budget * 2}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
processors:
  memory_limiter: {{check_interval: 1s, limit_mib: {limit_mib}, spike_limit_mib: {limit_mib // 4}}}
exporters:
  otlp:
    endpoint: 127.0.0.1:{info['grpc_port']}
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 1s, max_interval: 5s, max_elapsed_time: 0s}}
    sending_queue: {{storage: file_storage, sizer: bytes, queue_size: {disk_budget}, num_consumers: 4}}
service:
  extensions: [file_storage]
  pipelines:
    profiles: {{receivers: [pprof], processors: [memory_limiter], exporters: [otlp]}}
"""


def spool_bytes():
    return sum(os.path.getsize(p) for p in glob.glob(f"{spool}/*/*.seg"))


try:
    ctl("/stop")
    with Gateway(cfg) as gw:
        start = time.time()
        ok = busy = other = 0
        early = []            # 503s while no budget was full
        no_retry_after = 0
        rss_max = 0
        i = 0
        next_print = start + 30
        while time.time() - start < down:
            t0 = time.time()
            status, headers, body = post(gw.port, "/v1/pprof", bodies[i % len(bodies)], HEADERS,
                                         timeout=30)
            i += 1
            if status == 204:
                ok += 1
            elif status == 503:
                busy += 1
                no_retry_after += "retry-after" not in {k.lower() for k in headers}
                text = body.decode("utf-8", "replace")
                # The exporter checks a push against the budget before encoding
                # it, by its in-memory size (several times the encoded size):
                # "full" is within SLACK_MIB of the budget.
                disk_full = spool_bytes() >= disk_budget - slack
                if not disk_full and "memory" not in text:
                    early.append((round(time.time() - start), spool_bytes() // MIB, text[:120]))
            else:
                other += 1
            rss_max = max(rss_max, gw.rss_kb())
            if time.time() >= next_print:
                print(f"     t={time.time() - start:4.0f}s destination down: {ok} accepted, "
                      f"{busy} refused (503), spool {spool_bytes() / MIB:.0f} MiB, RSS "
                      f"{gw.rss_kb() / 1024:.0f} MiB, VmHWM {gw.hwm_kb() / 1024:.0f} MiB",
                      flush=True)
                next_print += 30
            time.sleep(max(0.0, 1.0 / rate - (time.time() - t0)))
        hwm = gw.hwm_kb() * 1024
        on_disk = spool_bytes()
        ctl("/start")
        t_up = time.time()
        want = ok * N_SAMPLES
        st = ctl("/stats")
        while st["samples"] < want and time.time() - t_up < max(300, down):
            time.sleep(1)
            st = ctl("/stats")
        drain = time.time() - t_up
        print(f"     destination down {down}s at {rate}/s: {i} pushes, {ok} accepted, {busy} 503, "
              f"{other} other; spool peak {on_disk / MIB:.0f} MiB (budget {disk_budget / MIB:.0f}"
              f" MiB); VmHWM {hwm / MIB:.0f} MiB (limit {limit_mib} MiB); delivered "
              f"{st['samples']}/{want} samples in {drain:.0f}s after it returned")
        res.check("pushes accepted while the destination is down", ok > 0, ok)
        res.check("no answer other than 204/503", other == 0, other)
        res.check("503 only when a budget is full", not early, early[:3])
        res.check("every 503 carries Retry-After", no_retry_after == 0, no_retry_after)
        res.check("VmHWM within memory_limiter's limit", hwm <= limit_mib * MIB,
                  f"{hwm / MIB:.0f} MiB")
        res.check("zero loss after the destination returns", st["samples"] >= want,
                  (st["samples"], want))
finally:
    srv.terminate()
    srv.wait(5)
    shutil.rmtree(spool, ignore_errors=True)
res.finish()
PY
