# SPDX-License-Identifier: Apache-2.0
"""The pprof receiver on the real binary: every status code of the contract
(204/400/404/405/413/415), Content-Encoding variants, chunked uploads,
keep-alive reuse, a gzip bomb, a slow client, 200 concurrent connections and
a clean SIGTERM. 503 and 500 need a failing pipeline and are covered in
tests/unit/test_receiver_pprof.c with a fake consumer."""

import os
import socket
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import Gateway, Results, basic_config, fixture, gzip_bytes, post, read, zlib_bytes  # noqa: E402

res = Results()
PPROF = read(fixture("debug/worked_example.pprof"))
GZ = gzip_bytes(PPROF)

cfg = basic_config("basic", server_extra="""      max_request_body_size: 1MiB
      read_header_timeout: 1s
      response_headers: {X-Gateway: pprofgate}""")

with Gateway(cfg) as gw:
    p = gw.port

    # ---- success paths -------------------------------------------------
    cases = [
        ("CE gzip, plain pprof", GZ, {"Content-Encoding": "gzip"}),
        ("no CE, gzip'd pprof (magic layer)", GZ, {}),
        ("no CE, plain pprof", PPROF, {}),
        ("CE identity", PPROF, {"Content-Encoding": "identity"}),
        ("CE gzip around a .pb.gz (two layers)", gzip_bytes(GZ), {"Content-Encoding": "gzip"}),
        ("CE deflate (zlib framing)", zlib_bytes(PPROF), {"Content-Encoding": "deflate"}),
        ("CE 'gzip, gzip'", gzip_bytes(gzip_bytes(PPROF)), {"Content-Encoding": "gzip, gzip"}),
        ("CE in upper case", GZ, {"Content-Encoding": "GZIP"}),
    ]
    for name, body, hdrs in cases:
        s, h, b = post(p, "/v1/pprof", body, dict(hdrs, **{"Content-Type": "application/octet-stream"}))
        res.check(f"204: {name}", s == 204 and b == b"", (s, b))
    s, h, b = post(p, "/v1/pprof?tenant=a", GZ, {"Content-Encoding": "gzip"})
    res.check("204: query string ignored", s == 204, (s, b))
    res.check("response_headers applied", h.get("x-gateway") == "pprofgate", h)

    # ---- client errors -------------------------------------------------
    s, h, b = post(p, "/v1/pprof", b"not pprof at all")
    res.check("400: not a pprof", s == 400 and b.endswith(b"\n") and b.count(b"\n") == 1, (s, b))
    res.check("400: text/plain", h.get("content-type", "").startswith("text/plain"), h)
    s, h, b = post(p, "/v1/pprof", b"")
    res.check("400: empty body", s == 400, (s, b))
    s, h, b = post(p, "/v1/pprof", PPROF, {"Content-Encoding": "gzip"})
    res.check("400: CE gzip on a non-gzip body", s == 400, (s, b))
    s, h, b = post(p, "/v1/pprof", GZ[: len(GZ) // 2], {"Content-Encoding": "gzip"})
    res.check("400: truncated gzip", s == 400, (s, b))
    s, h, b = post(p, "/v1/pprofx", GZ)
    res.check("404: /v1/pprofx", s == 404, (s, b))
    s, h, b = post(p, "/", GZ)
    res.check("404: /", s == 404, (s, b))
    s, h, b = post(p, "/v1/pprof", method="GET")
    res.check("405: GET with Allow: POST", s == 405 and h.get("allow") == "POST", (s, h, b))
    res.check("405: body names the method", b"method GET not allowed" in b, b)
    s, h, b = post(p, "/v1/pprof", b"x", method="PUT")
    res.check("405: PUT", s == 405, (s, b))
    s, h, b = post(p, "/v1/pprof", GZ, {"Content-Encoding": "br"})
    res.check("415: CE br lists the supported ones",
              s == 415 and b"gzip" in b and b"deflate" in b and b"br" in b, (s, b))

    # ---- limits ------------------------------------------------------------
    big = os.urandom(1100 * 1024)
    s, h, b = post(p, "/v1/pprof", big)
    res.check("413: body over max_request_body_size", s == 413, (s, b[:200]))
    # 256 MiB of zeros, gzip'd twice: about 1 KB on the wire.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    inner = b"".join(z.compress(chunk) for _ in range(256)) + z.flush()
    bomb = gzip_bytes(inner)
    hwm_before = gw.hwm_kb() or 0
    t0 = time.time()
    s, h, b = post(p, "/v1/pprof", bomb, {"Content-Encoding": "gzip"})
    took = time.time() - t0
    print(f"     gzip bomb: {len(bomb)} bytes on the wire -> {s} in {took*1000:.1f} ms")
    res.check(f"413: gzip bomb ({len(bomb)} bytes, inner layer 256 MiB)", s == 413, (s, b))
    s, h, b = post(p, "/v1/pprof", inner)
    res.check("413: bomb as a gzip magic layer (no CE)", s == 413, (s, b))
    hwm_after = gw.hwm_kb() or 0
    res.check("bomb did not inflate past the cap (VmHWM grew < 64 MiB)",
              hwm_after - hwm_before < 64 * 1024, (hwm_before, hwm_after))

    # ---- connection handling -------------------------------------------------
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", p, timeout=10)
    statuses, socks = [], set()
    for _ in range(5):
        conn.request("POST", "/v1/pprof", body=GZ, headers={"Content-Encoding": "gzip"})
        r = conn.getresponse()
        r.read()
        statuses.append(r.status)
        socks.add(id(conn.sock))
    conn.close()
    res.check("keep-alive: 5 requests on one connection", statuses == [204] * 5 and len(socks) == 1,
              (statuses, len(socks)))

    conn = http.client.HTTPConnection("127.0.0.1", p, timeout=10)
    conn.request("POST", "/v1/pprof", body=iter([GZ[:10], GZ[10:50], GZ[50:]]),
                 headers={"Content-Encoding": "gzip"}, encode_chunked=True)
    r = conn.getresponse()
    r.read()
    conn.close()
    res.check("chunked upload", r.status == 204, r.status)

    # The server answers small pushes with one write and reads on meanwhile:
    # requests that arrive together, then the client's half-close, each get
    # their answer before the connection ends; a body in small pieces too.
    def raw_exchange(chunks, want, pause=0.0, half_close=False):
        sk = socket.create_connection(("127.0.0.1", p))
        sk.settimeout(10)
        for c in chunks:
            sk.sendall(c)
            time.sleep(pause)
        if half_close:
            sk.shutdown(socket.SHUT_WR)
        data = b""
        while data.count(b"\r\n\r\n") < want:
            try:
                d = sk.recv(65536)
            except OSError:
                break
            if not d:
                break
            data += d
        sk.close()
        return data

    one = (b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
           b"Content-Length: %d\r\n\r\n" % len(GZ) + GZ)
    got = raw_exchange([one * 5], 5, half_close=True)
    res.check("5 pushes in one write, then half-close: 5 x 204", got.count(b"HTTP/1.1 204") == 5,
              got[:200])
    got = raw_exchange([one[i:i + 97] for i in range(0, len(one), 97)], 1, pause=0.002)
    res.check("a push in 97-byte pieces: 204", got.startswith(b"HTTP/1.1 204"), got[:200])

    # A client that sends half a header block and stops: dropped at the timeout.
    sk = socket.create_connection(("127.0.0.1", p))
    sk.sendall(b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Len")
    sk.settimeout(15)
    t0 = time.time()
    timed_out = False
    try:
        data = sk.recv(4096)
    except ConnectionResetError as e:
        data = repr(e).encode()
    except socket.timeout as e:
        data, timed_out = repr(e).encode(), True
    took = time.time() - t0
    sk.close()
    print(f"     slow client closed after {took:.2f}s: {data[:60]!r}")
    # Closed by the server (EOF or a 408 first), not our own recv timeout.
    res.check("slow client: connection closed by the server", took < 14 and not timed_out,
              (took, data[:100]))

    # A client that announces a body and never sends it.
    sk = socket.create_connection(("127.0.0.1", p))
    sk.sendall(b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
    sk.settimeout(15)
    t0 = time.time()
    try:
        data = sk.recv(4096)
    except (ConnectionResetError, socket.timeout) as e:
        data = repr(e).encode()
    took = time.time() - t0
    sk.close()
    res.check("stalled body: connection closed by the server", took < 14 and b"timeout" not in data,
              (took, data[:100]))

    # Still healthy afterwards, and a clean exit on SIGTERM.
    s, h, b = post(p, "/v1/pprof", GZ, {"Content-Encoding": "gzip"})
    res.check("still serving after the abuse", s == 204, (s, b))
    rc = gw.stop()
    res.check("SIGTERM: exit 0", rc == 0, (rc, gw.log()[-1500:]))

# 200 connections open at once, then one request on each. A gateway of its
# own with the default read_header_timeout: under the 1 s one above, a
# connection that waits more than a second for its turn (a loaded CI machine
# connecting 200 sockets) is rightly closed before its request is sent.
with Gateway(basic_config("basic")) as gw:
    p = gw.port
    # 200 connections open at once, then one request on each.
    socks = []
    for _ in range(200):
        socks.append(socket.create_connection(("127.0.0.1", p)))
    req = (b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
           b"Content-Length: %d\r\n\r\n" % len(GZ)) + GZ
    for sk in socks:
        sk.sendall(req)
    ok = 0
    seen = {}
    for sk in socks:
        sk.settimeout(10)
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                d = sk.recv(4096)
                if not d:
                    break
                buf += d
        except socket.timeout:
            pass
        ok += buf.startswith(b"HTTP/1.1 204")
        first = buf.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed)"
        seen[first] = seen.get(first, 0) + 1
        sk.close()
    res.check("200 concurrent connections all get 204", ok == 200, (ok, seen))

    rc = gw.stop()
    res.check("SIGTERM after 200 connections: exit 0", rc == 0, (rc, gw.log()[-1500:]))

res.finish()
