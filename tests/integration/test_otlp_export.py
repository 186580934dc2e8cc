# SPDX-License-Identifier: Apache-2.0
"""The otlp exporter through the real binary, against a real gRPC server
(tests/node/grpc_server.mjs: @grpc/grpc-js + the upstream-generated protobufjs
decoder). Every pprof fixture is pushed to /v1/pprof with both a debug
exporter (detailed) and the otlp exporter in the pipeline; what the server
decodes must be exactly what the debug exporter shows (every sample's values,
attributes, link and resolved stack, under its resource's attributes), with
gzip on the wire. Then through the binary: UNAVAILABLE for the first calls
(all delivered once), a full sending queue (503 + Retry-After to the client,
nothing accepted lost) and a request larger than max_request_bytes (split,
every part accepted, totals equal)."""

import collections
import glob
import gzip
import json
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402

res = Results()


def config(port, otlp_extra="", debug=True):
    exporters = "[debug, otlp]" if debug else "[otlp]"
    dbg = """  debug:
    verbosity: detailed
    output_paths: ["{debug}"]
""" if debug else ""
    return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
exporters:
{dbg}  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 300ms}}
{otlp_extra}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: {exporters}
  telemetry:
    logs: {{level: info}}
"""


# ---- canonical sample fingerprints ------------------------------------------------

def fp_from_debug(text):
    """Counter of (resource attrs, sample lines) from the debug exporter's detailed output."""
    out = collections.Counter()
    resource = ()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln == "Resource attributes:":
            attrs = []
            i += 1
            while i < len(lines) and lines[i].startswith("     -> "):
                attrs.append(lines[i].strip())
                i += 1
            resource = tuple(sorted(attrs))
            continue
        if ln.startswith("ResourceProfiles #"):
            resource = ()
        if re.match(r"^    Sample #\d+$", ln):
            body = []
            i += 1
            while i < len(lines) and lines[i].startswith("        "):
                s = lines[i].strip()
                if re.match(r"^Stack #\d+:$", s) or s == "Attributes:":
                    pass
                elif s.startswith("Values: ["):
                    # the profile's type/unit that pprofgate names after the values
                    body.append(s[:s.index("]") + 1])
                else:
                    body.append(re.sub(r"^Link #\d+:", "Link:", s))
                i += 1
            out[(resource, tuple(body))] += 1
            continue
        i += 1
    return out


def as_json(v, strings):
    """An AnyValue the way the debug exporter renders Slice/Map contents."""
    if v is None:
        return "null"
    if "stringValue" in v:
        return json.dumps(v["stringValue"], ensure_ascii=False)
    if "stringValueStrindex" in v:
        return json.dumps(strings[int(v["stringValueStrindex"])], ensure_ascii=False)
    if "intValue" in v:
        return str(int(v["intValue"]))
    if "boolValue" in v:
        return "true" if v["boolValue"] else "false"
    if "arrayValue" in v:
        return "[" + ",".join(as_json(x, strings) for x in v["arrayValue"].get("values", [])) + "]"
    if "kvlistValue" in v:
        kvs = sorted(v["kvlistValue"].get("values", []), key=lambda kv: kv.get("key", ""))
        return "{" + ",".join(json.dumps(kv.get("key", ""), ensure_ascii=False) + ":" +
                              as_json(kv.get("value"), strings) for kv in kvs) + "}"
    return "null"


def typed(v, strings):
    if v is None:
        return "Empty"
    if "arrayValue" in v:
        return f"Slice({as_json(v, strings)})"
    if "kvlistValue" in v:
        return f"Map({as_json(v, strings)})"
    if "stringValue" in v:
        return f"Str({v['stringValue']})"
    if "stringValueStrindex" in v:
        return f"Str({strings[int(v['stringValueStrindex'])]})"
    if "intValue" in v:
        return f"Int({int(v['intValue'])})"
    if "boolValue" in v:
        return f"Bool({'true' if v['boolValue'] else 'false'})"
    if "doubleValue" in v:
        return f"Double({v['doubleValue']})"
    return "Empty"


