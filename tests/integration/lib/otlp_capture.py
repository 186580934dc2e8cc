# SPDX-License-Identifier: Apache-2.0
"""An OTLP/HTTP capture server (every request body by path, gunzipped, answered
200) and just enough of the protobuf wire to read a request's Samples under
either OTLP Profiles numbering: v1.9 (values 2, attribute_indices 3,
link_index 4) or v1.10/v1.11 (attribute_indices 2, link_index 3, values 4).
For the protocol_version tests (tests/integration, tests/interop/v19peer)."""
import collections
import gzip
import http.server
import threading


# ---- a capture server: every body by path -------------------------------------------

class Capture:
    def __init__(self):
        self.bodies = collections.defaultdict(list)
        self.lock = threading.Lock()
        cap = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with cap.lock:
                    cap.bodies[self.path].append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def get(self, path):
        with self.lock:
            return list(self.bodies[path])

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# ---- protobuf wire, just enough ----------------------------------------------------

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of one message: ints for varints, bytes for LEN."""
    i, out = 0, []
    while i < len(b):
        t, i = varint(b, i)
        f, wt = t >> 3, t & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.append((f, wt, v))
    return out


def packed(v):
    i, out = 0, []
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def samples(body):
    """Every Sample of a request as its raw (field, wire type, value) list."""
    out = []
    for f, _, rp in fields(body):
        if f != 1:
            continue
        for f2, _, sp in fields(rp):
            if f2 != 2:
                continue
            for f3, _, prof in fields(sp):
                if f3 != 2:
                    continue
                for f4, _, s in fields(prof):
                    if f4 == 2:
                        out.append(fields(s))
    return out


def meaning(sample, layout):
    """(stack, values, attributes, link) of a Sample read with @layout's numbers."""
    num = {"v1.9": {"values": 2, "attrs": 3, "link": 4},
           "v1.11": {"values": 4, "attrs": 2, "link": 3}}[layout]
    got = {"stack": 0, "values": (), "attrs": (), "link": 0}
    for f, wt, v in sample:
        if f == 1:
            got["stack"] = v
        elif f == num["values"]:
            if wt != 2:
                raise ValueError(f"{layout}: values in field {f} with wire type {wt}")
            got["values"] = tuple(x - (1 << 64) if x >> 63 else x for x in packed(v))  # int64
        elif f == num["attrs"]:
            if wt != 2:
                raise ValueError(f"{layout}: attribute_indices in field {f} with wire type {wt}")
            got["attrs"] = tuple(packed(v))
        elif f == num["link"]:
            if wt != 0:
                raise ValueError(f"{layout}: link_index in field {f} with wire type {wt}")
            got["link"] = v
    return (got["stack"], got["values"], got["attrs"], got["link"])
