# SPDX-License-Identifier: Apache-2.0
"""Helpers for the pyroscope receiver's tests (stdlib only): a minimal pprof
reader (sample types, values, function names, labels), a multipart/form-data
splitter, push.v1.PushRequest encoding, a summary of the OTLP requests the
test gRPC server stored, and a stand-in endpoint that records what a client
sends and forwards it to the gateway."""
import gzip
import http.client
import http.server
import threading

from pg_pprof import field, varint


def _fields(buf):
    """(field number, wire type, value) of one protobuf message."""
    i, n = 0, len(buf)
    while i < n:
        key, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, shift = 0, 0
            while True:
                b = buf[i]
                i += 1
                v |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            yield num, wt, v
        elif wt == 2:
            ln, shift = 0, 0
            while True:
                b = buf[i]
                i += 1
                ln |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            yield num, wt, buf[i:i + ln]
            i += ln
        elif wt == 1:
            yield num, wt, buf[i:i + 8]
            i += 8
        elif wt == 5:
            yield num, wt, buf[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)


def _ints(wt, v):
    """A repeated int64 field: packed (LEN) or one varint."""
    if wt == 0:
        return [v]
    out, cur, shift = [], 0, 0
    for b in v:
        cur |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            out.append(cur)
            cur, shift = 0, 0
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def read_pprof(data):
    """A pprof (gzip'd or not) as a dict: types [(type, unit)], totals {type: sum},
    functions (set of names), labels (set of (key, value))."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, types, samples, funcs, locs = [], [], [], {}, {}
    for num, wt, v in _fields(data):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 1:
            t = dict((n, x) for n, _, x in _fields(v))
            types.append((t.get(1, 0), t.get(2, 0)))
        elif num == 2:
            s = {"values": [], "locs": [], "labels": []}
            for n2, wt2, x in _fields(v):
                if n2 == 2:
                    s["values"] += [_signed(y) for y in _ints(wt2, x)]
                elif n2 == 1:
                    s["locs"] += _ints(wt2, x)
                elif n2 == 3:
                    lab = dict((n3, y) for n3, _, y in _fields(x))
                    s["labels"].append((lab.get(1, 0), lab.get(2, 0)))
            samples.append(s)
        elif num == 5:
            f = dict((n, x) for n, _, x in _fields(v))
            funcs[f.get(1, 0)] = f.get(2, 0)
        elif num == 4:
            loc_id, fids = 0, []
            for n2, _, x in _fields(v):
                if n2 == 1:
                    loc_id = x
                elif n2 == 4:
                    fids.append(dict((n3, y) for n3, _, y in _fields(x)).get(1, 0))
            locs[loc_id] = fids
    tnames = [(strings[t], strings[u]) for t, u in types]
    totals = {t: 0 for t, _ in tnames}
    fnames, labels = set(), set()
    for s in samples:
        for i, v in enumerate(s["values"]):
            totals[tnames[i][0]] += v
        for lid in s["locs"]:
            for fid in locs.get(lid, []):
                fnames.add(strings[funcs.get(fid, 0)])
        for k, v in s["labels"]:
            labels.add((strings[k], strings[v]))
    return {"types": tnames, "totals": totals, "functions": fnames, "labels": labels}


def split_multipart(body, ctype):
    """{part name: bytes} of a multipart/form-data body."""
    boundary = ctype.split("boundary=", 1)[1].strip().strip('"').encode()
    parts = {}
    for chunk in body.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.lstrip(b"\r\n").partition(b"\r\n\r\n")
        name = head.split(b'name="', 1)[1].split(b'"', 1)[0].decode()
        parts[name] = data[:-2] if data.endswith(b"\r\n") else data
    return parts


def push_request(series):
    """push.v1.PushRequest bytes: series = [(labels dict, [raw pprof bytes])]."""
    out = b""
    for labels, samples in series:
        s = b""
        for k, v in labels.items():
            s += field(1, 2, field(1, 2, k.encode()) + field(2, 2, v.encode()))
        for i, raw in enumerate(samples):
            s += field(2, 2, field(1, 2, raw) + field(2, 2, b"id-%d" % i))
        out += field(1, 2, s)
    return out


def otlp_summary(reqs):
    """Per OTLP profile: (resource attrs dict, scope name, type, unit, total value,
    function names, sample attribute pairs)."""
    out = []
    for req in reqs:
        d = req.get("dictionary", {})
        strings = d.get("stringTable", [""])
        funcs = d.get("functionTable", [])
        locs = d.get("locationTable", [])
        stacks = d.get("stackTable", [])
        attrs = d.get("attributeTable", [])
        for rp in req.get("resourceProfiles", []):
            ra = {kv["key"]: kv.get("value", {}).get("stringValue")
                  for kv in (rp.get("resource") or {}).get("attributes", [])}
            for sp in rp.get("scopeProfiles", []):
                scope = (sp.get("scope") or {}).get("name", "")
                for prof in sp.get("profiles", []):
                    st = prof.get("sampleType") or {}
                    total, fnames, labels = 0, set(), set()
                    for s in prof.get("samples", []):
                        total += sum(int(v) for v in s.get("values", []))
                        si = s.get("stackIndex", 0)
                        for li in (stacks[si].get("locationIndices", []) if si else []):
                            for line in locs[li].get("lines", []):
                                fn = funcs[line.get("functionIndex", 0)]
                                fnames.add(strings[fn.get("nameStrindex", 0)])
                        for ai in s.get("attributeIndices", []):
                            a = attrs[ai]
                            labels.add((strings[a.get("keyStrindex", 0)],
                                        a.get("value", {}).get("stringValue")))
                    pattrs = {strings[attrs[ai].get("keyStrindex", 0)]:
                              attrs[ai].get("value", {}).get("stringValue")
                              for ai in prof.get("attributeIndices", [])}
                    out.append({"resource": ra, "scope": scope, "attributes": pattrs,
                                "type": strings[st.get("typeStrindex", 0)],
                                "unit": strings[st.get("unitStrindex", 0)],
                                "total": total, "functions": fnames, "labels": labels,
                                "time": int(prof.get("timeUnixNano", 0)),
                                "duration": int(prof.get("durationNano", 0)),
                                "period": int(prof.get("period", 0))})
    return out


class StandIn:
    """An HTTP endpoint that records every request (path, headers, body) and
    forwards it to 127.0.0.1:@target, answering what the gateway answered."""

    def __init__(self, target):
        self.seen = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                c = http.client.HTTPConnection("127.0.0.1", target, timeout=30)
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "connection", "content-length")}
                c.request("POST", self.path, body, hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                outer.seen.append({"path": self.path, "headers": dict(self.headers.items()),
                                   "body": body, "status": r.status, "answer": data})
                self.send_response(r.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
