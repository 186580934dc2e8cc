# SPDX-License-Identifier: Apache-2.0
"""The pyroscope receiver with requests built here: folded and lines uploads
(type, unit, period and values from the name suffix and sampleRate, times
from from/until), a raw pprof body, the Push API over Connect (protobuf and
JSON, several series merged into one request); one listener shared with a
pprof receiver, each route feeding its own pipeline; and bad input (no
profile part, garbage pprof, 10 000 parts, a boundary never closed,
unbalanced braces, a folded line without a count or with 10^30, base64 that
does not decode, jfr, prev_profile): each a clear 4xx in the route's form,
the gateway alive, every accepted request exported, the receiver's metrics
under its own name; a shared endpoint whose listener keys differ stops the
start naming the key."""
import base64
import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import BIN, Gateway, Results, fixture, post  # noqa: E402
from pyro_lib import otlp_summary, push_request, read_pprof  # noqa: E402

res = Results()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


CONFIG = """
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:{port}"}}
  pyroscope:
    server: {{endpoint: "127.0.0.1:{port}", include_metadata: true}}
processors:
  transform/pprof:
    profile_statements: ['set(resource.attributes["route"], "pprof")']
  transform/pyroscope:
    profile_statements: ['set(resource.attributes["route"], "pyroscope")']
exporters:
  otlp:
    endpoint: 127.0.0.1:{grpc}
    tls: {{insecure: true}}
service:
  telemetry:
    metrics: {{address: "127.0.0.1:{mport}"}}
  pipelines:
    profiles/pprof: {{receivers: [pprof], processors: [transform/pprof], exporters: [otlp]}}
    profiles/pyroscope: {{receivers: [pyroscope], processors: [transform/pyroscope],
                          exporters: [otlp]}}
"""

FOLDED = b"main;handle;parse 10\nmain;handle 5\n\nmain;idle 0\r\n"
GO_CPU = fixture("pprof/go/cpu.pb.gz") or fixture("sdk/push0.pprof.gz")
with open(GO_CPU, "rb") as f:
    PPROF_GZ = f.read()


def multipart(parts, boundary="pgBoundary42", close=True):
    out = b""
    for name, data in parts:
        out += (b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"" +
                name.encode() + b"\"; filename=\"" + name.encode() + b"\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n")
    if close:
        out += b"--" + boundary.encode() + b"--\r\n"
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


