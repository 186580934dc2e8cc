#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile OTLP destinations (issue 25 item 6), loopback only, every loop
bounded. The gateway exports every push to a hostile destination (the `otlp`
gRPC exporter or `otlphttp`) and to a `debug` exporter beside it. For each
destination: pushes keep being answered, the debug exporter gets every one
(the hostile exporter does not hold the others up), memory stays bounded,
the gateway exits cleanly on SIGTERM. Each case is a child process (three
at a time, PG_HOSTILE_JOBS; PG_HOSTILE_ONLY=kind:mode runs one). Destinations (raw sockets written
here): accepts and never answers; answers one byte per 100 ms; floods
garbage bytes; floods HTTP/2 SETTINGS / PING frames without reading;
RST_STREAM for every stream; a 4 MB header block (HTTP); an endless body
(HTTP). Not covered yet: GOAWAY mid-stream, grpc-status in headers vs
trailers, malformed ExportProfilesServiceResponse, partial_success, a TLS
peer that stalls the handshake, SIGKILL mid-outage with storage."""
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "lib"))
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402

HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()
PUSHES = 20
PUSH_BOUND = 3.0          # seconds per push (generous; the hostile side must not add to it)
RSS_GROWTH_KB = 96 * 1024  # the exporter's queue and buffers, not the flood, bound memory
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


class Hostile:
    """A listener on 127.0.0.1 running @mode per connection until stopped."""

    def __init__(self, mode):
        self.mode, self.stop = mode, threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.conns = 0
        self.th = threading.Thread(target=self.accept, daemon=True)
        self.th.start()

    def accept(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.conns += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        deadline = time.time() + 30
        c.settimeout(0.2)
        try:
            if self.mode == "silent":
                while not self.stop.is_set() and time.time() < deadline:
                    try:
                        if not c.recv(65536):
                            return
                    except socket.timeout:
                        pass
            elif self.mode == "trickle":
                msg = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
                for b in msg[:300]:
                    if self.stop.is_set():
                        return
                    c.sendall(bytes([b]))
                    time.sleep(0.1)
            elif self.mode == "garbage":
                junk = os.urandom(65536)
                sent = 0
                while not self.stop.is_set() and sent < (256 << 20) and time.time() < deadline:
                    try:
                        c.sendall(junk)
                        sent += len(junk)
                    except socket.timeout:
                        pass
            elif self.mode in ("settings", "ping", "rst"):
                c.sendall(frame(4, 0, 0, b""))  # the server's SETTINGS
                if self.mode == "settings":
                    unit = frame(4, 0, 0, struct.pack(">HI", 3, 100)) * 512
                elif self.mode == "ping":
                    unit = frame(6, 0, 0, b"12345678") * 512
                else:
                    unit = b"".join(frame(3, 0, s, struct.pack(">I", 2)) for s in range(1, 1025, 2))
                sent = 0
                while not self.stop.is_set() and sent < (256 << 20) and time.time() < deadline:
                    try:
                        c.sendall(unit)
                        sent += len(unit)
                    except socket.timeout:
                        pass
            elif self.mode == "bighdr":
                c.sendall(b"HTTP/1.1 200 OK\r\n")
                pad = b"X-Pad: " + b"a" * 8000 + b"\r\n"
                for _ in range(512):  # 4 MB of header lines, never ended
                    if self.stop.is_set():
                        return
                    c.sendall(pad)
                time.sleep(5)
            elif self.mode == "endless":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n")
                chunk = b"%x\r\n%s\r\n" % (65536, b"\0" * 65536)
                sent = 0
                while not self.stop.is_set() and sent < (256 << 20) and time.time() < deadline:
                    try:
                        c.sendall(chunk)
                        sent += len(chunk)
                    except socket.timeout:
                        pass
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.stop.set()
        self.sock.close()
        self.th.join(2)


def config(kind, port):
    if kind == "otlp":
        exp = f"""  otlp:
    endpoint: "127.0.0.1:{port}"
    tls: {{insecure: true}}
    timeout: 2s
    retry_on_failure: {{initial_interval: 100ms, max_interval: 500ms, max_elapsed_time: 5s}}"""
    else:
        exp = f"""  otlphttp:
    endpoint: "http://127.0.0.1:{port}"
    timeout: 2s
    retry_on_failure: {{initial_interval: 100ms, max_interval: 500ms, max_elapsed_time: 5s}}"""
    return f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
{exp}
  debug: {{verbosity: basic, output_paths: ["{{debug}}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [{kind}, debug]}}
"""