def fp_from_requests(reqs):
    out = collections.Counter()
    for req in reqs:
        d = req.get("dictionary", {})
        strings = d.get("stringTable", [""])
        funcs = d.get("functionTable", [])
        locs = d.get("locationTable", [])
        maps = d.get("mappingTable", [])
        stacks = d.get("stackTable", [])
        attrs = d.get("attributeTable", [])
        links = d.get("linkTable", [])
        for rp in req.get("resourceProfiles", []):
            rattrs = []
            for kv in (rp.get("resource") or {}).get("attributes", []):
                rattrs.append(f"-> {kv.get('key', '')}: {typed(kv.get('value'), strings)}")
            resource = tuple(sorted(rattrs))
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for s in prof.get("samples", []):
                        body = ["Values: [" + " ".join(str(int(v)) for v in s.get("values", []))
                                + "]"]
                        for ai in s.get("attributeIndices", []):
                            a = attrs[ai]
                            body.append(f"-> {strings[a.get('keyStrindex', 0)]}: "
                                        f"{typed(a.get('value'), strings)}")
                        li = s.get("linkIndex", 0)
                        if li:
                            lk = links[li]
                            body.append(f"Link: trace_id={lk.get('traceId', '')} "
                                        f"span_id={lk.get('spanId', '')}")
                        si = s.get("stackIndex", 0)
                        for loc_i in (stacks[si].get("locationIndices", []) if si else []):
                            loc = locs[loc_i]
                            lines = loc.get("lines", [])
                            if not lines:
                                mi = loc.get("mappingIndex", 0)
                                f = strings[maps[mi].get("filenameStrindex", 0)] if mi else ""
                                body.append("0x%x%s" % (int(loc.get("address", 0)),
                                                        (" " + f) if f else ""))
                                continue
                            for line in lines:
                                fn = funcs[line.get("functionIndex", 0)]
                                name = strings[fn.get("nameStrindex", 0)] or "??"
                                file = strings[fn.get("filenameStrindex", 0)] or "??"
                                body.append(f"{name} {file}:{int(line.get('line', 0))}")
                        out[(resource, tuple(body))] += 1
    return out


def fixture_bodies():
    """(name, body, headers) for every pprof fixture, as a client would send it."""
    items = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "pprof", "**", "*"), recursive=True)):
        if os.path.isdir(path) or "golden" in path and path.endswith(".bin"):
            continue
        with open(path, "rb") as f:
            data = f.read()
        hdrs = {"Content-Type": "application/octet-stream",
                "Otel-Resource-Attributes": "service.name=fixture-" + os.path.basename(path)}
        if not data.startswith(b"\x1f\x8b"):
            data = gzip.compress(data)
        hdrs["Content-Encoding"] = "gzip"
        items.append((os.path.relpath(path, FIXTURES), data, hdrs))
    for meta in sorted(glob.glob(os.path.join(FIXTURES, "sdk", "push*.json"))):
        with open(meta) as f:
            h = json.load(f)["headers"]
        with open(meta.replace(".json", ".pprof.gz"), "rb") as f:
            data = f.read()
        hdrs = {k: v for k, v in h.items() if k in ("content-type", "content-encoding",
                                                    "otel-resource-attributes")}
        items.append((os.path.relpath(meta, FIXTURES), data, hdrs))
    return items


# ---- 1. every fixture: server == debug -----------------------------------------------

with GrpcServer() as srv, Gateway(config(srv.port)) as gw:
    accepted = 0
    for name, body, hdrs in fixture_bodies():
        status, _, rbody = post(gw.port, "/v1/pprof", body, hdrs)
        if status == 204:
            accepted += 1
        else:
            print(f"     {name}: {status} {rbody[:120]!r} (not accepted; not expected downstream)")
    res.check("most fixtures accepted", accepted >= 10, accepted)
    dbg_fp = None
    for _ in range(100):
        # Both print/send from their own threads after the 204s: wait until
        # the debug output has every accepted push and the server has as
        # many samples as it shows.
        dbg = gw.debug()
        dbg_fp = fp_from_debug(dbg)
        s = srv.stats()
        if (dbg.count('msg="Profiles"') >= accepted and s["samples"] >= sum(dbg_fp.values())
                and s["requests"] >= 1):
            break
        time.sleep(0.1)
    time.sleep(0.3)
    dbg_fp = fp_from_debug(gw.debug())
    st = srv.stats()
    srv_fp = fp_from_requests(srv.get("/requests"))
    total = sum(dbg_fp.values())
    print(f"     {accepted} pushes, {total} samples in the debug output, "
          f"{st['samples']} at the server in {st['requests']} requests")
    res.check("server got as many samples as the debug exporter shows",
              st["samples"] == total and total > 0, (st["samples"], total))
    res.check("every sample identical (values, attributes, link, stack, resource)",
              srv_fp == dbg_fp,
              (list((dbg_fp - srv_fp).items())[:2], list((srv_fp - dbg_fp).items())[:2]))
    res.check("one export per push", st["requests"] == accepted, (st["requests"], accepted))
    res.check("gzip on the wire", st["encodings"].get("gzip", 0) == st["requests"] and
              "identity" not in st["encodings"], st["encodings"])
    res.check("no duplicates", st["duplicates"] == 0, st["duplicates"])
    res.check("user-agent/te not leaked as metadata; content ok", st["failed"] == 0, st)

