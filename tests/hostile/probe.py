#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The well-behaved client of tests/hostile: small authenticated pushes, one
connection each, from its own source address, every 20 ms until SIGTERM (or
a 120 s safety stop). A process of its own, so the attackers' threads in the
test cannot delay it (the GIL would). Prints one line: "ok <latencies in
seconds...>" then "fail <statuses...>".
usage: probe.py PORT TOKEN SRC BODY_FILE"""

import signal
import socket
import sys
import time

port, token, src, body_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(body_file, "rb") as f:
    body = f.read()
req = (b"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n"
       b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
       + body)
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
lat, fail = [], []
print("ready", flush=True)
end = time.monotonic() + 120
while not stop and time.monotonic() < end:
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(3)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(req)
        buf = b""
        while b"\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        st = buf.split(b" ", 2)[1].decode() if buf.startswith(b"HTTP/1.1 ") else "closed"
    except OSError as e:
        st = type(e).__name__
    if st == "204":
        lat.append(time.monotonic() - t0)
    else:
        fail.append(st)
    time.sleep(0.02)
print("ok " + " ".join("%.6f" % x for x in lat))
print("fail " + " ".join(fail))
