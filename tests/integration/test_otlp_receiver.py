# SPDX-License-Identifier: Apache-2.0
"""The otlp receiver through the real binary: OTLP made from every pprof
fixture (tests/tools/pg_pprof2otlp) is sent to a receiver with two event
loops over OTLP/HTTP protobuf, with and without gzip, over OTLP/HTTP JSON,
and over OTLP/gRPC from a real @grpc/grpc-js client (identity and gzip);
pprofgate forwards it with its
otlp exporter to the Node gRPC test server (tests/node/grpc_server.mjs),
and what that server decodes must equal what was sent, sample for sample.
Then bad input, each answered with a clear status while the gateway keeps
serving: garbage, truncated, a dangling index, over max_request_body_size /
max_recv_msg_size_mib, an unknown content type, a wrong method, the v1.9
layout; and a CORS preflight. Last, `receivers: [pprof, otlp]` in one
pipeline with bearer-token auth and include_metadata on both OTLP
transports, a `limits:` cap (413 / RESOURCE_EXHAUSTED), TLS on both,
slowloris on both ports, the debug exporter printing OTLP-received profiles
as pushed ones, and refusals under a memory limit (503 + Retry-After / UNAVAILABLE)."""

import collections
import glob
import gzip
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import FIXTURES, SOURCE_DIR, Gateway, Results, post  # noqa: E402

res = Results()
BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
P2O = os.path.join(BUILD, "tests", "pg_pprof2otlp")
NODE_DIR = os.path.join(SOURCE_DIR, "tests", "node")
PATH = "/v1development/profiles"
EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

# The Node side: decode a request into the grpc_server.mjs /requests shape
# ("plain"), write its OTLP/JSON form (lowerCamelCase, int64 as strings,
# trace/span/profile ids as hex, other bytes base64), and send raw bytes
# over gRPC with @grpc/grpc-js (gzip when asked).
NODE = r"""
import { createRequire } from 'node:module';
import fs from 'node:fs';
const require = createRequire(process.env.PG_NODE_DIR + '/package.json');
const grpc = require('@grpc/grpc-js');
const otlp = require('@coralogix/opentelemetry-profiling/dist/generated/otlp.js');
const protobuf = require('protobufjs/minimal');
const Req = otlp.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
function plain(v) {
  if (v === null || v === undefined) return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (typeof v === 'object' && typeof v.low === 'number' && typeof v.high === 'number' &&
      typeof v.unsigned === 'boolean')
    return protobuf.util.Long.fromBits(v.low, v.high, v.unsigned).toString();
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object') { const o = {}; for (const k of Object.keys(v)) o[k] = plain(v[k]); return o; }
  return v;
}
// OTLP/JSON from the plain view: ids stay hex, other bytes become base64.
const B64 = new Set(['originalPayload', 'bytesValue']);
function otlpJson(v, key) {
  if (Array.isArray(v)) return v.map((x) => otlpJson(x, key));
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v)) o[k] = otlpJson(v[k], k);
    return o;
  }
  if (typeof v === 'string' && B64.has(key)) return Buffer.from(v, 'hex').toString('base64');
  return v;
}
const [mode, ...args] = process.argv.slice(2);
if (mode === 'convert') {
  for (const f of args) {
    const msg = Req.decode(fs.readFileSync(f));
    const p = plain(msg);
    fs.writeFileSync(f + '.plain.json', JSON.stringify(p));
    fs.writeFileSync(f + '.otlp.json', JSON.stringify(otlpJson(p, '')));
  }
} else if (mode === 'send') {
  const [port, comp, ...files] = args;
  const opts = comp === 'gzip' ? { 'grpc.default_compression_algorithm': 2 } : {};
  const creds = process.env.PG_CA ? grpc.credentials.createSsl(fs.readFileSync(process.env.PG_CA))
                                  : grpc.credentials.createInsecure();
  const client = new grpc.Client('127.0.0.1:' + port, creds, opts);
  const out = [];
  for (const f of files) {
    const body = fs.readFileSync(f);
    out.push(await new Promise((resolve) => {
      const md = new grpc.Metadata();
      if (process.env.PG_AUTH) md.set('authorization', process.env.PG_AUTH);
      if (process.env.PG_TENANT) md.set('x-tenant', process.env.PG_TENANT);
      client.makeUnaryRequest(process.env.PG_EXPORT, (b) => b, (b) => b, body, md,
        { deadline: Date.now() + Number(process.env.PG_DEADLINE_MS || 10000) },
        (err) => resolve(err ? { code: err.code, details: err.details } : { code: 0 }));
    }));
  }
  client.close();
  console.log(JSON.stringify(out));
}
"""


