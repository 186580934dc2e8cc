# SPDX-License-Identifier: Apache-2.0
"""No invalid UTF-8 on the wire: raw 0xFF, overlong and surrogate bytes in
request headers (copied by from_context, metadata[...] and ParseKeyValue),
pprof label keys/values and function names reach the real gRPC server
(tests/node/grpc_server.mjs --strict-utf8, which checks every proto3 string
field as Go's protobuf does and fails the call with INTERNAL otherwise) as
valid UTF-8 with U+FFFD in their place; the replacement is logged."""

import gzip
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, post  # noqa: E402

res = Results()
SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
BAD = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80"]


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def field(num, wt, payload):
    if wt == 0:
        return varint(num << 3) + varint(payload)
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def bad_pprof():
    """Two samples whose function name, label key and label value carry bad bytes."""
    strings = [b"", b"cpu", b"nanoseconds", b"fn" + BAD[0] + b"name" + BAD[2],
               b"key" + BAD[1], b"val" + BAD[3] + BAD[4], b"file.go"]
    out = bytearray()
    out += field(1, 2, field(1, 0, 1) + field(2, 0, 2))
    out += field(5, 2, field(1, 0, 1) + field(2, 0, 3) + field(4, 0, 6))
    out += field(4, 2, field(1, 0, 1) + field(3, 0, 0x1000) + field(4, 2, field(1, 0, 1)))
    for v in (10, 20):
        out += field(2, 2, field(1, 2, varint(1)) + field(2, 2, varint(v)) +
                     field(3, 2, field(1, 0, 4) + field(2, 0, 5)))
    for s in strings:
        out += field(6, 2, s)
    out += field(12, 0, 10000000) + field(11, 2, field(1, 0, 1) + field(2, 0, 2))
    return bytes(out)


CONFIG = r"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0", include_metadata: true}}
processors:
  resource:
    attributes:
      - {{key: from.header, from_context: metadata.x-bad, action: upsert}}
  transform:
    error_mode: ignore
    profile_statements:
      - set(resource.attributes["via.metadata"], metadata["x-bad"])
      - merge_maps(resource.attributes, ParseKeyValue(metadata["x-kv"], "=", ","), "upsert")
exporters:
  otlp:
    endpoint: "127.0.0.1:{port}"
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms}}
service:
  pipelines:
    profiles: {{receivers: [pprof], processors: [resource, transform], exporters: [otlp]}}
"""


def control(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


srv = subprocess.Popen(["node", SERVER, "--strict-utf8"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
try:
    info = json.loads(srv.stdout.readline())
    with Gateway(CONFIG.format(port=info["grpc_port"])) as gw:
        # http.client sends str headers as latin-1: each char is one raw byte.
        hdr = lambda b: b.decode("latin-1")  # noqa: E731
        headers = {"Content-Encoding": "gzip",
                   "X-Bad": hdr(b"a" + b"".join(BAD) + b"z"),
                   "X-Kv": hdr(b"k" + BAD[0] + b"=v" + BAD[2] + b",ok=fine")}
        status, _, body = post(gw.port, "/v1/pprof", gzip.compress(bad_pprof()), headers)
        res.check("push with bad bytes accepted", status == 204, (status, body[:200]))
        end = __import__("time").time() + 20
        st = control(info["control_port"], "/stats")
        while st["requests"] + st["failed"] < 1 and __import__("time").time() < end:
            __import__("time").sleep(0.1)
            st = control(info["control_port"], "/stats")
        res.check("delivered (not rejected as INTERNAL)", st["requests"] == 1 and st["failed"] == 0,
                  st)
        res.check("every string field valid UTF-8 on the wire", st["invalid_utf8"] == 0, st)
        reqs = control(info["control_port"], "/requests")
        text = json.dumps(reqs, ensure_ascii=False)
        res.check("U+FFFD where the bad bytes were",
                  "fn\ufffdname\ufffd\ufffd\ufffd" in text and "a\ufffd" in text, text[:600])
        res.check("header copied via from_context", "from.header" in text)
        res.check("header copied via metadata[...]", "via.metadata" in text)
        res.check("ParseKeyValue result kept", "ok" in text and "fine" in text)
        res.check("replacement logged", gw.wait_log(r"invalid UTF-8 byte", 5) is not None,
                  gw.log()[-1500:])
finally:
    srv.terminate()
    srv.wait(5)
res.finish()
