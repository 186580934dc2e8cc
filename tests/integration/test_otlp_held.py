# SPDX-License-Identifier: Apache-2.0
"""The otlp receiver while an exporter with sending_queue.block_on_overflow is
full, through the real binary into a slow OTLP gRPC sink
(tests/node/grpc_server.mjs --mode slow): requests wait unanswered for room,
as the pprof receiver's pushes do (and a Go handler in the Collector), then
are answered OK and delivered exactly once, over OTLP/HTTP and OTLP/gRPC;
a request held past its deadline (HTTP write_timeout, the call's
grpc-timeout) is answered 503 + Retry-After / UNAVAILABLE naming the wait,
before the client's own deadline; one held at shutdown is answered at once;
without block_on_overflow a full queue is answered at once, as before."""

import glob
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402

import test_otlp_receiver as rx  # noqa: E402  (its helpers; main() runs only as a script)

res = Results()
PB = {"Content-Type": "application/x-protobuf"}


def config(sink_port, block, write_timeout="30s"):
    return f"""
receivers:
  otlp:
    loops: 2
    protocols:
      grpc: {{endpoint: 127.0.0.1:0}}
      http: {{endpoint: 127.0.0.1:0, write_timeout: {write_timeout}}}
exporters:
  otlp:
    endpoint: 127.0.0.1:{sink_port}
    tls: {{insecure: true}}
    timeout: 20s
    shutdown_timeout: 1s
    sending_queue: {{queue_size: 1, num_consumers: 1, block_on_overflow: {block}}}
service:
  pipelines:
    profiles: {{receivers: [otlp], exporters: [otlp]}}
  telemetry:
    logs: {{level: info}}
"""


def http_burst(port, bodies):
    """The @bodies POSTed at once; their (status, retry-after, body) in completion order."""
    out, lock = [], threading.Lock()

    def one(body):
        try:
            st, hd, data = post(port, rx.PATH, body, PB, timeout=30)
            r = (st, hd.get("retry-after"), data)
        except Exception as e:  # noqa: BLE001 - recorded as a failure
            r = (repr(e), None, b"")
        with lock:
            out.append(r)
    ths = [threading.Thread(target=one, args=(b,)) for b in bodies]
    for t in ths:
        t.start()
        time.sleep(0.02)  # in order: the first ones take the consumer and the queue
    for t in ths:
        t.join(60)
    return out


