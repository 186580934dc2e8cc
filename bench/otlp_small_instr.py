#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# User-space instructions per SDK-sized OTLP/HTTP request (the first SDK capture made into
# OTLP by tests/tools/pg_pprof2otlp), for one or more gateway binaries in one run: each
# started under callgrind (instrumentation off) with the otlp receiver (HTTP, one loop) ->
# debug at basic (/dev/null), warmed with WARM requests, then instrumented while N requests go
# over one kept-alive connection (every thread counted; this VM has no hardware counters for
# perf). Prints instructions per request per binary and each one's ratio to the first (the
# baseline). Env: BINS (comma-separated; default build/pprofgate), N (500), WARM (100),
# ROUNDS (2, alternating binaries; the median is printed).
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mem_probe as mp  # noqa: E402

ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(ROOT, "build"))
BINS = os.environ.get("BINS", os.path.join(BUILD, "pprofgate")).split(",")
P2O = os.path.join(BUILD, "tests", "pg_pprof2otlp")
N = int(os.environ.get("N", "500"))
WARM = int(os.environ.get("WARM", "100"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
PATH = "/v1development/profiles"


def measure(tmp, binary, body):
    cfg = os.path.join(tmp, "small.yaml")
    log = os.path.join(tmp, "small.log")
    with open(cfg, "w") as f:
        f.write("receivers:\n  otlp:\n    loops: 1\n"
                "    protocols:\n      http: {endpoint: 127.0.0.1:0}\n"
                "exporters:\n  debug:\n    verbosity: basic\n    output_paths: [/dev/null]\n"
                "service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n"
                "      exporters: [debug]\n  telemetry:\n    logs: {level: warn}\n")
    cg = os.path.join(tmp, "cg.out")
    with open(log, "w") as lf:
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                                 "--dump-instr=no", "--callgrind-out-file=" + cg,
                                 binary, "--config", cfg], stdout=lf, stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(9):  # valgrind starts slowly: find_port waits 10 s a time
            try:
                port = mp.find_port(proc.pid, log, proc)
                break
            except SystemExit:
                if proc.poll() is not None:
                    raise
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def post():
            c.request("POST", PATH, body=body, headers={"Content-Type": "application/x-protobuf"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError("answered %d" % r.status)
        for _ in range(WARM):
            post()
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        for _ in range(N):
            post()
        time.sleep(0.5)  # the debug writer's last lines
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        c.close()
        if os.environ.get("CG_KEEP"):
            subprocess.run(["cp", cg + ".1", "%s.%s" % (os.environ["CG_KEEP"],
                                                        binary.replace("/", "_"))])
        with open(cg + ".1") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1]) / N
        raise RuntimeError("no callgrind figure")
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    with tempfile.TemporaryDirectory(prefix="pg-otlpsmall.") as tmp:
        small = os.path.join(tmp, "sdk.pb")
        subprocess.run([P2O, os.path.join(ROOT, "tests", "fixtures", "sdk", "push0.pprof.gz"),
                        "-o", small], check=True)
        body = open(small, "rb").read()
        res = {b: [] for b in BINS}
        for _ in range(ROUNDS):
            for b in BINS:
                res[b].append(measure(tmp, b, body))
        base = statistics.median(res[BINS[0]])
        print("otlp_small_instr: %d-byte request, %d requests x %d rounds (idle periods included)"
              % (len(body), N, ROUNDS))
        for b in BINS:
            m = statistics.median(res[b])
            print("%-50s %9.0f instructions/request  %.3fx  (%s)" % (
                b, m, m / base, ", ".join("%.0f" % x for x in res[b])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
