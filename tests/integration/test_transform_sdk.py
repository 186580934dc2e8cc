# SPDX-License-Identifier: Apache-2.0
"""The real SDK client (@coralogix/opentelemetry-profiling, pprof push) against
the real binary with include_metadata and two pipelines fed by one receiver:

  * profiles/default: the shipped statement
      merge_maps(resource.attributes, ParseResourceAttributes(metadata[...]), "upsert")
  * profiles/collector: the collector-style statement from the client README
      set(resource.attributes, ParseKeyValue(metadata[...], "=", ","))

Two client runs: one with a clean OTEL_RESOURCE_ATTRIBUTES (an encoded comma
inside a value, a space), one with an apostrophe in a value. Asserts the
default pipeline shows every attribute percent-decoded (and keeps all of them
despite the apostrophe), the collector pipeline shows the collector's encoded
values, loses everything on the apostrophe (warn logged, data still flows)
and still gets a service.name from the fallback."""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, fixture, post  # noqa: E402

res = Results()
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "node", "node_modules")
if not os.path.isdir(os.path.join(NODE_MODULES, "@coralogix", "opentelemetry-profiling")):
    res.check("SDK installed in tests/node (run scripts/bootstrap.sh --test)", False, NODE_MODULES)
    res.finish()

CONFIG = r"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      include_metadata: true
processors:
  transform/default:
    profile_statements:
      - merge_maps(resource.attributes, ParseResourceAttributes(metadata["otel-resource-attributes"]), "upsert")
  transform/collector:
    error_mode: ignore
    profile_statements:
      - set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))
exporters:
  debug/default:
    verbosity: detailed
    sampling_initial: 100000
    output_paths: ["{tmp}/default.out"]
  debug/collector:
    verbosity: detailed
    sampling_initial: 100000
    output_paths: ["{tmp}/collector.out"]
service:
  pipelines:
    profiles/default:
      receivers: [pprof]
      processors: [transform/default]
      exporters: [debug/default]
    profiles/collector:
      receivers: [pprof]
      processors: [transform/collector]
      exporters: [debug/collector]
  telemetry:
    logs: {level: info}
"""

CLIENT = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgTransformBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
(async () => {
  const p = new ProfilingProvider({ collectionIntervalMs: 600 });
  await p.start();
  const t = setInterval(() => pgTransformBurn(30), 40);
  await new Promise(r => setTimeout(r, 900));
  clearInterval(t);
  await p.stop();
  console.log('client done');
})().catch(e => { console.error('client error', e); process.exit(2); });
"""


def run_client(port, service, attrs):
    env = dict(os.environ, NODE_PATH=NODE_MODULES, OTEL_PROFILES_EXPORTER="pprof",
               OTEL_EXPORTER_PPROF_ENDPOINT=f"http://127.0.0.1:{port}/v1/pprof",
               OTEL_SERVICE_NAME=service, OTEL_RESOURCE_ATTRIBUTES=attrs)
    try:
        r = subprocess.run(["node", "-e", CLIENT], env=env, capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(SOURCE_DIR, "tests", "node"))
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        return -1, e.stdout or "", e.stderr or ""


def resources(text):
    """Every 'Resource attributes:' block of a detailed debug dump as a dict."""
    out = []
    for block in re.split(r"^ResourceProfiles #\d+", text, flags=re.M)[1:]:
        m = re.search(r"^Resource attributes:\n((?:     -> .*\n)*)", block, re.M)
        attrs = {}
        if m:
            for line in m.group(1).splitlines():
                kv = re.match(r"     -> (.*?): (\w+)\((.*)\)$", line)
                if kv:
                    attrs[kv.group(1)] = kv.group(3)
        out.append(attrs)
    return out


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_resources(path, match, n, timeout=5):
    """The resources in @path that match, once there are @n of them (or at the timeout)."""
    deadline = time.time() + timeout
    while True:
        got = [r for r in resources(read(path)) if match(r)]
        if len(got) >= n or time.time() >= deadline:
            return got
        time.sleep(0.05)