def node(tmp, *args, auth=None, tenant=None, ca=None, deadline_ms=None):
    script = os.path.join(tmp, "otlp_client.mjs")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(NODE)
    env = dict(os.environ, PG_NODE_DIR=NODE_DIR, PG_EXPORT=EXPORT)
    if auth:
        env["PG_AUTH"] = auth
    if tenant:
        env["PG_TENANT"] = tenant
    if ca:
        env["PG_CA"] = ca
    if deadline_ms:
        env["PG_DEADLINE_MS"] = str(deadline_ms)
    r = subprocess.run(["node", script, *args], env=env, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"node {args[:2]} failed: {r.stderr[-1500:]}")
    return r.stdout


def config(grpc_port, extra=""):
    return f"""
receivers:
  otlp:
    loops: 2
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
        max_recv_msg_size_mib: 1
      http:
        endpoint: 127.0.0.1:0
        max_request_body_size: 1MiB
        cors:
          allowed_origins: ["https://*.example.com"]
          max_age: 600
{extra}
exporters:
  otlp:
    endpoint: 127.0.0.1:{grpc_port}
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 300ms}}
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp]
  telemetry:
    logs: {{level: info}}
"""


def ports(gw):
    g = re.search(r"grpc listening on [0-9.]+:(\d+)", gw.log())
    h = re.search(r"http listening on [0-9.]+:(\d+)", gw.log())
    return int(g.group(1)), int(h.group(1))


# ---- sample fingerprints over the /requests JSON shape ------------------------

def typed(v, strings):
    if not v:
        return "Empty"
    if "stringValueStrindex" in v:
        return "Str(" + strings[int(v["stringValueStrindex"])] + ")"
    k, x = next(iter(v.items()))
    return f"{k}({json.dumps(x, sort_keys=True)})"


def fingerprints(reqs, resource_keys=None):
    """Counter of (resource attrs, profile type, sample) over @reqs; resource
    attributes limited to @resource_keys when given (what the sender set)."""
    out = collections.Counter()
    for req in reqs:
        d = req.get("dictionary", {})
        strings = d.get("stringTable", [""])
        funcs, locs = d.get("functionTable", []), d.get("locationTable", [])
        maps, stacks = d.get("mappingTable", []), d.get("stackTable", [])
        attrs, links = d.get("attributeTable", []), d.get("linkTable", [])
        for rp in req.get("resourceProfiles", []):
            r = sorted(f"{kv.get('key')}={typed(kv.get('value'), strings)}"
                       for kv in (rp.get("resource") or {}).get("attributes", [])
                       if resource_keys is None or kv.get("key") in resource_keys)
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    st = prof.get("sampleType") or {}
                    ptype = (strings[st.get("typeStrindex", 0)], strings[st.get("unitStrindex", 0)])
                    for s in prof.get("samples", []):
                        body = [tuple(str(v) for v in s.get("values", []))]
                        for ai in s.get("attributeIndices", []):
                            a = attrs[ai]
                            body.append(strings[a.get("keyStrindex", 0)] + "=" +
                                        typed(a.get("value"), strings))
                        li = s.get("linkIndex", 0)
                        if li:
                            body.append(f"link {links[li].get('traceId')} {links[li].get('spanId')}")
                        for loc_i in (stacks[s.get("stackIndex", 0)].get("locationIndices", [])
                                      if s.get("stackIndex", 0) else []):
                            loc = locs[loc_i]
                            mi = loc.get("mappingIndex", 0)
                            mf = strings[maps[mi].get("filenameStrindex", 0)] if mi else ""
                            frames = [f"{strings[funcs[ln.get('functionIndex', 0)].get('nameStrindex', 0)]}"
                                      f" {strings[funcs[ln.get('functionIndex', 0)].get('filenameStrindex', 0)]}"
                                      f":{ln.get('line', 0)}" for ln in loc.get("lines", [])]
                            body.append(f"{loc.get('address', 0)} {mf} {frames}")
                        out[(tuple(r), ptype, tuple(body))] += 1
    return out


