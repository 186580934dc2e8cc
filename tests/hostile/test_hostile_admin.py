#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile clients against the admin ports (health_check, pprof), loopback
only, every loop bounded: slowloris headers closed by read_header_timeout, a
connection flood refused past max_connections at accept (the port still
answers afterwards), an unauthenticated request with a large body answered
401 before any body byte is sent (and Expect: 100-continue never gets 100),
and a held ?seconds=N profile that outlives the header deadline and still
answers. Prints the figures it measured."""

import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "lib"))
from pg_harness import Gateway, Results  # noqa: E402
from hostile_lib import closed, conn, exchange, metric, read_response, trickle  # noqa: E402

TOKEN = "admin-token-0123456789"
CAP = 16
res = Results()

CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
extensions:
  health_check:
    endpoint: "127.0.0.1:0"
    read_header_timeout: 1s
    max_connections: %d
    auth: {bearer_token_file: "{tmp}/token"}
  pprof:
    endpoint: "127.0.0.1:0"
    read_header_timeout: 1s
    auth: {bearer_token_file: "{tmp}/token"}
service:
  extensions: [health_check, pprof]
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
  telemetry:
    logs: {level: debug}
    metrics: {address: "127.0.0.1:0"}
""" % CAP


def get(port, path, token=TOKEN, timeout=10):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n" if token else b""
    return exchange(port, b"GET " + path + b" HTTP/1.1\r\nHost: a\r\n" + auth +
                    b"Connection: close\r\n\r\n", timeout=timeout, lenient=True)


def port_of(gw, what):
    m = gw.wait_log(r"serving " + what + r" on [0-9.]+:(\d+)")
    return int(m.group(1)) if m else None


gw = Gateway(CONFIG)
with open(gw.path("token"), "w") as f:
    f.write(TOKEN + "\n")
with gw:
    hport = port_of(gw, r"health")
    pport = port_of(gw, re.escape("/debug/pprof/"))
    mport = port_of(gw, re.escape("/metrics"))
    res.check("admin ports found", None not in (hport, pport, mport), gw.log()[-1500:])
    st, _, _ = get(hport, b"/")
    res.check("baseline: health check with the token -> 200", st == 200, st)

    # ---- slowloris headers on the health port ----------------------------
    socks = [conn(hport) for _ in range(CAP - 2)]
    head = b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: " + b"a" * 16
    # read_header_timeout 1 s + 1 s (+ slack)
    still = trickle(socks, lambda i: head[i:i + 1], 2.2, 0.5)
    print(f"     admin slowloris headers: {still}/{len(socks)} open after "
          "read_header_timeout + 1 s", flush=True)
    res.check("admin slowloris headers: all closed by read_header_timeout", still == 0, still)

    # ---- connection flood past max_connections ---------------------------
    time.sleep(0.2)
    refused0 = metric(mport, r'pprofgate_admin_http_connections_refused\{extension="health_check",'
                             r'reason="max_connections"')
    socks = []
    for _ in range(CAP * 3):
        try:
            socks.append(conn(hport, timeout=2))
        except OSError:
            pass
    time.sleep(0.5)
    held = sum(not closed(s, 0.05) for s in socks)
    past = max(0, held - CAP)
    print(f"     admin connection flood: {len(socks)} connects, {held} held open "
          f"(cap {CAP}), {past} past the cap", flush=True)
    res.check("admin flood: no connection held past max_connections", past == 0, (held, CAP))
    refused = metric(mport, r'pprofgate_admin_http_connections_refused\{extension="health_check",'
                            r'reason="max_connections"') - refused0
    res.check("admin flood: refusals counted", refused >= CAP, refused)
    for s in socks:
        s.close()
    ok = None
    for _ in range(20):  # bounded: the closes above reach the server
        time.sleep(0.1)
        ok, _, _ = get(hport, b"/")
        if ok == 200:
            break
    res.check("admin flood: the port answers once the flood is gone", ok == 200, ok)

    # ---- unauthenticated request with a large body -----------------------
    for port, name in ((hport, "health_check"), (pport, "pprof")):
        s = conn(port)
        s.sendall(b"POST /debug/pprof/symbol HTTP/1.1\r\nHost: a\r\n"
                  b"Content-Length: 20000000\r\n\r\n")  # no body byte sent yet
        st, hdrs, _ = read_response(s, lenient=True)
        gone = closed(s, 1.0)
        s.close()
        res.check(f"{name}: unauthenticated large body -> 401 before any body byte, closed",
                  st == 401 and "www-authenticate" in hdrs and gone, (st, hdrs, gone))
        s = conn(port)
        s.sendall(b"POST /debug/pprof/symbol HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                  b"Authorization: Bearer wrong\r\nContent-Length: 20000000\r\n\r\n")
        st, _, _ = read_response(s, lenient=True)
        s.close()
        res.check(f"{name}: Expect: 100-continue with a wrong token -> 401, never 100",
                  st == 401, st)
    print("     admin body bytes read before a 401: 0 (answered before any was sent)",
          flush=True)
    # NUL after a valid token is not the token (the parser refuses NUL in a header).
    st, _, _ = get(pport, b"/debug/pprof/", token=TOKEN + "\x00junk")
    res.check("pprof: token followed by NUL and junk -> refused (400/401)", st in (400, 401), st)

    # ---- a held ?seconds=N outlives the header deadline ------------------
    # Needs the heap sampler, which sanitizer builds do not have.
    st, _, body = get(pport, b"/debug/pprof/heap")
    if st == 503 and b"heap sampler is off" in body:
        print("     skipped the held-window cases: " + body.decode().strip(), flush=True)
        sys.exit(res.finish())
    box = {}

    def held():
        t = time.monotonic()
        box["r"] = get(pport, b"/debug/pprof/heap?seconds=2", timeout=15)
        box["t"] = time.monotonic() - t

    th = threading.Thread(target=held)
    th.start()
    # Meanwhile a client that gives up on its window is dropped, not kept.
    s = conn(pport)
    s.sendall(b"GET /debug/pprof/heap?seconds=30 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
              + TOKEN.encode() + b"\r\n\r\n")
    time.sleep(0.2)
    s.close()
    th.join(20)
    st = box.get("r", (None,))[0]
    res.check("pprof: ?seconds=2 answered 200 though read_header_timeout is 1 s",
              st == 200 and box.get("t", 0) >= 1.9, (st, box.get("t")))
    left = gw.wait_log(r"client left before its heap delta was ready", timeout=5)
    res.check("pprof: a client that left mid-window is noticed and dropped", left is not None,
              gw.log()[-1500:])

sys.exit(res.finish())