with Gateway(CONFIG) as gw:
    default_out = gw.path("default.out")
    collector_out = gw.path("collector.out")

    # 1. A clean header: an encoded comma inside a value, a space, an '@'.
    rc, out, err = run_client(gw.port, "clean-svc",
                              "deployment.environment=prod,team=a%2Cb,sp=hello%20world")
    res.check("clean client ran", rc == 0 and "client done" in out, (rc, out, err[-600:]))
    res.check("clean client: no failed export", "export failed" not in err, err[-600:])
    # The debug exporter writes from its own thread: wait for both pushes.
    d = wait_resources(default_out, lambda r: r.get("service.name") == "clean-svc", 2)
    c = wait_resources(collector_out, lambda r: r.get("service.name") == "clean-svc", 2)
    res.check("default pipeline got the clean pushes", len(d) >= 2, len(d))
    res.check("collector pipeline got the clean pushes", len(c) >= 2, len(c))
    if d:
        a = d[0]
        res.check("default: telemetry.sdk.name percent-decoded",
                  a.get("telemetry.sdk.name") == "@coralogix/opentelemetry-profiling", a)
        res.check("default: encoded comma stays inside its value", a.get("team") == "a,b", a)
        res.check("default: space decoded", a.get("sp") == "hello world", a)
        res.check("default: profiler.type present",
                  {r.get("profiler.type") for r in d} >= {"wall", "heap"}, [r.get("profiler.type") for r in d])
        res.check("default: SDK attributes kept",
                  a.get("deployment.environment") == "prod" and a.get("runtime.name") == "nodejs"
                  and a.get("telemetry.sdk.language") == "javascript" and "process.pid" in a, a)
    if c:
        a = c[0]
        res.check("collector: telemetry.sdk.name stays encoded",
                  a.get("telemetry.sdk.name") == "%40coralogix%2Fopentelemetry-profiling", a)
        res.check("collector: team stays encoded", a.get("team") == "a%2Cb", a)
        res.check("collector: sp stays encoded", a.get("sp") == "hello%20world", a)
        res.check("collector: pid is a string like upstream", a.get("process.pid", "").isdigit(), a)

    # 2. An apostrophe in a value (encodeURIComponent leaves it as is).
    rc, out, err = run_client(gw.port, "quote-svc",
                              "owner=o'brien,team=a%2Cb,deployment.environment=prod")
    res.check("apostrophe client ran", rc == 0 and "client done" in out, (rc, out, err[-600:]))
    res.check("apostrophe client: no failed export (ignore mode)", "export failed" not in err,
              err[-600:])
    d = wait_resources(default_out, lambda r: r.get("service.name") == "quote-svc", 2)
    res.check("default pipeline: apostrophe push keeps all attributes", len(d) >= 2, len(d))
    if d:
        a = d[0]
        res.check("default: owner keeps its apostrophe", a.get("owner") == "o'brien", a)
        res.check("default: other attributes intact",
                  a.get("team") == "a,b" and a.get("deployment.environment") == "prod"
                  and a.get("telemetry.sdk.name") == "@coralogix/opentelemetry-profiling"
                  and a.get("profiler.type") in ("wall", "heap"), a)
    m = gw.wait_log(r"level=warn comp=processor/transform/collector msg=\"failed to execute "
                    r"statement: .*never reached the end of a quoted value", 5)
    res.check("collector statement fails on the apostrophe and is logged at warn", m is not None,
              gw.log()[-1500:])
    coll = resources(read(collector_out))
    lost = wait_resources(collector_out, lambda r: "owner" not in r and
                          r.get("service.name", "").startswith("unknown_service"), 2)
    res.check("collector pipeline: data still flows, attributes lost, service.name falls back",
              len(lost) >= 2, coll[-2:])
    res.check("gateway answered no errors", not re.findall(r"answered (5\d\d)", gw.log()),
              gw.log()[-800:])
    rc = gw.stop()
    res.check("clean exit", rc == 0, rc)

# 3. The shipped config/pprofgate.yaml itself (debug exporter on stderr, which
#    the harness captures in the gateway log).
with open(os.path.join(SOURCE_DIR, "config", "pprofgate.yaml")) as f:
    shipped = f.read()
with Gateway(shipped, env={"PPROFGATE_ENDPOINT": "127.0.0.1:0",
                           "PPROFGATE_DEBUG_VERBOSITY": "detailed"}) as gw:
    rc, out, err = run_client(gw.port, "shipped-svc",
                              "owner=o'brien,team=a%2Cb,deployment.environment=prod")
    res.check("shipped config: client ran", rc == 0 and "client done" in out, (rc, out, err[-600:]))
    gw.wait_log(r"-> service\.name: Str\(shipped-svc\)", 5)
    got = [r for r in resources(gw.log()) if r.get("service.name") == "shipped-svc"]
    res.check("shipped config: pushes carry the decoded resource", len(got) >= 1, gw.log()[-1500:])
    if got:
        a = got[0]
        res.check("shipped config: every attribute decoded, apostrophe kept",
                  a.get("owner") == "o'brien" and a.get("team") == "a,b"
                  and a.get("telemetry.sdk.name") == "@coralogix/opentelemetry-profiling"
                  and a.get("profiler.type") in ("wall", "heap"), a)
    gw.stop()

# 4. error_mode: propagate fails the request with 500, like the collector; the
#    captured SDK push (owner=o'brien) is replayed with its real headers.
PROPAGATE = CONFIG.replace("    error_mode: ignore\n", "    error_mode: propagate\n")
body_path = fixture("sdk/push0.pprof.gz")
res.check("SDK capture fixture present", body_path is not None, "tests/fixtures/sdk/push0.pprof.gz")
if body_path:
    with open(body_path, "rb") as f:
        body = f.read()
    hdr = re.search(r'"otel-resource-attributes": "([^"]*)"', read(fixture("sdk/push0.json"))).group(1)
    with Gateway(PROPAGATE) as gw:
        status, _, text = post(gw.port, "/v1/pprof", body,
                               {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream",
                                "Otel-Resource-Attributes": hdr})
        res.check("propagate: apostrophe header -> 500", status == 500, (status, text[:300]))
        res.check("propagate: body names the failing statement and reason",
                  b"failed to execute statement" in text and b"never reached the end" in text,
                  text[:300])
        status, _, text = post(gw.port, "/v1/pprof", body,
                               {"Content-Encoding": "gzip",
                                "Otel-Resource-Attributes": hdr.replace("o'brien", "obrien")})
        res.check("propagate: clean header -> 204", status == 204, (status, text[:300]))
        gw.stop()

res.finish()
