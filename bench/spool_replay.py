#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Start-up time and replay throughput against spool size, on the real
binary and the real gRPC server (tests/node/grpc_server.mjs --discard: it
counts requests without decoding them, so the gateway is what is measured).

For each size (MiB; default 1 16 256 1024) a spool of copies of one encoded
request (a translated pprof, ~0.5 MiB) is written with `spool_bench fill`,
then pprofgate starts on it: start-up = spawn to the listening line; replay
= spool bytes / time until the server has every request, next to a baseline
in the same run: reading the same segment files (page cache warm, as the
gateway finds them). Also the gateway's VmHWM. Figures and ratios only.

The destination (node) is slower than the gateway here, so replay MB/s is
the pair's; "MB/CPU-s" is spool MB per gateway CPU second, the gateway's
own cost. --startup-only stops once the listening line is there.

  bench/spool_replay.py [--startup-only] [BUILD_DIR] [SIZES_MIB...]

--live [--large] [BUILD_DIR] [SIZE_MIB]: the replay under memory_limiter
(limit_mib 150, spike_limit_mib 30; the replay's budget is then 60 MiB)
with and without live load (small SDK-sized pushes, 20 a second, while the
backlog drains): replay MB/s (spool bytes / time until every spooled
request arrived), peak RSS sampled every 10 ms during the replay, and the
live pushes answered 204 of those made. --large: records of ~5.8 MB, over
the exporter's max_request_bytes (4 MiB), so each is decoded and split
when sent, as in issue 29; default the ~0.5 MiB record above."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration", "lib"))
from pg_pprof import big_pprof  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ("--startup-only", "--live", "--large")]
startup_only = "--startup-only" in sys.argv
live_mode = "--live" in sys.argv
large = "--large" in sys.argv
build = args[0] if args else os.path.join(SRC, "build")
sizes = [int(x) for x in args[1:]] or ([256] if live_mode else [1, 16, 256, 1024])
MIB = 1 << 20
tmp = tempfile.mkdtemp(prefix="pg-spool-replay-", dir="/var/tmp")


def stats(control):
    with urllib.request.urlopen(f"http://127.0.0.1:{control}/stats", timeout=10) as r:
        return json.loads(r.read())