def run(res, kind, mode):
    h = Hostile(mode)
    name = f"{kind} vs {mode}"
    try:
        with Gateway(config(kind, h.port)) as gw:
            rss0 = gw.rss_kb() or 0
            slow, bad = [], []
            for _ in range(PUSHES):
                t0 = time.time()
                try:
                    st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=PUSH_BOUND + 5)
                except Exception as e:  # noqa: BLE001 - recorded
                    st = repr(e)
                d = time.time() - t0
                if st not in (200, 204):
                    bad.append(st)
                if d > PUSH_BOUND:
                    slow.append(round(d, 2))
                time.sleep(0.1)
            time.sleep(2)  # the flood and retries run on meanwhile
            got = len(re.findall(r"^.*Profiles.*$", gw.debug(), re.M))  # one line per batch
            rss = gw.hwm_kb() or 0
            res.check(f"{name}: every push answered 2xx within {PUSH_BOUND}s",
                      not bad and not slow, (bad[:3], slow[:3]))
            res.check(f"{name}: the debug exporter beside it got every push ({got})",
                      got >= PUSHES, gw.log()[-600:])
            res.check(f"{name}: peak RSS growth {(rss - rss0) // 1024} MiB bounded",
                      rss - rss0 < RSS_GROWTH_KB, (rss0, rss))
            res.check(f"{name}: the destination was tried ({h.conns} connections)", h.conns > 0)
            rc = gw.stop(timeout=20)
            res.check(f"{name}: SIGTERM exits cleanly", rc == 0, (rc, gw.log()[-800:]))
    finally:
        h.close()


CASES = [("otlp", m) for m in ("silent", "garbage", "settings", "ping", "rst", "trickle")] + \
    [("otlphttp", m) for m in ("silent", "trickle", "garbage", "bighdr", "endless")]


def run_child(kind, mode):
    """One case in a child process (PG_HOSTILE_ONLY): its own gateway, its own
    hostile listener and its own interpreter, so a flooding listener's Python
    threads do not hold the GIL against another case's pushes."""
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True,
                           text=True, timeout=240,
                           env=dict(os.environ, PG_HOSTILE_ONLY=f"{kind}:{mode}"))
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode(errors="replace"), "timed out after 240 s", None
    return out, err, rc, time.time() - t0


def main():
    res = Results()
    only = os.environ.get("PG_HOSTILE_ONLY")
    if only:
        kind, mode = only.split(":")
        run(res, kind, mode)
        res.finish()
    # The cases are independent (a gateway and a listener each) and mostly wait
    # (pushes 100 ms apart, 2 s of flood, retries at 100-500 ms, a drain):
    # PG_HOSTILE_JOBS (3) at a time, reported in the table's order.
    jobs = max(1, int(os.environ.get("PG_HOSTILE_JOBS", "3")))
    with ThreadPoolExecutor(jobs) as pool:
        futs = [pool.submit(run_child, kind, mode) for kind, mode in CASES]
        for (kind, mode), fut in zip(CASES, futs):
            out, err, rc, took = fut.result()
            lines = out.rstrip("\n").splitlines()
            m = re.match(r"(\d+) passed, (\d+) failed$", lines[-1]) if lines else None
            if lines[:-1] if m else lines:
                print("\n".join(lines[:-1] if m else lines), flush=True)
            if m:
                res.passed += int(m.group(1))
                res.failed += int(m.group(2))
            # A child that died (exception, timeout) or failed without a FAIL
            # line is a failure of its own, never a pass.
            if not m or (rc != 0 and int(m.group(2)) == 0):
                res.check(f"{kind} vs {mode}: the case ran to its end", False,
                          (rc, err[-800:]))
            print(f"     ({kind} vs {mode}: {took:.1f}s)", flush=True)
    res.finish()


if __name__ == "__main__":
    main()
