# SPDX-License-Identifier: Apache-2.0
"""Interop with the real Pyroscope Go SDK (github.com/grafana/pyroscope-go
v1.5.0, built here from tests/integration/pyroscope with /usr/local/go; the
binary is cached in the build dir): CPU and the four heap types with tags,
a tenant and pprof.Do labels, pushed through a stand-in endpoint that keeps
the exact bytes the SDK sent, to a pyroscope receiver sharing its port with
a pprof receiver, exported over OTLP/gRPC to the test server. Checks
service.name, tags, the tenant (X-Scope-OrgID into transform), types,
function names, sample labels, and that every value the SDK sent arrives
(sums per sample type over all pushes, exact)."""
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import Gateway, Results  # noqa: E402
from pyro_lib import StandIn, otlp_summary, read_pprof, split_multipart  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyroscope")
res = Results()


def go_bin():
    for g in ("/usr/local/go/bin/go", shutil.which("go")):
        if g and os.path.exists(g):
            return g
    return None


def build_client():
    exe = os.path.join(os.environ.get("PG_BUILD_DIR", "/tmp"), "pyro_sdk_client")
    srcs = [os.path.join(HERE, f) for f in ("main.go", "go.mod", "go.sum")]
    if os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(s) for s in srcs):
        return exe
    go = go_bin()
    if go is None:
        print("SKIP: no Go toolchain")
        sys.exit(77)
    p = subprocess.run([go, "build", "-o", exe, "."], cwd=HERE, capture_output=True, text=True,
                       timeout=900, env=dict(os.environ, GOFLAGS="-mod=mod"))
    res.check("pyroscope-go client builds", p.returncode == 0, p.stderr[-1500:])
    if p.returncode != 0:
        res.finish()
    return exe


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
    server: {{endpoint: "127.0.0.1:{port}"}}
processors:
  transform:
    profile_statements:
      - set(resource.attributes["tenant"], metadata["X-Scope-OrgID"])
exporters:
  otlp:
    endpoint: 127.0.0.1:{grpc}
    tls: {{insecure: true}}
service:
  pipelines:
    profiles: {{receivers: [pprof, pyroscope], processors: [transform], exporters: [otlp]}}
"""

exe = build_client()
with GrpcServer() as srv:
    port = free_port()
    with Gateway(CONFIG.format(port=port, grpc=srv.port)) as gw:
        res.check("pyroscope shares the pprof receiver's listener",
                  gw.wait_log(r"receiver/pyroscope.*sharing the listener of receiver pprof")
                  is not None, gw.log()[-800:])
        stand = StandIn(port)
        try:
            r = subprocess.run([exe, f"http://127.0.0.1:{stand.port}", "4"], capture_output=True,
                               text=True, timeout=60)
        finally:
            stand.close()
        res.check("SDK ran to completion without upload errors",
                  r.returncode == 0 and "client done" in r.stdout and "error" not in r.stderr,
                  (r.returncode, r.stdout[-300:], r.stderr[-800:]))
        pushes = [s for s in stand.seen if s["path"].startswith("/ingest")]
        res.check("SDK pushed to /ingest (CPU and heap, several times)", len(pushes) >= 6,
                  [s["path"][:60] for s in stand.seen])
        res.check("every push answered 200",
                  all(s["status"] == 200 for s in pushes),
                  [(s["status"], s["answer"][:200]) for s in pushes if s["status"] != 200])
        res.check("the SDK sent its tenant", all(
            s["headers"].get("X-Scope-Orgid", s["headers"].get("X-Scope-OrgID")) == "tenant-7"
            for s in pushes), pushes[0]["headers"] if pushes else None)

        sent = {}
        fnames_sent = {}
        for s in pushes:
            parts = split_multipart(s["body"], s["headers"]["Content-Type"])
            p = read_pprof(parts["profile"])
            for t, v in p["totals"].items():
                sent[t] = sent.get(t, 0) + v
                fnames_sent.setdefault(t, set()).update(p["functions"])
        srv.wait(lambda st: st["requests"] >= len(pushes), timeout=20)
        profs = otlp_summary(srv.get("/requests"))
        got = {}
        for pr in profs:
            got[pr["type"]] = got.get(pr["type"], 0) + pr["total"]
        res.check("OTLP requests arrived, one per push", srv.stats()["requests"] == len(pushes),
                  (srv.stats()["requests"], len(pushes)))
        res.check("types: cpu, samples and the four heap types",
                  {"cpu", "samples", "alloc_objects", "alloc_space", "inuse_objects",
                   "inuse_space"} <= set(got), sorted(got))
        res.check("every value the SDK sent arrives (sum per sample type)", got == sent,
                  (got, sent))
        units = {(pr["type"], pr["unit"]) for pr in profs}
        res.check("units as the pprof says", {("cpu", "nanoseconds"), ("alloc_space", "bytes"),
                                              ("inuse_objects", "count")} <= units, units)
        ras = [pr["resource"] for pr in profs]
        res.check("service.name = the application name",
                  all(ra.get("service.name") == "pyro.checkout" for ra in ras),
                  {ra.get("service.name") for ra in ras})
        res.check("tags become resource attributes",
                  all(ra.get("env") == "prod" and ra.get("region") == "eu-1" for ra in ras),
                  ras[:1])
        res.check("__session_id__ -> service.instance.id, spy -> pyroscope.spy.name",
                  all(ra.get("service.instance.id") and ra.get("pyroscope.spy.name") == "gospy"
                      for ra in ras), ras[:1])
        res.check("internal labels are no resource attributes",
                  not any(k.startswith("__") for ra in ras for k in ra), ras[:1])
        res.check("X-Scope-OrgID reaches transform as request metadata",
                  all(ra.get("tenant") == "tenant-7" for ra in ras), ras[:1])
        res.check("otel.scope.name label -> the instrumentation scope",
                  {pr["scope"] for pr in profs} >= {"com.grafana.pyroscope/go",
                                                    "com.grafana.pyroscope/godeltaprof"},
                  {pr["scope"] for pr in profs})
        cpu_f = set().union(*[pr["functions"] for pr in profs if pr["type"] == "cpu"])
        alloc_f = set().union(*[pr["functions"] for pr in profs if pr["type"] == "alloc_space"])
        res.check("function names: the CPU burner in cpu",
                  any("pgPyroBurn" in f for f in cpu_f), sorted(cpu_f)[:20])
        res.check("function names: the allocator in alloc_space",
                  any("pgPyroAlloc" in f for f in alloc_f), sorted(alloc_f)[:20])
        res.check("function names as the SDK sent them",
                  cpu_f == fnames_sent.get("cpu", set()), cpu_f ^ fnames_sent.get("cpu", set()))
        cpu_labels = set().union(*[pr["labels"] for pr in profs if pr["type"] == "cpu"])
        res.check("pprof.Do labels stay sample attributes", ("endpoint", "/pay") in cpu_labels,
                  cpu_labels)
        res.check("each profile has a time and a duration",
                  all(pr["time"] > 1.6e18 and pr["duration"] > 0 for pr in profs),
                  [(pr["time"], pr["duration"]) for pr in profs][:4])
        res.check("gateway alive", gw.proc.poll() is None)
res.finish()
