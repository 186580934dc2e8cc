#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Several event loops (`server.loops`): each loop accepts on its own
SO_REUSEPORT socket and serves its requests whole. Checks that concurrent
clients are served by more than one loop (per-loop accept counters in
/metrics, loop threads named pg-loop-N), that max_connections and
max_connections_per_peer hold across loops together, that `loops: 1` still
serves with no loop thread, and that SIGTERM drains requests in flight on
every loop: each gets its 204 and reaches the exporter, and the exit is 0.
With an otlp exporter (to the real gRPC server tests/node/grpc_server.mjs)
the loops stay several: concurrent distinct pushes arrive exactly once, a
full sending queue answers 503 + Retry-After and delivers every 204, and a
SIGTERM with requests half-sent on both loops queues and delivers them all."""

import os
import re
import shutil
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import SOURCE_DIR, Gateway, Results, basic_config, fixture, post, post_many, read  # noqa: E402
from pg_pprof import big_pprof  # noqa: E402

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
    return [st for st, _ in post_many(port, [BODY] * n, conc, dict(HDRS, Connection="close"))]


def wait_count(gw, n, timeout=10):
    deadline = time.time() + timeout
    while gw.debug().count("sample_records=") < n and time.time() < deadline:
        time.sleep(0.05)
    return gw.debug().count("sample_records=")


# 1. Two loops serve concurrent clients, both of them.
with Gateway(config("      loops: 2")) as gw:
    res.check("log says 2 event loops", gw.wait_log(r"2 event loops \(SO_REUSEPORT\)") is not None,
              gw.log()[-800:])
    deadline = time.time() + 3  # the thread names itself once running
    while loop_threads(gw) != ["pg-loop-1"] and time.time() < deadline:
        time.sleep(0.05)
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



# 5. An otlp exporter (behind a transform running a regex on every push) no
# longer keeps the receiver on one loop.
def otlp_config(port, loops_extra, queue):
    return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
{loops_extra}
processors:
  transform:
    profile_statements:
      - 'set(resource.attributes["loops.regex"], IsMatch("pg-loop", "^pg-(loop|main)$"))'
exporters:
  debug:
    verbosity: basic
    output_paths: ["{{debug}}"]
  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 300ms}}
    sending_queue: {queue}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      processors: [transform]
      exporters: [debug, otlp]
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
"""


N_SAMPLES = 40
# Distinct bodies (function names differ), so the server's duplicate count
# sees a push delivered twice.
BODIES = [big_pprof(12, N_SAMPLES, tag=i) for i in range(60)]


def distinct_posts(port, bodies, conc):
    return [(st, hd.get("retry-after")) for st, hd in post_many(port, bodies, conc, {"Connection": "close"})]


if shutil.which("node") is None or not os.path.isdir(os.path.join(SOURCE_DIR, "tests", "node", "node_modules")):
    print("skip: otlp with several loops needs node and tests/node/node_modules (scripts/bootstrap.sh --test)")
    res.finish()

with GrpcServer() as srv, Gateway(otlp_config(srv.port, "      loops: 2",
                                              "{queue_size: 1000, num_consumers: 4}")) as gw:
    res.check("otlp: still 2 event loops", gw.wait_log(r"2 event loops \(SO_REUSEPORT\)") is not None,
              gw.log()[-800:])
    out = distinct_posts(gw.port, BODIES, 12)
    res.check("otlp: 60 concurrent distinct pushes all 204", [s for s, _ in out].count(204) == 60, out)
    st = srv.wait(lambda s: s["requests"] >= 60)
    res.check("otlp: each push exported once", st["requests"] == 60 and st["duplicates"] == 0,
              (st["requests"], st["duplicates"]))
    res.check("otlp: every sample arrived", st["samples"] == 60 * N_SAMPLES, st["samples"])
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.control}/requests", timeout=10) as r:
        reqs = r.read().decode()
    res.check("otlp: the transform's regex ran on every push", reqs.count('"loops.regex"') == 60,
              reqs.count('"loops.regex"'))
    res.check("otlp: debug saw them all too", wait_count(gw, 60) == 60, gw.debug().count("sample_records="))
    acc = loop_accepts(metrics(gw))
    res.check("otlp: both loops took pushes", acc.get(0, 0) > 0 and acc.get(1, 0) > 0, acc)

# A full queue (one slow consumer, one waiting slot) refuses with 503 +
# Retry-After from either loop; what got its 204 is delivered, once.
with GrpcServer("--mode", "slow", "--delay-ms", "400") as srv, \
        Gateway(otlp_config(srv.port, "      loops: 2", "{queue_size: 1, num_consumers: 1}")) as gw:
    out = distinct_posts(gw.port, BODIES[:16], 8)
    codes = [s for s, _ in out]
    n_ok = codes.count(204)
    res.check("otlp full queue: only 204 or 503", n_ok + codes.count(503) == 16, codes)
    res.check("otlp full queue: some 503", codes.count(503) >= 1, codes)
    res.check("otlp full queue: 503 carries Retry-After", all(ra for s, ra in out if s == 503), out)
    st = srv.wait(lambda s: s["requests"] >= n_ok)
    time.sleep(0.5)
    st = srv.stats()
    res.check("otlp full queue: every 204 delivered once", st["requests"] == n_ok and st["duplicates"] == 0,
              (st["requests"], n_ok, st["duplicates"]))

# SIGTERM with a request half-sent on each loop: the exporter keeps taking
# intake until the loops have answered, so all are queued and delivered.
with GrpcServer("--mode", "slow", "--delay-ms", "100") as srv, \
        Gateway(otlp_config(srv.port, "      loops: 2\n      workers: 0",
                            "{queue_size: 100, num_consumers: 2}")) as gw:
    socks, bodies = open_conns(12, port=gw.port), BODIES[:12]
    for s, body in zip(socks, bodies):
        s.sendall((f"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                  + body[:len(body) // 2])
    time.sleep(0.3)
    gw.proc.send_signal(15)
    time.sleep(0.3)
    answers = []
    for s, body in zip(socks, bodies):
        s.settimeout(10)
        try:
            s.sendall(body[len(body) // 2:])
            answers.append(s.recv(64).split(b"\r\n")[0])
        except OSError as e:
            answers.append(repr(e).encode())
        s.close()
    res.check("otlp SIGTERM: every in-flight request answered 204",
              sum(1 for a in answers if a.startswith(b"HTTP/1.1 204")) == 12, answers)
    try:
        rc = gw.proc.wait(timeout=20)
    except Exception:  # noqa: BLE001
        rc = None
    res.check("otlp SIGTERM: exit 0 after draining", rc == 0, (rc, gw.log()[-1500:]))
    st = srv.stats()
    res.check("otlp SIGTERM: all 12 exported once", st["requests"] == 12 and st["duplicates"] == 0,
              (st["requests"], st["duplicates"]))

res.finish()
