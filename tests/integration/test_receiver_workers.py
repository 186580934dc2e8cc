#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Receiver worker threads (`server.workers`): inflate + translate run off the
event loop and complete back into it. Checks that many concurrent requests are
all answered and all reach the debug exporter, that a client closing its
connection while its (large, slow) profile is being translated neither crashes
nor leaks and is counted, that `workers: 0` (inline) still works, and that
SIGTERM with jobs in flight exits 0."""

import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import Gateway, Results, basic_config, fixture, gzip_bytes, post, post_many, read  # noqa: E402

SOURCE_DIR = os.environ.get("PG_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

res = Results()


def config(workers, level="info"):
    return basic_config("basic", server_extra=f"      workers: {workers}", log_level=level)


SDK = fixture("sdk/push0.pprof.gz")
if SDK is None:
    print("missing tests/fixtures/sdk/push0.pprof.gz")
    res.check("fixture present", False)
    res.finish()
SDK_BODY = read(SDK)
HDRS = {"Content-Encoding": "gzip", "Otel-Resource-Attributes": "service.name=workers-test"}


def debug_lines(gw):
    return gw.debug().count("sample_records=")


def wait_count(reader, needle, n, timeout):
    """Polls until @needle occurs @n times in reader() (a regex would backtrack)."""
    deadline = time.time() + timeout
    while reader().count(needle) < n and time.time() < deadline:
        time.sleep(0.05)
    return reader().count(needle) >= n


def concurrent_posts(port, n, conc):
    """n POSTs from conc threads; returns the list of statuses."""
    return [st for st, _ in post_many(port, [SDK_BODY] * n, conc, HDRS)]


# 1. Many concurrent requests with two workers: every one 204, every one in the debug output.
with Gateway(config(2)) as gw:
    res.check("log announces 2 workers", re.search(r"listening on .*2 workers", gw.log()) is not None,
              gw.log()[-500:])
    statuses = concurrent_posts(gw.port, 400, 32)
    ok = sum(1 for s in statuses if s == 204)
    res.check("workers=2: 400 concurrent requests all 204", ok == 400,
              f"{ok} of {len(statuses)}; others: {[s for s in statuses if s != 204][:5]}")
    wait_count(gw.debug, "sample_records=", 400, 10)
    res.check("workers=2: 400 lines in the debug output", debug_lines(gw) == 400,
              f"{debug_lines(gw)} lines")
    # Errors keep their status codes on the worker path.
    st, _, body = post(gw.port, "/v1/pprof", b"not gzip at all", {"Content-Encoding": "gzip"})
    res.check("workers=2: bad gzip -> 400", st == 400, (st, body))
    st, _, body = post(gw.port, "/v1/pprof", gzip_bytes(b"\xff\xff\xff"), {"Content-Encoding": "gzip"})
    res.check("workers=2: invalid pprof -> 400", st == 400, (st, body))
    st, _, body = post(gw.port, "/v1/pprof", SDK_BODY, {"Content-Encoding": "br"})
    res.check("workers=2: unsupported encoding -> 415", st == 415, (st, body))
    res.check("workers=2: SIGTERM exits 0", gw.stop() == 0, gw.log()[-800:])

# 2. workers: 0 is the inline path.
with Gateway(config(0)) as gw:
    res.check("log announces 0 workers", re.search(r"listening on .*0 workers", gw.log()) is not None)
    statuses = concurrent_posts(gw.port, 100, 8)
    res.check("workers=0: 100 requests all 204", statuses.count(204) == 100, statuses[:5])
    wait_count(gw.debug, "sample_records=", 100, 10)
    res.check("workers=0: 100 lines in the debug output", debug_lines(gw) == 100)
    res.check("workers=0: SIGTERM exits 0", gw.stop() == 0)

# The large profile (7 MiB of pprof, tens of ms to translate) for the slow cases.
large_gz = None
with Gateway(config(1)) as probe:  # only for its temp dir
    pass
large_path = os.path.join(probe.tmp, "large.pprof")
gen = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "translate_gen_large.py"),
                      large_path, "--gzip", large_path + ".gz"], capture_output=True, text=True)
res.check("large profile generated", gen.returncode == 0, gen.stderr[-500:])
if gen.returncode == 0:
    large_gz = read(large_path + ".gz")


def send_and_close(port, body):
    """Sends a whole gzip'd POST and closes the socket without reading the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall((f"POST /v1/pprof HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    s.close()


