#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Process-level memory of one large push: what a container's memory limit
# sees, not the translator's own accounting. For each `server.workers`
# setting it starts the real binary (receiver -> debug exporter, output to
# /dev/null), reads VmHWM/VmRSS from /proc/PID/status at idle, POSTs the
# large generated profile (bench/translate_gen_large.py, gzip'd) PUSHES times
# one after the other, and prints the peak growth divided by the raw
# (uncompressed) pprof size (goal <= 4.0) and RSS after the last push against
# idle (goal: within 10%).
# usage: bench/mem_probe.py [--bin build/pprofgate] [--workers 0,1,default]
#                           [--pushes 1] [--verbosity basic] [--no-warm-workers]
# RSS at idle is measured after SDK pushes and four medium (1 000-sample,
# ~110 KB gzip) pushes, so each worker thread has run a job (see
# --no-warm-workers); peak growth is still counted from before those.
import argparse
import gzip
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    return out


def wait_port(log, proc, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            break
        with open(log) as f:
            m = re.search(r"listening on [0-9.]+:([0-9]+)", f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    with open(log) as f:
        sys.stderr.write(f.read())
    raise SystemExit("mem_probe: the gateway did not start")


def push(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/v1/pprof", body=body,
              headers={"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def settle(pid, seconds=1.0):
    """RSS once it stops moving (the debug writer and workers finish after the
    reply), sampled every 50 ms for up to @seconds."""
    last, same = None, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rss = status(pid)["VmRSS"]
        same = same + 1 if rss == last else 0
        if same >= 4:
            break
        last = rss
        time.sleep(0.05)
    return status(pid)


def run(args, tmp, workers, body, raw_len):
    cfg = os.path.join(tmp, "gw-%s.yaml" % workers)
    log = os.path.join(tmp, "gw-%s.log" % workers)
    wline = "" if workers == "default" else "      workers: %s\n" % workers
    with open(cfg, "w") as f:
        f.write("receivers:\n  pprof:\n    server:\n      endpoint: 127.0.0.1:0\n" + wline +
                "exporters:\n  debug:\n    verbosity: %s\n    output_paths: [/dev/null]\n" % args.verbosity +
                "service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n"
                "      exporters: [debug]\n  telemetry:\n    logs: {level: warn}\n")
    with open(log, "w") as lf:
        proc = subprocess.Popen([args.bin, "--config", cfg], stdout=lf, stderr=subprocess.STDOUT)
    try:
        # A warn-level log has no "listening" line: read the port from /proc.
        port = find_port(proc.pid, log, proc)
        # Small SDK pushes first, 4 connections at once so every worker gets
        # some: each thread's lazy set-up (libevent, its malloc arena, its
        # stack) counts as idle, not as the large push's cost; idle = a
        # gateway that has served SDK traffic.
        warm = [threading.Thread(target=lambda: [push(port, args.small) for _ in range(16)])
                for _ in range(4)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        idle0 = settle(proc.pid)
        if args.medium is not None:
            # SDK pushes never reach the workers (small bodies run on the
            # loop): medium ones, 4 at once, so each worker's one-time set-up
            # (its malloc heap, the heap sampler's first unwind: libunwind maps
            # 256 KiB per thread) is idle too, not the large push's leftover.
            warm = [threading.Thread(target=lambda: push(port, args.medium)) for _ in range(4)]
            for t in warm:
                t.start()
            for t in warm:
                t.join()
        idle = settle(proc.pid)
        codes, after = [], []
        for _ in range(args.pushes):
            codes.append(push(port, body))
            after.append(settle(proc.pid))
        last = after[-1]
        # Peak growth from before the workers' first jobs (their set-up counts
        # against the large push, as before); RSS against the warmed idle.
        growth = last["VmHWM"] - idle0["VmHWM"]
        return {
            "workers": workers, "codes": codes, "idle_rss": idle["VmRSS"], "idle_hwm": idle0["VmHWM"],
            "growth": growth, "ratio": growth / raw_len, "first_growth": after[0]["VmHWM"] - idle0["VmHWM"],
            "rss_after": last["VmRSS"], "rss_pct": 100.0 * (last["VmRSS"] - idle["VmRSS"]) / idle["VmRSS"],
        }
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def find_port(pid, log, proc):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if proc.poll() is not None:
            break
        inodes = set()
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                except OSError:
                    continue
                if t.startswith("socket:["):
                    inodes.add(t[8:-1])
        except OSError:
            pass
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                p = line.split()
                # state 0A = LISTEN
                if p[3] == "0A" and p[9] in inodes:
                    return int(p[1].split(":")[1], 16)
        time.sleep(0.05)
    with open(log) as f:
        sys.stderr.write(f.read())
    raise SystemExit("mem_probe: the gateway did not start")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("PPROFGATE_BIN",
                                                    os.path.join(HERE, "..", "build", "pprofgate")))
    ap.add_argument("--workers", default="0,1,default")
    ap.add_argument("--pushes", type=int, default=1)
    ap.add_argument("--verbosity", default="basic")
    ap.add_argument("--no-warm-workers", action="store_true",
                    help="idle = after SDK pushes only (worker threads never ran a job)")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        raise SystemExit("mem_probe: missing %s (build the pprofgate target)" % args.bin)
    with tempfile.TemporaryDirectory(prefix="pg-memprobe.") as tmp:
        raw = os.path.join(tmp, "large.pprof")
        subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), raw, "--gzip",
                        raw + ".gz"], check=True, stdout=subprocess.DEVNULL)
        raw_len = os.path.getsize(raw)
        with open(raw + ".gz", "rb") as f:
            body = f.read()
        with open(os.path.join(HERE, "..", "tests", "fixtures", "sdk", "push0.pprof.gz"), "rb") as f:
            args.small = f.read()
        args.medium = None
        if not args.no_warm_workers:
            mid = os.path.join(tmp, "medium.pprof")
            subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), mid,
                            "--gzip", mid + ".gz", "--samples", "1000"], check=True,
                           stdout=subprocess.DEVNULL)
            with open(mid + ".gz", "rb") as f:
                args.medium = f.read() # over the receiver's 64 KiB inline limit: a worker's job
        print("mem_probe: %s, body %d bytes gzip'd, %d raw; %d push(es) each; debug at %s; idle after %s" %
              (os.path.basename(args.bin), len(body), raw_len, args.pushes, args.verbosity,
               "SDK pushes only" if args.medium is None else
               "SDK pushes and 4 x %d-byte pushes (the workers' first jobs)" % len(args.medium)))
        print("%-8s %-10s %-10s %-22s %-8s %-10s %-10s %s" % (
            "workers", "idle RSS", "idle HWM", "HWM growth", "/raw", "RSS after", "vs idle", "status"))
        for w in args.workers.split(","):
            r = run(args, tmp, w, body, raw_len)
            print("%-8s %-10s %-10s %-22s %-8s %-10s %-10s %s" % (
                w, "%.1f MiB" % (r["idle_rss"] / 2**20), "%.1f MiB" % (r["idle_hwm"] / 2**20),
                "%.1f MiB" % (r["growth"] / 2**20) + ("" if args.pushes == 1 else " (1st %.1f)" % (r["first_growth"] / 2**20)), "%.2fx" % r["ratio"],
                "%.1f MiB" % (r["rss_after"] / 2**20), "%+.1f%%" % r["rss_pct"],
                ",".join(str(c) for c in r["codes"])))
            sys.stdout.flush()
        print("goal: HWM growth / raw <= 4.00 for every workers setting; RSS after within +-10% of idle")


if __name__ == "__main__":
    main()
