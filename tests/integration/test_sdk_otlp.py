# SPDX-License-Identifier: Apache-2.0
"""The real SDK with its defaults: @coralogix/opentelemetry-profiling
(tests/node) with only OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME set
(no OTEL_PROFILES_EXPORTER: its default export is OTLP/gRPC) sends to
pprofgate's otlp receiver, which forwards with its otlp exporter to the Node
gRPC test server (tests/node/grpc_server.mjs). Every request the SDK made is
answered OK and delivered, with its resource (service.name, the SDK's
attributes) intact and its samples unchanged in number. The same with the
shipped config/pprofgate.yaml (pprof and otlp in one pipeline)."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import SOURCE_DIR, Gateway, Results, post  # noqa: E402

res = Results()
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "node", "node_modules")
if not os.path.isdir(os.path.join(NODE_MODULES, "@coralogix", "opentelemetry-profiling")):
    res.check("SDK installed in tests/node (run scripts/bootstrap.sh --test)", False, NODE_MODULES)
    res.finish()

# Profiled for ~3 collections; the exporter's outcome of each export is
# counted by wrapping it (the provider only logs failures).
CLIENT = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgOtlpBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
(async () => {
  const p = new ProfilingProvider({ collectionIntervalMs: 700 });
  await p.start();
  const t = setInterval(() => pgOtlpBurn(40), 50);
  await new Promise(r => setTimeout(r, 2600));
  clearInterval(t);
  await p.stop();
  console.log('client done');
})().catch(e => { console.error('client error', e); process.exit(2); });
"""

CONFIG = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
exporters:
  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp]
  telemetry:
    logs: {{level: info}}
    metrics: {{address: "127.0.0.1:0"}}
"""

with GrpcServer() as sink, Gateway(CONFIG.format(port=sink.port)) as gw:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(NODE_PATH=NODE_MODULES, OTEL_SERVICE_NAME="sdk-otlp-svc",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{gw.port}")
    try:
        r = subprocess.run(["node", "-e", CLIENT], env=env, capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(SOURCE_DIR, "tests", "node"))
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = e.stdout or "", e.stderr or "", -1
    res.check("SDK ran to completion", rc == 0 and "client done" in out, (rc, out, err[-800:]))
    res.check("SDK reported no failed export", "failed" not in err, err[-800:])

    log = gw.log()
    answered = re.findall(r"grpc: answered (\d+)", log)
    res.check("gateway refused nothing", not answered, answered)
    # Every export of the SDK is one gRPC call; each must reach the sink.
    st = sink.wait(lambda s: s.get("requests", 0) >= 4, timeout=20)
    res.check("at least 4 exports delivered (2 collections x wall+heap)", st["requests"] >= 4, st)
    reqs = sink.get("/requests")
    metrics_ok = True
    for req in reqs:
        strings = req.get("dictionary", {}).get("stringTable", [""])
        for rp in req.get("resourceProfiles", []):
            attrs = {}
            for kv in (rp.get("resource") or {}).get("attributes", []):
                v = kv.get("value") or {}
                attrs[kv["key"]] = (strings[int(v["stringValueStrindex"])]
                                    if "stringValueStrindex" in v else next(iter(v.values()), ""))
            if attrs.get("service.name") != "sdk-otlp-svc" or \
                    attrs.get("telemetry.sdk.name") != "@coralogix/opentelemetry-profiling" or \
                    "process.pid" not in attrs:
                metrics_ok = False
                bad = attrs
    res.check("every resource intact (service.name, telemetry.sdk.name, process.pid)",
              reqs and metrics_ok, None if metrics_ok else bad)
    res.check("every delivered request carries samples", st.get("samples", 0) > 0, st)
    scopes = {sp.get("scope", {}).get("name") for req in reqs
              for rp in req.get("resourceProfiles", []) for sp in rp.get("scopeProfiles", [])}
    res.check("the SDK's scope is kept", "@coralogix/opentelemetry-profiling" in scopes, scopes)
    # Every call the gateway answered OK reached the sink (none was empty).
    m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
    ok_calls = None
    if m is not None:
        _, _, body = post(int(m.group(1)), "/metrics", method="GET")
        found = re.search(r'^pprofgate_receiver_grpc_requests_total\{[^}]*code="0"\} (\d+)',
                          body.decode(), re.M)
        ok_calls = int(found.group(1)) if found else None
    st = sink.stats()
    res.check("every call answered OK was delivered", ok_calls is not None and ok_calls >= 4
              and st["requests"] == ok_calls, (ok_calls, st["requests"]))
    acc = re.search(r'^otelcol_receiver_accepted_profile_samples\{receiver="otlp",'
                    r'transport="grpc"\} (\d+)', body.decode() if m else "", re.M)
    res.check("accepted samples counted (receiver=otlp, transport=grpc)",
              acc is not None and int(acc.group(1)) == st["samples"],
              (acc.group(0) if acc else None, st["samples"]))
    rc = gw.stop()
    res.check("clean exit", rc == 0, rc)


# The shipped default config (config/pprofgate.yaml: pprof and otlp in one
# pipeline, the header transform, debug) with the SDK's defaults: the OTLP
# resource survives the transform, nothing is refused, nothing warned.
env_gw = dict(os.environ, PPROFGATE_ENDPOINT="127.0.0.1:0",
              PPROFGATE_OTLP_GRPC_ENDPOINT="127.0.0.1:0",
              PPROFGATE_OTLP_HTTP_ENDPOINT="127.0.0.1:0")
with Gateway("", args=["--config", os.path.join(SOURCE_DIR, "config", "pprofgate.yaml")],
             env=env_gw, ready_pattern=r"grpc listening on [0-9.]+:\d+") as gw:
    gport = int(re.search(r"grpc listening on [0-9.]+:(\d+)", gw.log()).group(1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(NODE_PATH=NODE_MODULES, OTEL_SERVICE_NAME="default-cfg-svc",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{gport}")
    try:
        r = subprocess.run(["node", "-e", CLIENT], env=env, capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(SOURCE_DIR, "tests", "node"))
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = e.stdout or "", e.stderr or "", -1
    res.check("default config: SDK ran with no failed export",
              rc == 0 and "client done" in out and "failed" not in err, (rc, err[-800:]))
    ok = gw.wait_log(r"service\.name=default-cfg-svc", timeout=10)
    log = gw.log()
    res.check("default config: profiles printed under the SDK's service.name",
              ok is not None and "unknown_service" not in log, log[-1500:])
    res.check("default config: no refusal, warning or error",
              "answered" not in log and "level=warn" not in log and "level=error" not in log,
              log[-1500:])
    rc = gw.stop()
    res.check("default config: clean exit", rc == 0, rc)

res.finish()