def resource_keys(reqs):
    return {kv.get("key") for req in reqs for rp in req.get("resourceProfiles", [])
            for kv in (rp.get("resource") or {}).get("attributes", [])}


# ---- protobuf bits for the bad-input cases --------------------------------------

def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def dangling_request():
    """A request whose one sample points at stack 7 of a 1-entry stack table."""
    dictionary = field(5, b"") + field(7, b"")  # string_table [""], stack_table [{}]
    sample = bytes([0x08, 0x07]) + field(4, b"\x01")  # stack_index 7, values [1]
    profile = field(2, sample)
    rp = field(2, field(2, profile))  # ResourceProfiles.scope_profiles[0].profiles[0]
    return field(1, rp) + field(2, dictionary)


def v19_request():
    """The same shape with a v1.9 Sample: values (field 2) packed varints."""
    dictionary = field(5, b"") + field(7, b"")
    sample = field(2, b"\x05\x06")  # v1.9 values [5, 6]; in v1.10 field 2 is attribute_indices
    sample += bytes([0x18, 0x00])  # v1.9 attribute_indices (3) as a varint: v1.10 link_index
    sample += field(3, b"\x01")    # v1.9 packed attribute_indices: wire type 2 on field 3
    profile = field(2, sample)
    rp = field(2, field(2, profile))
    return field(1, rp) + field(2, dictionary)


def grpc_frame(msg):
    return b"\x00" + len(msg).to_bytes(4, "big") + msg


def zstd_raw(data):
    """A valid zstd frame (RFC 8878) of raw blocks: what a zstd encoder
    sends for data it cannot shrink. Python has no zstd module; the
    Collector test sends really compressed zstd."""
    out = bytearray(0xFD2FB528.to_bytes(4, "little")) + bytes([0x00, 7 << 3])  # window 128 KiB
    blocks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for i, blk in enumerate(blocks):
        last = 1 if i == len(blocks) - 1 else 0
        out += (last | len(blk) << 3).to_bytes(3, "little") + blk  # block type 0: raw
    return bytes(out)


def nghttp_call(tmp, port, msg_file, encoding):
    """One unary call by nghttp (Debian nghttp2-client) with the message
    compressed as @encoding: the response's headers and trailers as a dict."""
    with open(msg_file, "rb") as fh:
        msg = fh.read()
    body = zstd_raw(msg) if encoding == "zstd" else msg
    framed = os.path.join(tmp, "nghttp.grpc")
    with open(framed, "wb") as fh:
        fh.write((b"\x01" if encoding != "identity" else b"\x00")
                 + len(body).to_bytes(4, "big") + body)
    r = subprocess.run(["nghttp", "-v", "-H", "content-type: application/grpc", "-H",
                        "te: trailers", "-H", f"grpc-encoding: {encoding}", "-d", framed,
                        f"http://127.0.0.1:{port}{EXPORT}"],
                       capture_output=True, timeout=30)
    got = {}
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        m = re.match(r"\[\s*[\d.]+\] recv \(stream_id=\d+\) ([^:]\S*|:status): (.*)$", line)
        if m:
            got[m.group(1)] = m.group(2)
    return got


# ---- the run -----------------------------------------------------------------------