def live_run(mib, live):
    """One replay of a @mib spool under memory_limiter; @live: pushes a second meanwhile."""
    import gzip
    import threading
    import urllib.error

    root = os.path.join(tmp, f"live{mib}-{live}")
    spool = os.path.join(root, "exporter_otlp")
    out = subprocess.run([os.path.join(build, "bench", "spool_bench"), "fill", spool, payload,
                          str(mib * MIB)], check=True, capture_output=True, text=True).stdout
    n_rec, n_bytes = (int(x) for x in out.split())
    srv = subprocess.Popen(["node", os.path.join(SRC, "tests", "node", "grpc_server.mjs"),
                            "--discard"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, env=dict(os.environ, PG_GRPC_STORE="0"))
    info = json.loads(srv.stdout.readline())
    cfg = os.path.join(root, "config.yaml")
    with open(cfg, "w") as f:
        f.write(f"""extensions:
  file_storage: {{directory: {root}, max_size: {2 * mib + 64}MiB}}
receivers:
  pprof: {{server: {{endpoint: "127.0.0.1:0"}}}}
processors:
  memory_limiter: {{check_interval: 100ms, limit_mib: 150, spike_limit_mib: 30}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{info['grpc_port']}"
    tls: {{insecure: true}}
    timeout: 30s
    sending_queue: {{storage: file_storage, sizer: bytes, queue_size: {4 * mib * MIB}}}
service:
  extensions: [file_storage]
  pipelines: {{profiles: {{receivers: [pprof], processors: [memory_limiter], exporters: [otlp]}}}}
""")
    log = os.path.join(root, "gw.log")
    with open(log, "wb") as lf:
        gw = subprocess.Popen([os.path.join(build, "pprofgate"), "--config", cfg], stdout=lf,
                              stderr=subprocess.STDOUT)
    t0 = time.time()
    port = None
    while time.time() - t0 < 60 and port is None:
        m = re.search(r"listening on [0-9.]+:(\d+)", open(log, errors="replace").read())
        port = int(m.group(1)) if m else None
        time.sleep(0.005)
    peak, codes, done = [0], [], [False]

    def sample():
        while not done[0]:
            try:
                with open(f"/proc/{gw.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            peak[0] = max(peak[0], int(line.split()[1]) * 1024)
            except OSError:
                return
            time.sleep(0.01)

    def push_live():
        body = gzip.compress(big_pprof(50, 300, 7), 1)
        for _ in range(20 * 600):  # 20 a second, for at most 10 minutes
            if done[0]:
                return
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/pprof", data=body,
                                         method="POST", headers={"Content-Encoding": "gzip"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    codes.append(r.status)
            except urllib.error.HTTPError as e:
                codes.append(e.code)
            except OSError:
                codes.append(0)
            time.sleep(0.05)

    threads = [threading.Thread(target=sample, daemon=True)]
    if live:
        threads.append(threading.Thread(target=push_live, daemon=True))
    for t in threads:
        t.start()
    deadline = time.time() + 900
    while stats(info["control_port"])["requests"] < n_rec + len(codes) and time.time() < deadline:
        time.sleep(0.05)
    took = time.time() - t0
    done[0] = True
    for t in threads:
        t.join(15)
    got = stats(info["control_port"])["requests"]
    gw.terminate()
    gw.wait(15)
    srv.terminate()
    srv.wait(5)
    ok = sum(c == 204 for c in codes)
    print(f"{mib:>9} {n_rec:>8} {'20/s' if live else 'none':>6} {n_bytes / MIB / took:>11.1f} "
          f"{peak[0] / MIB:>13.1f} {f'{ok}/{len(codes)}' if live else '-':>12}"
          + ("" if got >= n_rec else f"  ({got} of {n_rec} delivered)"))
    if os.environ.get("PG_BENCH_KEEP") is None:
        shutil.rmtree(root, ignore_errors=True)


if live_mode:
    try:
        pprof = os.path.join(tmp, "p.pprof")
        payload = os.path.join(tmp, "p.otlp")
        with open(pprof, "wb") as f:
            f.write(big_pprof(40000, 200000, 1) if large else big_pprof(4000, 12000, 1))
        subprocess.run([os.path.join(build, "tests", "pg_pprof2otlp"), pprof, "-o", payload],
                       check=True)
        print(f"record: {os.path.getsize(payload)} bytes (encoded OTLP request); memory_limiter "
              f"limit_mib 150, spike_limit_mib 30")
        print(f"{'spool MiB':>9} {'records':>8} {'live':>6} {'replay MB/s':>11} "
              f"{'peak RSS MiB':>13} {'live 204':>12}")
        for mib in sizes:
            live_run(mib, False)
            live_run(mib, True)
    finally:
        if os.environ.get("PG_BENCH_KEEP") is None:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0)

pprof = os.path.join(tmp, "p.pprof")
payload = os.path.join(tmp, "p.otlp")
with open(pprof, "wb") as f:
    f.write(big_pprof(4000, 12000, 1))
subprocess.run([os.path.join(build, "tests", "pg_pprof2otlp"), pprof, "-o", payload], check=True)
print(f"record: {os.path.getsize(payload)} bytes (encoded OTLP request)")
print(f"{'spool MiB':>9} {'records':>8} {'start s':>8} {'start/1st':>9} {'replay MB/s':>11} "
      f"{'read MB/s':>9} {'ratio':>6} {'VmHWM MiB':>9} {'MB/CPU-s':>8}")
first_start = None
try:
    for mib in sizes:
        root = os.path.join(tmp, f"s{mib}")
        spool = os.path.join(root, "exporter_otlp")
        out = subprocess.run([os.path.join(build, "bench", "spool_bench"), "fill", spool, payload,
                              str(mib * MIB)], check=True, capture_output=True, text=True).stdout
        n_rec, n_bytes = (int(x) for x in out.split())
        t0 = time.time()
        for p in glob.glob(f"{spool}/*.seg"):
            with open(p, "rb") as f:
                while f.read(8 * MIB):
                    pass
        read_mbs = n_bytes / MIB / max(time.time() - t0, 1e-6)
        srv = subprocess.Popen(["node", os.path.join(SRC, "tests", "node", "grpc_server.mjs"),
                                "--discard"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=dict(os.environ, PG_GRPC_STORE="0"))
        info = json.loads(srv.stdout.readline())
        cfg = os.path.join(root, "config.yaml")
        with open(cfg, "w") as f:
            f.write(f"""extensions:
  file_storage: {{directory: {root}, max_size: {2 * mib + 64}MiB}}
receivers:
  pprof: {{server: {{endpoint: "127.0.0.1:0"}}}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{info['grpc_port']}"
    tls: {{insecure: true}}
    compression: none
    sending_queue: {{storage: file_storage, sizer: bytes, queue_size: {4 * mib * MIB}}}
service:
  extensions: [file_storage]
  pipelines: {{profiles: {{receivers: [pprof], exporters: [otlp]}}}}
""")
        log = os.path.join(root, "gw.log")
        t0 = time.time()
        with open(log, "wb") as lf:
            gw = subprocess.Popen([os.path.join(build, "pprofgate"), "--config", cfg], stdout=lf,
                                  stderr=subprocess.STDOUT)
        start = None
        while time.time() - t0 < 120:
            if re.search(r"listening on", open(log, errors="replace").read()):
                start = time.time() - t0
                break
            time.sleep(0.005)
        deadline = time.time() + (0 if startup_only else 900)
        while stats(info["control_port"])["requests"] < n_rec and time.time() < deadline:
            time.sleep(0.05)
        took = time.time() - t0
        hwm = 0
        with open(f"/proc/{gw.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) // 1024
        got = stats(info["control_port"])["requests"]
        with open(f"/proc/{gw.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        gw.terminate()
        gw.wait(15)
        srv.terminate()
        srv.wait(5)
        if first_start is None:
            first_start = start
        mbs = n_bytes / MIB / took
        if startup_only:
            print(f"{mib:>9} {n_rec:>8} {start:>8.3f} {start / first_start:>9.2f} {'-':>11} "
                  f"{read_mbs:>9.0f} {'-':>6} {hwm:>9} {'-':>8}")
            shutil.rmtree(root, ignore_errors=True)
            continue
        print(f"{mib:>9} {n_rec:>8} {start:>8.3f} {start / first_start:>9.2f} {mbs:>11.1f} "
              f"{read_mbs:>9.0f} {mbs / read_mbs:>6.3f} {hwm:>9} "
              f"{got * n_bytes / n_rec / MIB / max(cpu, 0.01):>8.0f}"
              + ("" if got >= n_rec else f"  ({got} of {n_rec} delivered)"))
        if os.environ.get("PG_BENCH_KEEP") is None:
            shutil.rmtree(root, ignore_errors=True)
finally:
    if os.environ.get("PG_BENCH_KEEP") is None:
        shutil.rmtree(tmp, ignore_errors=True)