with GrpcServer() as srv:
    port, mport = free_port(), free_port()
    with Gateway(CONFIG.format(port=port, grpc=srv.port, mport=mport)) as gw:
        ok = 0

        def expect(name, path, body, headers, code, want=None):
            global ok
            st, hdrs, data = post(port, path, body, headers)
            good = st == code and (want is None or want.encode() in data)
            res.check(name, good, (st, data[:300]))
            if 200 <= st < 300:
                ok += 1
            return st, hdrs, data

        # ---- accepted -------------------------------------------------------------
        q = ("/ingest?name=shop.cpu%7Benv%3Dstaging%2Cteam%3Dpay%7D&format=folded"
             "&from=1700000000&until=1700000010&spyName=rbspy&sampleRate=100")
        expect("folded upload -> 200", q, FOLDED, {}, 200)
        expect("lines upload -> 200",
               "/ingest?name=shop.wall&format=lines&from=1700000020&until=1700000030"
               "&sampleRate=50", b"main;a\nmain;a\nmain;b\n", {}, 200)
        expect("folded heap type by suffix -> 200",
               "/ingest?name=shop.alloc_objects&format=folded", b"main;alloc 7\n", {}, 200)
        expect("raw pprof body (format=pprof, gzip'd) -> 200",
               "/ingest?name=rawapp&format=pprof&spyName=gospy", PPROF_GZ, {}, 200)
        body, hdrs = multipart([("profile", PPROF_GZ), ("sample_type_config",
                                b'{"cpu":{"units":"nanoseconds","aggregation":"sum"}}')])
        expect("multipart with sample_type_config -> 200",
               "/ingest?name=formapp%7Bservice.instance.id%3Dpod-1%2C__session_id__%3Dabc%7D",
               body, dict(hdrs, **{"X-Scope-OrgID": "t-9"}), 200)
        raw = gzip.decompress(PPROF_GZ)
        preq = push_request([({"__name__": "process_cpu", "service_name": "pushed-a",
                               "env": "prod"}, [PPROF_GZ, raw]),
                             ({"service_name": "pushed-b", "__session_id__": "s-1"}, [raw])])
        st, h, data = expect("Push API protobuf (2 series, 3 samples) -> 200",
                             "/push.v1.PusherService/Push", preq,
                             {"Content-Type": "application/proto",
                              "Connect-Protocol-Version": "1"}, 200)
        res.check("Push API answers an empty PushResponse (application/proto)",
                  data == b"" and h.get("content-type", "").startswith("application/proto"),
                  (h, data))
        jreq = json.dumps({"series": [{"labels": [{"name": "service_name", "value": "json-svc"}],
                                       "samples": [{"rawProfile":
                                                    base64.b64encode(PPROF_GZ).decode(),
                                                    "ID": "x"}]}]}).encode()
        st, h, data = expect("Push API JSON -> 200", "/push.v1.PusherService/Push", jreq,
                             {"Content-Type": "application/json"}, 200)
        res.check("Push API JSON answers {}", data == b"{}", data)
        expect("shared port: /v1/pprof -> 204", "/v1/pprof", PPROF_GZ, {}, 204)

        # ---- refused ----------------------------------------------------------------
        body, hdrs = multipart([("sample_type_config", b"{}")])
        expect("missing profile part -> 400", "/ingest?name=a", body, hdrs, 400, "profile")
        body, hdrs = multipart([("profile", b"\x0a\xff\xff\xff garbage")])
        expect("garbage pprof -> 400", "/ingest?name=a", body, hdrs, 400)
        body, hdrs = multipart([("p%d" % i, b"x") for i in range(10000)])
        expect("10 000 parts -> 413", "/ingest?name=a", body, hdrs, 413)
        body, hdrs = multipart([("profile", PPROF_GZ)], close=False)
        expect("boundary never closed -> 400", "/ingest?name=a", body, hdrs, 400, "never closed")
        expect("unbalanced braces in name -> 400", "/ingest?name=app%7Benv%3Dx&format=folded",
               FOLDED, {}, 400, "brace")
        expect("folded line without a count -> 400", "/ingest?name=a.cpu&format=folded",
               b"main;x 3\nmain;y\n", {}, 400, "line 2")
        expect("folded count of 10^30 -> 400", "/ingest?name=a.cpu&format=folded",
               b"main;x " + b"1" + b"0" * 30 + b"\n", {}, 400, "line 1")
        st, h, data = expect("Connect JSON with bad base64 -> 400 invalid_argument",
                             "/push.v1.PusherService/Push",
                             b'{"series":[{"labels":[],"samples":[{"rawProfile":"%%%"}]}]}',
                             {"Content-Type": "application/json"}, 400)
        try:
            err = json.loads(data)
        except ValueError:
            err = {}
        res.check("Connect error form {code, message}", err.get("code") == "invalid_argument" and
                  "base64" in err.get("message", ""), data)
        st, h, data = expect("Push API garbage protobuf -> 400 (Connect form)",
                             "/push.v1.PusherService/Push", b"\x0a\xff\xff\xff\x0f",
                             {"Content-Type": "application/proto"}, 400, "invalid_argument")
        expect("Push API text/plain -> 415", "/push.v1.PusherService/Push", preq,
               {"Content-Type": "text/plain"}, 415)
        expect("format=jfr -> 415 naming what is supported", "/ingest?name=a&format=jfr",
               b"x", {}, 415, "pprof")
        expect("format=tree -> 415", "/ingest?name=a&format=tree", b"x", {}, 415)
        body, hdrs = multipart([("profile", PPROF_GZ), ("prev_profile", PPROF_GZ)])
        expect("prev_profile (cumulative, old clients) -> 400 as Pyroscope 1.x",
               "/ingest?name=a", body, hdrs, 400, "prev_profile")
        expect("no name -> 400", "/ingest?format=folded", FOLDED, {}, 400, "name")
        st, _, _ = post(port, "/ingest?name=a", b"", {}, method="GET")
        res.check("GET /ingest -> 405", st == 405, st)

        res.check("gateway alive after the bad input", gw.proc.poll() is None)
        srv.wait(lambda s: s["requests"] >= ok, timeout=20)
        res.check("every accepted request exported (%d)" % ok, srv.stats()["requests"] == ok,
                  srv.stats()["requests"])
        profs = otlp_summary(srv.get("/requests"))
        by_svc = {}
        for p in profs:
            by_svc.setdefault(p["resource"].get("service.name"), []).append(p)

        sh = by_svc.get("shop", [])
        cpu = [p for p in sh if p["type"] == "cpu"]
        res.check("folded: service.name without the .cpu suffix, labels as attributes",
                  cpu and cpu[0]["resource"].get("env") == "staging" and
                  cpu[0]["resource"].get("team") == "pay" and
                  cpu[0]["resource"].get("pyroscope.spy.name") == "rbspy", sh[:1])
        res.check("folded cpu: nanoseconds, 15 samples x 10ms, period 10ms",
                  cpu and cpu[0]["unit"] == "nanoseconds" and cpu[0]["total"] == 15 * 10000000
                  and cpu[0]["period"] == 10000000, cpu[:1])
        res.check("folded: from/until (seconds) -> time and duration",
                  cpu and cpu[0]["time"] == 1700000000 * 10**9 and
                  cpu[0]["duration"] == 10 * 10**9, cpu[:1])
        res.check("folded: frames are functions", cpu and
                  {"main", "handle", "parse"} <= cpu[0]["functions"], cpu[:1])
        wall = [p for p in sh if p["type"] == "wall"]
        res.check("lines: each line counts 1 (wall, 3 x 20ms)",
                  wall and wall[0]["total"] == 3 * 20000000, wall[:1])
        ao = [p for p in sh if p["type"] == "alloc_objects"]
        res.check("suffix alloc_objects: type alloc_objects/count, value as sent",
                  ao and ao[0]["unit"] == "count" and ao[0]["total"] == 7, ao[:1])
        rawp = by_svc.get("rawapp", [])
        sent = read_pprof(PPROF_GZ)["totals"]
        res.check("raw pprof: every sample type and value",
                  {p["type"]: p["total"] for p in rawp} == sent, (rawp, sent))
        fa = by_svc.get("formapp", [])
        res.check("service.instance.id label wins over __session_id__",
                  fa and fa[0]["resource"].get("service.instance.id") == "pod-1", fa[:1])
        fcpu = [p for p in fa if p["type"] == "cpu"]
        res.check("sample_type_config aggregation -> profile attribute pyroscope.aggregation",
                  fcpu and fcpu[0]["attributes"].get("pyroscope.aggregation") == "sum" and
                  all("pyroscope.aggregation" not in p["attributes"]
                      for p in fa if p["type"] != "cpu"), [(p["type"], p["attributes"]) for p in fa])
        a, b = by_svc.get("pushed-a", []), by_svc.get("pushed-b", [])
        res.check("Push API: series labels -> resources, both samples of series a",
                  len(a) == 2 * len(sent) and a[0]["resource"].get("env") == "prod", a[:1])
        res.check("Push API: __session_id__ -> service.instance.id", b and
                  b[0]["resource"].get("service.instance.id") == "s-1", b[:1])
        res.check("Push API JSON: service_name label", by_svc.get("json-svc"), list(by_svc))
        routes = {p["resource"].get("service.name"): p["resource"].get("route") for p in profs}
        res.check("shared listener: each route feeds its own pipeline",
                  routes.get("shop") == "pyroscope" and routes.get("pushed-a") == "pyroscope" and
                  "pprof" in routes.values(), routes)
        pprof_route = [p for p in profs if p["resource"].get("route") == "pprof"]
        res.check("the /v1/pprof push went through the pprof pipeline only",
                  len(pprof_route) == len(sent), len(pprof_route))

        c = http.client.HTTPConnection("127.0.0.1", mport, timeout=10)
        c.request("GET", "/metrics")
        metrics = c.getresponse().read().decode()
        c.close()
        res.check("metrics: samples accepted by receiver pyroscope",
                  'otelcol_receiver_accepted_profile_samples{receiver="pyroscope"' in metrics)
        res.check("metrics: answers by code under receiver pyroscope",
                  'pprofgate_receiver_http_requests_total{receiver="pyroscope",code="400"}'
                  in metrics and
                  'pprofgate_receiver_http_requests_total{receiver="pprof",code="204"}' in metrics,
                  [ln for ln in metrics.splitlines() if "http_requests_total{" in ln])

# A second listener key that differs: the start stops, naming it.
bad = f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:{free_port()}", write_timeout: 10s}}
  pyroscope:
    server: {{endpoint: "127.0.0.1:PORT"}}
exporters:
  debug: {{}}
service:
  pipelines:
    profiles: {{receivers: [pprof, pyroscope], exporters: [debug]}}
"""
bad = bad.replace("PORT", bad.split("127.0.0.1:")[1].split('"')[0])
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write(bad)
r = subprocess.run([BIN, "--config", f.name], capture_output=True, text=True, timeout=20)
os.unlink(f.name)
res.check("shared endpoint with a differing listener key: start fails naming the key",
          r.returncode != 0 and "write_timeout differs" in (r.stdout + r.stderr),
          (r.returncode, (r.stdout + r.stderr)[-600:]))
res.finish()