def main():
    tmp = tempfile.mkdtemp(prefix="pg-otlprx-")
    fixtures = [p for p in sorted(glob.glob(os.path.join(FIXTURES, "pprof", "**", "*"),
                                            recursive=True))
                if os.path.isfile(p) and not p.endswith(".bin")]
    # A profile past the receiver's lazy-samples threshold (2 048 samples: kept as wire records
    # on the way through, otlp/otlp_lazy.h), small enough for the 1 MiB cap.
    gen = os.path.join(tmp, "lazy2100.pprof")
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "translate_gen_large.py"),
                    gen, "--gzip", gen + ".gz", "--samples", "2100"], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    fixtures.append(gen + ".gz")
    inputs = []
    for i, p in enumerate(fixtures):
        out = os.path.join(tmp, f"req{i:03d}.pb")
        r = subprocess.run([P2O, "-z", p, "-o", out], capture_output=True, timeout=60)
        if r.returncode == 0 and os.path.getsize(out) > 0:
            inputs.append((os.path.relpath(p, FIXTURES), out))
    res.check("OTLP made from the pprof fixtures", len(inputs) >= 10, len(inputs))
    res.check("a request of two 2 100-sample profiles among them (lazy samples)",
              any("lazy2100" in n and os.path.getsize(f) < 900 * 1024 for n, f in inputs),
              [(n, os.path.getsize(f)) for n, f in inputs if "lazy2100" in n])
    # The gRPC message cap is 1 MiB here: keep what fits for the equality runs.
    inputs = [(n, f) for n, f in inputs if os.path.getsize(f) < 900 * 1024]
    node(tmp, "convert", *[f for _, f in inputs])
    cpu_req = next(f for n, f in inputs if n == os.path.join("pprof", "go", "cpu.pb.gz"))
    sent = {}
    for name, f in inputs:
        with open(f + ".plain.json") as fh:
            sent[name] = json.load(fh)

    with GrpcServer() as sink, Gateway(config(sink.port), n_listeners=2) as gw:
        gport, hport = ports(gw)
        # Logged after the loop threads start, which may trail the listening lines.
        res.check("two event loops (SO_REUSEPORT) serve both protocols",
                  gw.wait_log(r"2 event loops \(SO_REUSEPORT\)", timeout=5) is not None,
                  gw.log()[-1000:])

        # Its OTLP/JSON form is over the 1 MiB body cap: protobuf and gRPC only.
        json_inputs = [(n, f) for n, f in inputs if "lazy2100" not in n]

        def run(label, send, use=None):
            """Sends every input with @send, then compares what the sink decoded."""
            use = inputs if use is None else use
            sink.get("/stats")
            import urllib.request
            urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{sink.control}/reset", method="POST"), timeout=10).read()
            bad = send()
            res.check(f"{label}: every request answered OK", not bad, bad[:5])
            want = collections.Counter()
            for name, _ in use:
                want.update(fingerprints([sent[name]]))
            n_want = sum(want.values())
            st = sink.wait(lambda s: s.get("samples", 0) >= n_want, timeout=30)
            got_reqs = sink.get("/requests")
            keys = set().union(*[resource_keys([sent[n]]) for n, _ in use])
            got = fingerprints(got_reqs, keys)
            res.check(f"{label}: forwarded sample for sample ({n_want} samples, "
                      f"{len(use)} requests)", got == want,
                      (st, list((want - got).items())[:2], list((got - want).items())[:2]))

        def http_send(json_body=False, gz=False):
            def send():
                bad = []
                for name, f in (json_inputs if json_body else inputs):
                    with open(f + (".otlp.json" if json_body else ""), "rb") as fh:
                        body = fh.read()
                    hdrs = {"Content-Type": "application/json" if json_body
                            else "application/x-protobuf"}
                    if gz:
                        body = gzip.compress(body)
                        hdrs["Content-Encoding"] = "gzip"
                    st, hd, data = post(hport, PATH, body, hdrs)
                    ok = st == 200 and (data == b"{}" if json_body else data == b"")
                    if not ok:
                        bad.append((name, st, data[:200]))
                return bad
            return send

        def grpc_send(comp):
            def send():
                out = json.loads(node(tmp, "send", str(gport), comp, *[f for _, f in inputs]))
                return [(n, o) for (n, _), o in zip(inputs, out) if o["code"] != 0]
            return send

        run("HTTP protobuf", http_send())
        run("HTTP protobuf gzip", http_send(gz=True))
        run("HTTP JSON", http_send(json_body=True), json_inputs)
        run("HTTP JSON gzip", http_send(json_body=True, gz=True), json_inputs)
        run("gRPC", grpc_send("identity"))
        run("gRPC gzip", grpc_send("gzip"))

        def grpc_send_nghttp(encoding):
            def send():
                bad = []
                for name, f in inputs:
                    got = nghttp_call(tmp, gport, f, encoding)
                    if got.get("grpc-status") != "0" or \
                            "zstd" not in got.get("grpc-accept-encoding", ""):
                        bad.append((name, got))
                return bad
            return send

        if shutil.which("nghttp"):
            # grpc-js has no zstd; the Collector's gRPC server takes it.
            run("gRPC zstd (nghttp; grpc-accept-encoding lists zstd)", grpc_send_nghttp("zstd"))
        else:
            print("  (no nghttp: gRPC zstd not tried; scripts/bootstrap.sh installs nghttp2-client)")

        # ---- bad input: a clear status each, and the gateway still serves ----
        pb = {"Content-Type": "application/x-protobuf"}
        with open(cpu_req, "rb") as fh:
            good = fh.read()
        cases = [
            ("garbage", b"\xff\xfe garbage \x00\x01", pb, 400),
            ("truncated", good[: len(good) // 2], pb, 400),
            ("dangling stack index", dangling_request(), pb, 400),
            ("v1.9 layout", v19_request(), pb, 400),
            ("over max_request_body_size", b"\x0a" * (1024 * 1024 + 10), pb, 413),
            ("unknown content type", good, {"Content-Type": "text/plain"}, 415),
            ("garbage JSON", b"{\"resourceProfiles\": [", {"Content-Type": "application/json"},
             400),
        ]
        for label, body, hdrs, want in cases:
            st, hd, data = post(hport, PATH, body, hdrs)
            res.check(f"HTTP {label}: {want}", st == want, (st, data[:300]))
            if want == 400:
                ctype = hd.get("content-type", "")
                res.check(f"HTTP {label}: a google.rpc.Status naming the problem",
                          ctype in ("application/x-protobuf", "application/json")
                          and len(data) > 8, (ctype, data[:300]))
        st, hd, data = post(hport, PATH, good, pb, method="GET")
        res.check("HTTP GET: 405 with Allow: POST", st == 405 and hd.get("allow") == "POST",
                  (st, hd))
        st, hd, data = post(hport, "/v1/traces", good, pb)
        res.check("HTTP other path: 404", st == 404, st)
        st, hd, _ = post(hport, PATH, b"", {"Origin": "https://app.example.com",
                                             "Access-Control-Request-Method": "POST",
                                             "Access-Control-Request-Headers": "content-type"},
                         method="OPTIONS")
        res.check("CORS preflight: 204 with the allow headers",
                  st == 204 and hd.get("access-control-allow-origin") == "https://app.example.com"
                  and hd.get("access-control-max-age") == "600", (st, hd))
        st, hd, _ = post(hport, PATH, b"", {"Origin": "https://evil.test",
                                             "Access-Control-Request-Method": "POST"},
                         method="OPTIONS")
        res.check("CORS preflight from another origin: no allow header",
                  st == 204 and "access-control-allow-origin" not in hd, (st, hd))

        # gRPC: raw frames through the Node client are what it sends; bad ones
        # over the same client (it sends whatever bytes it is given).
        bad_files = []
        for label, body in [("garbage", b"\xff\xfe garbage"), ("dangling", dangling_request()),
                            ("v1.9", v19_request()), ("over max_recv_msg_size_mib",
                                                      b"\x0a" * (1024 * 1024 + 10))]:
            p = os.path.join(tmp, "bad-" + label.split()[0] + ".pb")
            with open(p, "wb") as fh:
                fh.write(body)
            bad_files.append((label, p))
        out = json.loads(node(tmp, "send", str(gport), "identity", *[p for _, p in bad_files]))
        want_codes = {"garbage": 3, "dangling": 3, "v1.9": 3, "over max_recv_msg_size_mib": 8}
        for (label, _), o in zip(bad_files, out):
            res.check(f"gRPC {label}: code {want_codes[label]}", o["code"] == want_codes[label], o)
        v19 = [o for (label, _), o in zip(bad_files, out) if label == "v1.9"]
        res.check("gRPC v1.9: the message names the version",
                  v19 and "1.9" in (v19[0].get("details") or ""), v19)
        out = json.loads(node(tmp, "send", str(gport), "identity", cpu_req))
        res.check("gRPC still serves after the bad calls", out and out[0]["code"] == 0, out)
        st, _, _ = post(hport, PATH, good, pb)
        res.check("HTTP still serves after the bad requests", st == 200, st)
        log = gw.log()
        res.check("refusals are logged with their reason",
                  re.search(r"http: answered 400: .+\(peer=", log) is not None
                  and re.search(r"grpc: answered 3: .+\(peer=", log) is not None, log[-2000:])
        res.check("gateway logged no error", "level=error" not in log, log[-2000:])
        rc = gw.stop()
        res.check("clean exit", rc == 0, rc)
    mixed_and_auth(tmp, cpu_req)
    limits(tmp, cpu_req)
    debug_same(tmp, inputs)
    tls(tmp, cpu_req)
    slowloris(tmp, cpu_req)
    backpressure(tmp, cpu_req)


def mixed_and_auth(tmp, request_file):
    """receivers: [pprof, otlp] in one pipeline, the otlp receiver with a
    bearer token on both transports: both kinds of input reach the debug
    exporter; a missing or wrong token is refused (401 / UNAUTHENTICATED)."""
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("s3cret\n")
    cfg = f"""
receivers:
  pprof:
    server:
      endpoint: 127.0.0.1:0
  otlp:
    default_service_name: otlp-default
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
        auth: {{bearer_token_file: {token}}}
        include_metadata: true
      http:
        endpoint: 127.0.0.1:0
        auth: {{bearer_token_file: {token}}}
        include_metadata: true
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - set(resource.attributes["tenant"], metadata["x-tenant"])
exporters:
  debug:
    verbosity: normal
    output_paths: ["{{debug}}"]
service:
  pipelines:
    profiles:
      receivers: [pprof, otlp]
      processors: [transform]
      exporters: [debug]
  telemetry:
    logs: {{level: info}}
"""
    with open(request_file, "rb") as fh:
        good = fh.read()
    pb = {"Content-Type": "application/x-protobuf"}
    with Gateway(cfg, n_listeners=3) as gw:
        gport, hport = ports(gw)
        pport = int(re.search(r"receiver/pprof.*listening on [0-9.]+:(\d+)", gw.log()).group(1))
        with open(os.path.join(FIXTURES, "pprof", "go", "cpu.pb.gz"), "rb") as fh:
            st, _, _ = post(pport, "/v1/pprof", fh.read(),
                            {"Otel-Resource-Attributes": "service.name=from-pprof"})
        res.check("mixed pipeline: pprof push 204", st == 204, st)
        st, hd, _ = post(hport, PATH, good, pb)
        res.check("HTTP without a token: 401 + WWW-Authenticate",
                  st == 401 and "bearer" in hd.get("www-authenticate", "").lower(), (st, hd))
        st, _, _ = post(hport, PATH, good, dict(pb, Authorization="Bearer wrong"))
        res.check("HTTP with a wrong token: 401", st == 401, st)
        st, _, _ = post(hport, PATH, good, dict(pb, Authorization="Bearer s3cret",
                                                 **{"X-Tenant": "t-http"}))
        res.check("HTTP with the token: 200", st == 200, st)
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file))
        res.check("gRPC without a token: UNAUTHENTICATED", out and out[0]["code"] == 16, out)
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file,
                              auth="Bearer s3cret", tenant="t-grpc"))
        res.check("gRPC with the token: OK", out and out[0]["code"] == 0, out)
        # One pprof push and two OTLP requests were accepted: three batches.
        deadline = time.time() + 10
        while gw.debug().count('msg="Profiles"') < 3 and time.time() < deadline:
            time.sleep(0.05)
        dbg = gw.debug()
        res.check("mixed pipeline: the pprof and both OTLP batches reach the exporter",
                  dbg.count('msg="Profiles"') == 3, (dbg.count('msg="Profiles"'), dbg[:600]))
        res.check("default_service_name fills the OTLP resources (twice)",
                  dbg.count("service.name=otlp-default") == 2, dbg[-1500:])
        res.check("include_metadata: HTTP headers and gRPC metadata reach the transform",
                  "tenant=t-http" in dbg and "tenant=t-grpc" in dbg, dbg[-1500:])
        rc = gw.stop()
        res.check("mixed pipeline: clean exit", rc == 0, rc)


