#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Several event loops (`server.loops`): each loop accepts on its own
SO_REUSEPORT socket and serves its requests whole. Checks that concurrent
clients are served by more than one loop (per-loop accept counters in
/metrics, loop threads named pg-loop-N), that max_connections and
max_connections_per_peer hold across loops together, that `loops: 1` still
serves with no loop thread, and that SIGTERM drains requests in flight on
every loop: each gets its 204 and reaches the exporter, and the exit is 0."""

import os
import re
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import Gateway, Results, basic_config, fixture, post, read  # noqa: E402

res = Results()

SDK = fixture("sdk/push0.pprof.gz")
if SDK is None:
    res.check("fixture present", False)
    res.finish()
BODY = read(SDK)
HDRS = {"Content-Encoding": "gzip"}


def config(extra):
    return basic_config("basic", server_extra=extra).replace(
        "  telemetry:\n", "  telemetry:\n    metrics: {address: \"127.0.0.1:0\"}\n", 1)


def metrics(gw):
    m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
    if m is None:
        return ""
    with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=5) as r:
        return r.read().decode()


def loop_accepts(text):
    """{loop: accepted connections} from pprofgate_receiver_loop_connections_total."""
    out = {}
    for m in re.finditer(r'pprofgate_receiver_loop_connections_total\{[^}]*loop="(\d+)"[^}]*\} (\d+)', text):
        out[int(m.group(1))] = int(m.group(2))
    return out


def loop_threads(gw):
    names = []
    for tid in os.listdir(f"/proc/{gw.proc.pid}/task"):
        try:
            with open(f"/proc/{gw.proc.pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:
            pass
    return [n for n in names if n.startswith("pg-loop-")]


def concurrent_posts(port, n, conc):
    statuses, lock, todo = [], threading.Lock(), list(range(n))

    def run():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            try:
                st, _, _ = post(port, "/v1/pprof", BODY, dict(HDRS, Connection="close"), timeout=30)
            except Exception as e:  # noqa: BLE001 - recorded as a failure
                st = repr(e)
            with lock:
                statuses.append(st)

    threads = [threading.Thread(target=run) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def wait_count(gw, n, timeout=10):
    deadline = time.time() + timeout
    while gw.debug().count("sample_records=") < n and time.time() < deadline:
        time.sleep(0.05)
    return gw.debug().count("sample_records=")


# 1. Two loops serve concurrent clients, both of them.
with Gateway(config("      loops: 2")) as gw:
    res.check("log says 2 event loops", gw.wait_log(r"2 event loops \(SO_REUSEPORT\)") is not None,
              gw.log()[-800:])
    res.check("one pg-loop thread besides the main loop", loop_threads(gw) == ["pg-loop-1"],
              loop_threads(gw))
    st = concurrent_posts(gw.port, 60, 12)
    res.check("60 concurrent pushes all 204", st.count(204) == 60, st)
    res.check("all 60 reach the exporter", wait_count(gw, 60) == 60, gw.debug().count("sample_records="))
    acc = loop_accepts(metrics(gw))
    res.check("both loops accepted connections", acc.get(0, 0) > 0 and acc.get(1, 0) > 0, acc)
    res.check("accepts per loop add up", sum(acc.values()) >= 60, acc)


def open_conns(n, src="127.0.0.1", port=0):
    out = []
    for _ in range(n):
        s = socket.socket()
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        out.append(s)
    return out


def survivors(socks):
    """Connections the server kept: no refusal to read and not closed."""
    time.sleep(0.5)
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            s.recv(64, socket.MSG_PEEK)  # a refusal (503) or EOF: not kept
        except BlockingIOError:
            alive += 1
        except OSError:
            pass  # reset: not kept
        s.close()
    return alive


# 2. The caps hold across loops together.
with Gateway(config("      loops: 2\n      max_connections: 4")) as gw:
    socks = open_conns(12, port=gw.port)
    kept = survivors(socks)
    res.check("max_connections 4 across 2 loops: 4 kept of 12", kept == 4, kept)
with Gateway(config("      loops: 2\n      max_connections_per_peer: 3")) as gw:
    a = open_conns(8, "127.0.0.1", gw.port)
    b = open_conns(8, "127.0.0.2", gw.port)
    time.sleep(0.3)
    acc = loop_accepts(metrics(gw))
    ka, kb = survivors(a), survivors(b)
    res.check("max_connections_per_peer 3 across 2 loops: 3 kept per peer", (ka, kb) == (3, 3), (ka, kb))
    res.check("refusals counted", "reason=\"per_peer\"} 10" in metrics(gw), loop_accepts(metrics(gw)))
    res.check("6 accepted in total, on any loop", sum(acc.values()) == 6, acc)

# 3. loops: 1 is the single main loop.
with Gateway(config("      loops: 1")) as gw:
    res.check("loops 1: no loop thread", loop_threads(gw) == [], loop_threads(gw))
    st = concurrent_posts(gw.port, 10, 4)
    res.check("loops 1: 10 pushes 204", st.count(204) == 10, st)

# 4. SIGTERM with a request half-sent on every loop: each is finished and answered.
with Gateway(config("      loops: 2\n      workers: 0")) as gw:
    head = (f"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n").encode()
    half = len(BODY) // 2
    socks = open_conns(16, port=gw.port)
    for s in socks:
        s.sendall(head + BODY[:half])
    time.sleep(0.3)
    acc = loop_accepts(metrics(gw))
    res.check("in-flight requests on both loops", acc.get(0, 0) > 0 and acc.get(1, 0) > 0, acc)
    gw.proc.send_signal(15)
    time.sleep(0.3)
    answers = []
    for s in socks:
        s.settimeout(10)
        try:
            s.sendall(BODY[half:])
            answers.append(s.recv(64).split(b"\r\n")[0])
        except OSError as e:
            answers.append(repr(e).encode())
        s.close()
    ok = sum(1 for a in answers if a.startswith(b"HTTP/1.1 204"))
    res.check("every in-flight request answered 204 after SIGTERM", ok == 16, answers)
    try:
        rc = gw.proc.wait(timeout=15)
    except Exception:  # noqa: BLE001
        rc = None
    res.check("exit 0 after draining", rc == 0, (rc, gw.log()[-1500:]))
    res.check("all 16 reached the exporter", gw.debug().count("sample_records=") == 16,
              gw.debug().count("sample_records="))

res.finish()
