#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# One large OTLP request at the floor (issues 23 and 26): the ~60 000-sample
# profile of bench/translate_gen_large.py made into an OTLP request
# (tests/tools/pg_pprof2otlp: two profiles, 120 000 samples, 4.4 MB) POSTed
# back to back over OTLP/HTTP (protobuf, uncompressed) to the real binary (the
# otlp receiver -> debug exporter at basic, output /dev/null), per receiver
# `loops` setting (LOOPS, default 1,default). Per request: the gateway's CPU
# (sum of /proc/PID/task/*/schedstat, read once RSS settled) against a bare
# protobuf-c unpack + free of the same bytes (bench/otlp_unpack, best of runs
# just before the first and after the last request: a ratio of figures measured
# in the same run), and its minor page faults. Then:
#   CPU per request / bare unpack (goal <= 2), median of the requests after the first;
#   VmHWM growth / request size (goal <= 3), counted from before the warm-up's
#     medium requests (so each loop's first large-ish request counts against it);
#   RSS 0, 5 and 10 s after the last request against idle (goal: within 10 % by 10 s),
#     idle read IDLE_WAIT (7) s after the warm-up, once the buffer pool's decay ran;
#   and the same against a fresh process's RSS one second after start
#     (what bench/otlp_in.sh compares with).
# Env: PPROFGATE_BIN (build/pprofgate), PG_BUILD_DIR (build), PUSHES (6), LOOPS, IDLE_WAIT.
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mem_probe as mp  # noqa: E402  (start-up, /proc readers)

ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(ROOT, "build"))
BIN = os.environ.get("PPROFGATE_BIN", os.path.join(BUILD, "pprofgate"))
P2O = os.path.join(BUILD, "tests", "pg_pprof2otlp")
UNPACK = os.path.join(BUILD, "bench", "otlp_unpack")
PUSHES = int(os.environ.get("PUSHES", "6"))
LOOPS = os.environ.get("LOOPS", "1,default").split(",")
IDLE_WAIT = float(os.environ.get("IDLE_WAIT", "7"))
PATH = "/v1development/profiles"


def cpu_ns(pid):
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                n += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return n