def limits(tmp, request_file):
    """`limits:` caps: a request past max_samples is refused whole, 413 /
    RESOURCE_EXHAUSTED naming the cap; a smaller one passes."""
    cfg = """
receivers:
  otlp:
    limits: {max_samples: 10}
    protocols:
      grpc: {endpoint: "127.0.0.1:0"}
      http: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
  telemetry:
    logs: {level: info}
"""
    with open(request_file, "rb") as fh:
        good = fh.read()
    with Gateway(cfg, n_listeners=2) as gw:
        gport, hport = ports(gw)
        st, hd, data = post(hport, PATH, good, {"Content-Type": "application/x-protobuf"})
        res.check("limits: HTTP over max_samples: 413 naming the cap",
                  st == 413 and b"max_samples" in data, (st, data[:300]))
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file))
        res.check("limits: gRPC over max_samples: RESOURCE_EXHAUSTED",
                  out and out[0]["code"] == 8 and "max_samples" in out[0].get("details", ""), out)
        st, _, _ = post(hport, PATH, b"", {"Content-Type": "application/x-protobuf"})
        res.check("limits: an empty request passes (200, nothing forwarded)", st == 200, st)
        rc = gw.stop()
        res.check("limits: clean exit", rc == 0, rc)


def tls(tmp, request_file):
    """Both transports over TLS (h2 by ALPN for gRPC, HTTPS for HTTP) with a
    certificate made by openssl; a plaintext client gets nowhere."""
    crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "1", "-subj", "/CN=pprofgate",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    cfg = f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "127.0.0.1:0"
        tls: {{cert_file: {crt}, key_file: {key}}}
      http:
        endpoint: "127.0.0.1:0"
        tls: {{cert_file: {crt}, key_file: {key}}}