# 3. Clients that disconnect while their profile is being translated.
if large_gz is not None:
    with Gateway(config(1, level="debug")) as gw:
        for _ in range(3):
            send_and_close(gw.port, large_gz)
        m = wait_count(gw.log, "client went away", 3, 30)
        res.check("3 disconnected clients: requests dropped and logged", m,
                  gw.log()[-1500:])
        res.check("nothing reached the exporter for them", debug_lines(gw) == 0, gw.debug()[-300:])
        st, _, _ = post(gw.port, "/v1/pprof", SDK_BODY, HDRS)
        res.check("gateway still answers after the disconnects", st == 204, st)
        rss1 = gw.rss_kb()
        for _ in range(6):
            send_and_close(gw.port, large_gz)
        wait_count(gw.log, "client went away", 9, 60)
        rss2 = gw.rss_kb()
        with open(f"/proc/{gw.proc.pid}/maps") as f:
            asan = "libasan" in f.read()  # ASan's quarantine keeps freed memory resident
        if not asan:
            res.check("memory does not grow with abandoned requests (<= +40 MiB)",
                      rss1 is not None and rss2 is not None and rss2 - rss1 < 40 * 1024,
                      f"{rss1} -> {rss2} KiB")
        res.check("disconnects: SIGTERM exits 0", gw.stop() == 0, gw.log()[-800:])
        res.check("no warnings or errors logged", re.search(r"level=(warn|error)", gw.log()) is None,
                  gw.log()[-800:])

# 4. SIGTERM while large jobs are queued and running: exit 0, every client answered or closed.
if large_gz is not None:
    with Gateway(config(1)) as gw:
        answers = []

        def slow_post():
            try:
                st, _, _ = post(gw.port, "/v1/pprof", large_gz, {"Content-Encoding": "gzip"},
                                timeout=60)
            except Exception as e:  # noqa: BLE001 - a closed connection is acceptable here
                st = type(e).__name__
            answers.append(st)

        threads = [threading.Thread(target=slow_post) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)  # all four bodies sent; one translating, three queued
        rc = gw.stop(timeout=30)
        for t in threads:
            t.join(timeout=60)
        res.check("SIGTERM with jobs in flight exits 0", rc == 0, gw.log()[-1000:])
        res.check("every in-flight client got an answer or a close", len(answers) == 4, answers)
        res.check("in-flight answers are 204 or 503",
                  all(a in (204, 503) or isinstance(a, str) for a in answers), answers)

# 5. The default (-1) follows the CPUs the process may use (taskset, cpuset, cgroup quota), as
#    GOMAXPROCS does.
mine = os.sched_getaffinity(0)
try:
    os.sched_setaffinity(0, {min(mine)})  # the gateway inherits it
    with Gateway(config(-1)) as gw:
        res.check("workers -1 under a one-CPU affinity: 1 worker",
                  re.search(r"listening on .*\b1 workers", gw.log()) is not None, gw.log()[-400:])
finally:
    os.sched_setaffinity(0, mine)
with Gateway(config(-1)) as gw:
    # A cgroup CPU quota may lower it further (unit test test_cpus covers that).
    m = re.search(r"listening on .*\b(\d+) workers", gw.log())
    res.check(f"workers -1 with {len(mine)} CPUs in the affinity mask: 1..{min(len(mine), 64)} workers",
              m is not None and 1 <= int(m.group(1)) <= min(len(mine), 64), gw.log()[-400:])

res.finish()