def minflt(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", PATH, body=body, headers={"Content-Type": "application/x-protobuf"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def unpack_ms(path):
    """CPU per bare protobuf-c unpack of @path (its own clock), best of 3 runs of 3."""
    best = None
    for _ in range(3):
        out = subprocess.run([UNPACK, path, "3"], capture_output=True, text=True, check=True)
        ms = float(out.stdout.split()[1])
        best = ms if best is None or ms < best else best
    return best


def run(tmp, loops, large_path, large, medium, small):
    cfg = os.path.join(tmp, "otlp-%s.yaml" % loops)
    log = os.path.join(tmp, "otlp-%s.log" % loops)
    lline = "" if loops == "default" else "    loops: %s\n" % loops
    with open(cfg, "w") as f:
        f.write("receivers:\n  otlp:\n" + lline +
                "    protocols:\n      http: {endpoint: 127.0.0.1:0}\n"
                "exporters:\n  debug:\n    verbosity: basic\n    output_paths: [/dev/null]\n"
                "service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n"
                "      exporters: [debug]\n  telemetry:\n    logs: {level: warn}\n")
    with open(log, "w") as lf:
        proc = subprocess.Popen([BIN, "--config", cfg], stdout=lf, stderr=subprocess.STDOUT)
    try:
        pid = proc.pid
        port = mp.find_port(pid, log, proc)
        time.sleep(1.0)
        fresh = mp.status(pid)["VmRSS"]
        # SDK-sized requests over 4 connections at once (every loop serves some), then
        # 4 medium ones: each loop's one-time set-up is idle, not the large request's.
        warm = [threading.Thread(target=lambda: [post(port, small) for _ in range(16)])
                for _ in range(4)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        idle0 = mp.settle(pid)
        warm = [threading.Thread(target=lambda: post(port, medium)) for _ in range(4)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        time.sleep(IDLE_WAIT)
        idle = mp.settle(pid)
        pushes = []
        unp = [unpack_ms(large_path)]
        for _ in range(PUSHES):
            # Back to back: a pause past the buffer pool's decay (5 s) would make each
            # request map and fault its memory afresh.
            c0, f0 = cpu_ns(pid), minflt(pid)
            code = post(port, large)
            mp.settle(pid, 2.0)  # the debug writer finishes after the answer
            c1, f1 = cpu_ns(pid), minflt(pid)
            pushes.append({"code": code, "cpu": (c1 - c0) / 1e6, "flt": f1 - f0})
        unp.append(unpack_ms(large_path))
        for x in pushes:
            x["unpack"] = min(unp)
        after = [mp.status(pid)["VmRSS"]]
        t_last = time.monotonic()
        for at in (5.0, 10.0):
            time.sleep(max(0.0, t_last + at - time.monotonic()))
            after.append(mp.status(pid)["VmRSS"])
        return {"pushes": pushes, "idle": idle["VmRSS"], "fresh": fresh,
                "growth": mp.status(pid)["VmHWM"] - idle0["VmHWM"], "after": after}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    for f in (BIN, P2O, UNPACK):
        if not os.access(f, os.X_OK):
            print("otlp_large: missing %s (build pprofgate, pg_pprof2otlp and otlp_unpack)" % f)
            return 2
    with tempfile.TemporaryDirectory(prefix="pg-otlplarge.") as tmp:
        def make(name, *extra):
            raw = os.path.join(tmp, name + ".pprof")
            subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), raw,
                            "--gzip", raw + ".gz", *extra], check=True, stdout=subprocess.DEVNULL)
            out = os.path.join(tmp, name + ".pb")
            subprocess.run([P2O, raw + ".gz", "-o", out], check=True)
            return out
        large_path = make("large")
        medium_path = make("medium", "--samples", "1000")
        small_path = os.path.join(tmp, "sdk.pb")
        subprocess.run([P2O, os.path.join(ROOT, "tests", "fixtures", "sdk", "push0.pprof.gz"),
                        "-o", small_path], check=True)
        large, medium, small = (open(p, "rb").read() for p in (large_path, medium_path, small_path))
        print("otlp_large: %s, request %d bytes (OTLP protobuf, uncompressed), %d requests per "
              "loops setting; load %s" % (os.path.basename(BIN), len(large), PUSHES,
                                          open("/proc/loadavg").read().split()[0]))
        print("%-8s %-6s %-20s %-18s %-16s %-10s %-8s %-24s %-22s %s" % (
            "loops", "req1", "CPU/req ms (2..N)", "bare unpack ms", "CPU/unpack", "faults/req",
            "HWM/req", "RSS +0/+5/+10 s vs idle", "+10 s vs fresh", "status"))
        for lp in LOOPS:
            r = run(tmp, lp, large_path, large, medium, small)
            p = r["pushes"]
            rest = p[1:] if len(p) > 1 else p
            cpu = [x["cpu"] for x in rest]
            unp = [x["unpack"] for x in rest][:1]
            ratio = [x["cpu"] / x["unpack"] for x in rest]
            pct = ["%+.0f%%" % (100.0 * (a - r["idle"]) / r["idle"]) for a in r["after"]]
            print("%-8s %-6s %-20s %-18s %-16s %-10s %-8s %-24s %-22s %s" % (
                lp, "%.0f" % p[0]["cpu"],
                "%.0f (%.0f-%.0f)" % (statistics.median(cpu), min(cpu), max(cpu)),
                "%.1f" % unp[0],
                "%.2fx (%.2f-%.2f)" % (statistics.median(ratio), min(ratio), max(ratio)),
                "%.0f" % statistics.median([x["flt"] for x in rest]),
                "%.2fx" % (r["growth"] / len(large)),
                "%s (idle %.1f MiB)" % ("/".join(pct), r["idle"] / 2**20),
                "%+.0f%% (fresh %.1f MiB)" % (100.0 * (r["after"][-1] - r["fresh"]) / r["fresh"],
                                              r["fresh"] / 2**20),
                ",".join(str(x["code"]) for x in p)))
            sys.stdout.flush()
        print("goals: CPU/unpack <= 2; HWM/req <= 3; RSS within 10% of idle by +10 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