exporters:
  debug: {{verbosity: basic}}
service:
  pipelines:
    profiles: {{receivers: [otlp], exporters: [debug]}}
  telemetry:
    logs: {{level: info}}
"""
    with open(request_file, "rb") as fh:
        good = fh.read()
    with Gateway(cfg, n_listeners=2) as gw:
        gport, hport = ports(gw)
        ctx = ssl.create_default_context(cafile=crt)
        conn = http.client.HTTPSConnection("127.0.0.1", hport, context=ctx, timeout=10)
        conn.request("POST", PATH, body=good, headers={"Content-Type": "application/x-protobuf"})
        r = conn.getresponse()
        r.read()
        conn.close()
        res.check("TLS: HTTPS POST 200", r.status == 200, r.status)
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file, ca=crt))
        res.check("TLS: gRPC over h2/TLS OK", out and out[0]["code"] == 0, out)
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file))
        res.check("TLS: a plaintext gRPC client is not served", out and out[0]["code"] != 0, out)
        rc = gw.stop()
        res.check("TLS: clean exit", rc == 0, rc)


def slowloris(tmp, request_file):
    """Clients that open connections and stall: an HTTP head never finished,
    an h2 preface never completed. Each is cut by its deadline
    (read_header_timeout, handshake_timeout: 1 s here) while a normal client
    is served meanwhile."""
    import socket
    cfg = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "127.0.0.1:0"
        handshake_timeout: 1s
        read_timeout: 1s
      http:
        endpoint: "127.0.0.1:0"
        read_header_timeout: 1s
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
  telemetry:
    logs: {level: info}
"""
    with open(request_file, "rb") as fh:
        good = fh.read()
    with Gateway(cfg, n_listeners=2) as gw:
        gport, hport = ports(gw)
        socks = []
        for i in range(20):
            h = socket.create_connection(("127.0.0.1", hport), timeout=5)
            h.sendall(b"POST " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-")
            g = socket.create_connection(("127.0.0.1", gport), timeout=5)
            g.sendall(b"PRI * HTTP/2.0\r\n\r\nSM")  # half a preface
            socks += [h, g]
        st, _, _ = post(hport, PATH, good, {"Content-Type": "application/x-protobuf"})
        res.check("slowloris: a normal HTTP client is served meanwhile", st == 200, st)
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file))
        res.check("slowloris: a normal gRPC client is served meanwhile",
                  out and out[0]["code"] == 0, out)
        deadline = time.time() + 6
        closed = 0
        for sk in socks:
            sk.settimeout(max(0.1, deadline - time.time()))
            try:
                while sk.recv(4096):
                    pass
                closed += 1  # EOF: the gateway closed it
            except (socket.timeout, ConnectionResetError):
                closed += isinstance(sys.exc_info()[1], ConnectionResetError)
            sk.close()
        res.check("slowloris: every trickling connection was cut by its deadline",
                  closed == len(socks), f"{closed}/{len(socks)} closed")
        rc = gw.stop()
        res.check("slowloris: clean exit", rc == 0, rc)