# ---- 2. UNAVAILABLE for the first calls ------------------------------------------------

sdk = [b for b in fixture_bodies() if b[0].startswith("sdk")]
with GrpcServer("--mode", "unavailable", "--fail-first", "3") as srv, \
        Gateway(config(srv.port, debug=False)) as gw:
    for name, body, hdrs in sdk:
        status, _, _ = post(gw.port, "/v1/pprof", body, hdrs)
        res.check(f"{name} accepted while the server fails", status == 204, status)
    st = srv.wait(lambda s: s["requests"] >= len(sdk))
    res.check("all delivered after retries", st["requests"] == len(sdk), st)
    res.check("three calls failed first", st["failed"] == 3, st["failed"])
    res.check("no duplicates after retries", st["duplicates"] == 0, st["duplicates"])

# ---- 3. full queue -> 503 + Retry-After, nothing accepted lost -------------------------

with GrpcServer("--mode", "slow", "--delay-ms", "800") as srv, Gateway(config(
        srv.port, "    sending_queue: {queue_size: 1, num_consumers: 1}", debug=False)) as gw:
    codes = []
    retry_after = []
    accepted_samples = 0
    body0 = sdk[0]
    for i in range(6):
        status, headers, _ = post(gw.port, "/v1/pprof", body0[1], body0[2])
        codes.append(status)
        if status == 503:
            retry_after.append(headers.get("retry-after"))
    n_ok = codes.count(204)
    res.check("queue full answers 503", codes.count(503) >= 1, codes)
    res.check("503 carries Retry-After", retry_after and all(retry_after), retry_after)
    st = srv.wait(lambda s: s["requests"] >= n_ok, timeout=20)
    res.check("every accepted push delivered", st["requests"] == n_ok, (st["requests"], n_ok))

# ---- 4. a request over max_request_bytes is split --------------------------------------


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    if wt == 0:
        return varint(num << 3) + varint(payload)
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def big_pprof(n_funcs, n_samples):
    """A pprof Profile (perftools profile.proto) with many distinct stacks."""
    strings = ["", "cpu", "nanoseconds", "big.go"]
    out = bytearray()
    out += field(1, 2, field(1, 0, 1) + field(2, 0, 2))          # sample_type cpu/ns
    for f in range(1, n_funcs + 1):
        strings.append(f"bigpkg.function_number_{f}_with_a_long_name")
        out += field(5, 2, field(1, 0, f) + field(2, 0, len(strings) - 1) +
                     field(4, 0, 3))                                # function
        out += field(4, 2, field(1, 0, f) + field(3, 0, 0x1000 + f) +
                     field(4, 2, field(1, 0, f) + field(2, 0, f)))  # location
    for s in range(n_samples):
        # Neighbouring samples share frames, as in real profiles.
        locs = b"".join(varint(1 + (s // 4 + k * 3) % n_funcs) for k in range(8))
        out += field(2, 2, field(1, 2, locs) + field(2, 2, varint(1000 + s)))
    for s in strings:
        out += field(6, 2, s.encode())
    out += field(12, 0, 10000000) + field(11, 2, field(1, 0, 1) + field(2, 0, 2))
    return bytes(out)


with GrpcServer() as srv, Gateway(config(srv.port, debug=False)) as gw:  # default 4 MiB cap
    raw = big_pprof(60000, 240000)
    status, _, rbody = post(gw.port, "/v1/pprof", gzip.compress(raw),
                            {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream",
                             "Otel-Resource-Attributes": "service.name=big"}, timeout=60)
    res.check("big push accepted", status == 204, (status, rbody[:200]))
    st = srv.wait(lambda s: s["samples"] >= 240000, timeout=60)
    print(f"     {len(raw)} bytes of pprof -> {st['requests']} requests, {st['bytes']} bytes")
    res.check("split into several requests", st["requests"] >= 2, st["requests"])
    res.check("every sample arrived once", st["samples"] == 240000, st["samples"])
    res.check("every part under 4 MiB", st["max_bytes"] <= 4 << 20, st["max_bytes"])
    res.check("no part rejected", st["failed"] == 0, st["failed"])
    gw.wait_log("exporter", timeout=1)
    res.check("no 'too large' drop logged", "larger than max_request_bytes" not in gw.log(),
              gw.log()[-400:])

res.finish()