def main():
    tmp = tempfile.mkdtemp(prefix="pg-otlpheld-")
    # Ten different requests (the sink counts a repeated one as a duplicate): SDK
    # captures and Go profiles as OTLP, each with samples.
    reqs, seen = [], set()
    for name in sorted(glob.glob(os.path.join(FIXTURES, "sdk", "*.pprof.gz"))) + sorted(
            p for p in glob.glob(os.path.join(FIXTURES, "pprof", "**", "*"), recursive=True)
            if os.path.isfile(p) and not p.endswith(".bin")):
        out = os.path.join(tmp, "req%02d.pb" % len(reqs))
        r = subprocess.run([rx.P2O, "-z", name, "-o", out], capture_output=True, timeout=60)
        if r.returncode != 0 or not 1000 < os.path.getsize(out) < 200 * 1024 or len(reqs) == 10:
            continue
        with open(out, "rb") as f:
            b = f.read()
        if b not in seen:  # a fixture in two forms (gzip'd or not) makes the same request
            seen.add(b)
            reqs.append(out)
    res.check("ten requests with samples as OTLP", len(reqs) == 10, reqs)
    bodies = []
    for r in reqs:
        with open(r, "rb") as f:
            bodies.append(f.read())

    # 1. block_on_overflow on, a 300 ms export: every request waits its turn and is
    # answered OK; the sink gets each exactly once.
    with GrpcServer("--mode", "slow", "--delay-ms", "300") as sink, \
            Gateway(config(sink.port, "true"), n_listeners=2) as gw:
        gport, hport = rx.ports(gw)
        out = http_burst(hport, bodies[:6])
        res.check("held, HTTP: 6 requests at once against room for 2, all answered 200",
                  sorted(o[0] for o in out) == [200] * 6, [o[:2] for o in out])
        # the node client sends one call after the other: the third waits for room
        got = rx.json.loads(rx.node(tmp, "send", str(gport), "identity", *reqs[6:]))
        res.check("held, gRPC: 4 calls in a row against room for 2, all OK",
                  [g["code"] for g in got] == [0] * 4, got)
        st = sink.wait(lambda s: s.get("requests", 0) >= 10, timeout=30)
        time.sleep(0.7)
        st = sink.stats()
        res.check("held: every request delivered exactly once (10, no duplicates)",
                  st.get("requests") == 10 and st.get("duplicates") == 0, st)
        res.check("held: the hold is logged", "holding requests" in gw.log(), gw.log()[-800:])
        rc = gw.stop()
        res.check("held: clean exit", rc == 0, rc)

    # 2. An export that takes 6 s: a held request is answered when its deadline comes,
    # retryably and saying why, before the client gives up.
    with GrpcServer("--mode", "slow", "--delay-ms", "6000") as sink, \
            Gateway(config(sink.port, "true", "700ms"), n_listeners=2) as gw:
        gport, hport = rx.ports(gw)
        # The consumer's request first (once the sink has it, the queue is empty), then
        # the queue's one slot: no race with the consumer's take under load.
        fill = http_burst(hport, bodies[:1])
        sink.wait(lambda st: st.get("calls", 0) >= 1, timeout=10)
        fill += http_burst(hport, bodies[1:2])
        t0 = time.monotonic()
        out = http_burst(hport, bodies[2:4])
        took = time.monotonic() - t0
        res.check("room taken: the first two are answered 200", [o[0] for o in fill] == [200] * 2,
                  fill)
        res.check(f"held past write_timeout (700ms): 503 + Retry-After naming the wait "
                  f"({took:.1f} s)",
                  [o[0] for o in out] == [503] * 2 and all(o[1] == "1" for o in out) and
                  all(b"held" in o[2] and b"write_timeout" in o[2] for o in out) and
                  0.6 < took < 3, [(o[0], o[1], o[2][:160]) for o in out])
        t0 = time.monotonic()
        got = rx.json.loads(rx.node(tmp, "send", str(gport), "identity", reqs[4], deadline_ms=1500))
        took = time.monotonic() - t0
        res.check(f"held until shortly before the call's deadline (1.5 s): UNAVAILABLE, "
                  f"not DEADLINE_EXCEEDED ({took:.1f} s with node's start-up)",
                  len(got) == 1 and got[0]["code"] == 14 and "deadline" in got[0]["details"],
                  got)
        # SIGTERM while a request is held: it is answered at once, and the exit is clean.
        late = []
        th = threading.Thread(target=lambda: late.extend(http_burst(hport, bodies[5:6])))
        th.start()
        time.sleep(0.25)
        rc = gw.stop()
        th.join(30)
        res.check("held at shutdown: answered 503 'shutting down', clean exit",
                  rc == 0 and len(late) == 1 and late[0][0] == 503 and
                  b"shutting down" in late[0][2], (rc, late))

    # 3. Without block_on_overflow a full queue is answered at once.
    with GrpcServer("--mode", "slow", "--delay-ms", "1000") as sink, \
            Gateway(config(sink.port, "false"), n_listeners=2) as gw:
        gport, hport = rx.ports(gw)
        first = http_burst(hport, bodies[:1])  # the consumer's
        sink.wait(lambda st: st.get("calls", 0) >= 1, timeout=10)
        t0 = time.monotonic()
        out = http_burst(hport, bodies[1:4])  # the queue's one slot, then two over
        took = time.monotonic() - t0
        codes = sorted(o[0] for o in first + out)
        res.check(f"block_on_overflow off: the overflow answered 503 at once ({took:.1f} s)",
                  codes == [200, 200, 503, 503] and took < 0.9, [o[:2] for o in first + out])
        res.check("block_on_overflow off: nothing held",
                  re.search("holding requests", gw.log()) is None, gw.log()[-600:])
        gw.kill()


if __name__ == "__main__":
    main()
    res.finish()