def debug_same(tmp, inputs):
    """The debug exporter (detailed) prints an OTLP-received profile exactly
    as the same pprof pushed to /v1/pprof (profile ids aside: random there,
    zeroed by pg_pprof2otlp -z)."""
    cfg = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
  otlp:
    protocols:
      http: {endpoint: "127.0.0.1:0"}
exporters:
  debug:
    verbosity: detailed
    output_paths: ["{debug}"]
service:
  pipelines:
    profiles: {receivers: [pprof, otlp], exporters: [debug]}
  telemetry:
    logs: {level: info}
"""
    # (an OTLP request without samples is answered OK and not forwarded)
    picked = [(n, f) for n, f in inputs
              if n.startswith(os.path.join("pprof", "edge")) and "empty" not in n][:4]
    with Gateway(cfg, n_listeners=2) as gw:
        pport = int(re.search(r"receiver/pprof.*listening on [0-9.]+:(\d+)", gw.log()).group(1))
        hport = int(re.search(r"http listening on [0-9.]+:(\d+)", gw.log()).group(1))
        for name, f in picked:
            with open(os.path.join(FIXTURES, name), "rb") as fh:
                st1, _, _ = post(pport, "/v1/pprof", fh.read())
            before = gw.debug().count('msg="Profiles"')
            deadline = time.time() + 5
            while gw.debug().count('msg="Profiles"') < before + (st1 == 204) and \
                    time.time() < deadline:
                time.sleep(0.02)
            with open(f, "rb") as fh:
                st2, _, _ = post(hport, PATH, fh.read(), {"Content-Type": "application/x-protobuf"})
            res.check(f"debug output {name}: pushed 204, OTLP 200", (st1, st2) == (204, 200),
                      (st1, st2))
        deadline = time.time() + 5
        while gw.debug().count('msg="Profiles"') < 2 * len(picked) and time.time() < deadline:
            time.sleep(0.05)
        blocks = re.split(r'(?m)^.*msg="Profiles".*$', gw.debug())[1:]
        norm = [re.sub(r"(?m)^(    Profile ID     :).*$", r"\1 <id>", b) for b in blocks]
        pairs = list(zip(norm[0::2], norm[1::2]))
        res.check(f"debug output: OTLP-received prints as pushed ({len(pairs)} pairs)",
                  len(pairs) == len(picked) and all(a == b for a, b in pairs),
                  [(a[:300], b[:300]) for a, b in pairs if a != b][:1])
        rc = gw.stop()
        res.check("debug output: clean exit", rc == 0, rc)


def backpressure(tmp, request_file):
    """A memory_limiter whose limit the process is already past: both
    transports refuse before reading the message, retryably (503 +
    Retry-After / UNAVAILABLE), and the gateway keeps answering."""
    cfg = """
receivers:
  otlp:
    protocols:
      grpc: {endpoint: "127.0.0.1:0"}
      http: {endpoint: "127.0.0.1:0"}
processors:
  memory_limiter: {check_interval: 100ms, limit_mib: 2, spike_limit_mib: 1}
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles:
      receivers: [otlp]
      processors: [memory_limiter]
      exporters: [debug]
  telemetry:
    logs: {level: info}
"""
    with open(request_file, "rb") as fh:
        good = fh.read()
    with Gateway(cfg, n_listeners=2) as gw:
        gport, hport = ports(gw)
        time.sleep(0.3)  # an RSS reading past the limit
        for body, ctype in ((good, "application/x-protobuf"), (b"{}", "application/json")):
            st, hd, data = post(hport, PATH, body, {"Content-Type": ctype})
            res.check(f"memory limit, HTTP {ctype}: 503 + Retry-After, a Status in kind",
                      st == 503 and hd.get("retry-after") == "1"
                      and hd.get("content-type") == ctype, (st, hd, data[:200]))
        out = json.loads(node(tmp, "send", str(gport), "identity", request_file))
        res.check("memory limit, gRPC: UNAVAILABLE", out and out[0]["code"] == 14, out)
        res.check("memory limit: refusals logged as such",
                  re.search(r"answered (503|14): .*memory", gw.log()) is not None,
                  gw.log()[-1500:])
        rc = gw.stop()
        res.check("memory limit: clean exit", rc == 0, rc)


if __name__ == "__main__":  # test_otlp_receiver_collector.py imports the helpers
    main()
    res.finish()
