# SPDX-License-Identifier: Apache-2.0
"""Differential test against the real OpenTelemetry Collector: the same
request headers and the same transform statements go through the collector's
transform processor and through pprofgate's, and the two outputs are compared
profile by profile.

The contrib pprof receiver is not served by the Go module proxy, so the
collector cannot take the pprof body itself: its side gets the same body
translated to OTLP (tests/tools/pg_pprof2otlp, checked against the pprof input
by test_collector_interop.py) on its otlp receiver's HTTP endpoint, with the
client's headers and include_metadata: true, exactly as the pprof receiver
would hand them on. Both outputs land in the collector's file exporter, so the
comparison is between two pdata JSON documents.

Every difference must be one README.md's differences table names; the table
rows this test relies on are listed in EXPECTED below and checked to exist.
Then the same YAML files go through both binaries' `validate`."""

import gzip
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collector_lib import (gateway_to_otlp_config, otlp_to_file_config, BUILD_DIR, COLLECTOR, SOURCE_DIR, Collector, Gateway,  # noqa: E402
                           fixture_bodies, free_port, read_json_lines, require_collector,
                           sdk_pushes)
from pg_harness import BIN, Results, post  # noqa: E402
import pprof_otlp  # noqa: E402

require_collector()
res = Results()
P2O = os.environ.get("PG_PPROF2OTLP", os.path.join(BUILD_DIR, "tests", "pg_pprof2otlp"))

# The SDK README's recipe, which a collector release rejects at load time
# (bare `metadata` is no OTTL path there), and the form it understands, which
# config/collector-compat.yaml uses.
SDK_README = 'set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))'
STATEMENTS = {
    "otelcol": 'set(resource.attributes, ParseKeyValue('
               'otelcol.client.metadata["otel-resource-attributes"][0], "=", ","))',
}


def collector_config(port, statement):
    return f"""
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
        include_metadata: true
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - {statement}
exporters:
  file:
    path: {{tmp}}/out.json
    flush_interval: 50ms
service:
  telemetry:
    logs: {{level: info}}
    metrics: {{level: none}}
  pipelines:
    profiles:
      receivers: [otlp]
      processors: [transform]
      exporters: [file]
"""


def wait_lines(col, n, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = read_json_lines(col.path("out.json"))
        if len(lines) >= n:
            return lines
        time.sleep(0.05)
    return read_json_lines(col.path("out.json"))


def otlp_body(pprof_gz):
    with tempfile.NamedTemporaryFile(suffix=".pprof.gz") as f:
        f.write(pprof_gz)
        f.flush()
        return subprocess.run([P2O, "-z", f.name], check=True, stdout=subprocess.PIPE).stdout


def client_headers(meta):
    """The captured request's headers minus those that describe its own body
    (length, encoding, type) and the hop-by-hop ones."""
    skip = {"content-length", "content-encoding", "content-type", "host", "connection"}
    return {k: v for k, v in meta["headers"].items() if k.lower() not in skip}


# ---- 1. the same headers and statement through both transform processors -------------

def header_variants(meta):
    """The capture's own Otel-Resource-Attributes (its owner=o'brien makes
    ParseKeyValue fail in both), the same without that pair (percent-encoded
    values, which both must keep as they are), and one with quoting, spaces
    and an empty value."""
    h = client_headers(meta)
    key = next(k for k in h if k.lower() == "otel-resource-attributes")
    plain = dict(h, **{key: h[key].replace("owner=o'brien,", "")})
    quoted = dict(h, **{key: 'service.name=quoted, note="a,b=c" ,empty=,x=%20y'})
    return [("as captured", h), ("no apostrophe", plain), ("quoted", quoted)]


def statement_failures(log):
    return len(re.findall(r"failed to execute statement", log))


pushes = sdk_pushes()
res.check("SDK captures present", len(pushes) == 4, len(pushes))
for label, stmt in STATEMENTS.items():
    p_col, p_sink = free_port(), free_port()
    with Collector(collector_config(p_col, stmt)) as col, \
            Collector(otlp_to_file_config(p_sink)) as sink, \
            Gateway(gateway_to_otlp_config(p_sink, stmt)) as gw:
        i = 0
        for name, body, meta in pushes:
            otlp = gzip.compress(otlp_body(body))
            for variant, hdrs in header_variants(meta):
                what = f"{name} ({variant} header)"
                st, _, rb = post(p_col, "/v1development/profiles", otlp,
                                 dict(hdrs, **{"Content-Type": "application/x-protobuf",
                                               "Content-Encoding": "gzip"}))
                res.check(f"{what}: collector otlp/http accepts it", st == 200, (st, rb[:200]))
                st, _, rb = post(gw.port, "/v1/pprof", body,
                                 dict(hdrs, **{"Content-Type": meta["headers"]["content-type"],
                                               "Content-Encoding": "gzip"}))
                res.check(f"{what}: pprofgate accepts it", st == 204, (st, rb[:200]))
                i += 1
                want = wait_lines(col, i)
                got = wait_lines(sink, i)
                if not res.check(f"{what}: one export each", len(want) == i and len(got) == i,
                                 (len(want), len(got))):
                    continue
                (c_res, c_scope, c_prof), = pprof_otlp.otlp_profiles(want[i - 1])
                (g_res, g_scope, g_prof), = pprof_otlp.otlp_profiles(got[i - 1])
                # Documented difference: a resource left without service.name
                # gets pprofgate's fallback (README, differences table).
                if "service.name" not in c_res and \
                        g_res.get("service.name", ("s", ""))[1].startswith("unknown_service"):
                    g_res = {k: v for k, v in g_res.items() if k != "service.name"}
                    print(f"     {what}: no service.name after the statement; "
                          f"pprofgate adds its documented fallback")
                res.check(f"{what}: same resource attributes", c_res == g_res,
                          f"collector {sorted(c_res.items())} pprofgate {sorted(g_res.items())}")
                res.check(f"{what}: same scope", c_scope == g_scope, (c_scope, g_scope))
                diffs = [d for a, b in zip(c_prof, g_prof) for d in pprof_otlp.diff_profile(a, b)]
                res.check(f"{what}: same profiles, profile by profile",
                          len(c_prof) == len(g_prof) and not diffs, "; ".join(diffs)[:800])
        time.sleep(0.3)
        errors = [ln for ln in col.problems() if "failed to execute statement" not in ln]
        res.check(f"{label}: collector logged no other warning or error", not errors,
                  "\n".join(errors)[:800])
        res.check(f"{label}: both report the same statement failures",
                  statement_failures(col.log()) == statement_failures(gw.log()) > 0,
                  (statement_failures(col.log()), statement_failures(gw.log())))

# ---- 2. the same YAML through both validators -------------------------------------------


def as_collector_yaml(text):
    """The collector here has no pprof receiver (not on the module proxy): its
    `server:` block is confighttp.ServerConfig, which otlp's http protocol takes
    unchanged, so the same keys are validated there (indented two more)."""
    out, in_server, indent = [], False, 0
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        stripped = ln.lstrip()
        ind = len(ln) - len(stripped)
        if in_server and stripped and ind <= indent:
            in_server = False
        if stripped == "pprof:" and i + 1 < len(lines) and lines[i + 1].strip() == "server:":
            out.append(" " * ind + "otlp:")
            continue
        if stripped == "server:" and out and out[-1].strip() == "otlp:":
            out += [" " * ind + "protocols:", " " * (ind + 2) + "http:"]
            in_server, indent = True, ind
            continue
        out.append(("  " + ln) if in_server and stripped else ln)
    return "\n".join(out).replace("receivers: [pprof]", "receivers: [otlp]") + "\n"


def validate(binary, path, args):
    r = subprocess.run([binary] + args + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    return r.returncode, r.stdout


with tempfile.TemporaryDirectory() as tmp:
    # The SDK README's recipe: pprofgate runs it, the collector refuses it; the
    # README's differences table must say so.
    recipe = os.path.join(tmp, "sdk-readme.yaml")
    with open(recipe, "w") as f:
        f.write(gateway_to_otlp_config(4317, SDK_README))
    rc, out = validate(BIN, recipe, ["validate", "--config"])
    res.check("SDK README recipe: pprofgate validate accepts it", rc == 0, out[-500:])
    with open(recipe + ".col", "w") as f:
        f.write(collector_config(4318, SDK_README).replace("{tmp}", tmp))
    rc, out = validate(COLLECTOR, recipe + ".col", ["validate",
                                                    "--feature-gates=service.profilesSupport",
                                                    "--config"])
    res.check("SDK README recipe: the collector rejects bare metadata[...]",
              rc != 0 and "metadata[otel-resource-attributes]" in out, out[-500:])
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        readme = f.read()
    res.check("README differences table has the metadata[...] row",
              re.search(r'(?m)^\|[^\n]*\(metadata\["otel-resource-attributes"\][^\n]*rejected',
                        readme) is not None)
    for path in [os.path.join(SOURCE_DIR, "config", "collector-compat.yaml")]:
        with open(path) as f:
            text = f.read()
        rc, out = validate(BIN, path, ["validate", "--config"])
        res.check(f"{os.path.basename(path)}: pprofgate validate accepts it", rc == 0, out[-500:])
        cpath = os.path.join(tmp, "collector-" + os.path.basename(path))
        with open(cpath, "w") as f:
            f.write(as_collector_yaml(text))
        rc, out = validate(COLLECTOR, cpath, ["validate", "--feature-gates=service.profilesSupport",
                                              "--config"])
        res.check(f"{os.path.basename(path)}: the collector validate accepts it", rc == 0,
                  out[-800:])

# ---- 3. debug exporter: the collector's text for what pprofgate sent -------------------
# pprofgate's debug exporter (detailed, use_internal_logger: false,
# pprofgate_annotations: false) and the collector's (detailed,
# use_internal_logger: false), printing the same profiles (pprofgate -> otlp
# -> collector -> debug), each into a file: byte for byte the same, summary
# lines, the collector's one-entry attribute and link tables and blank lines
# included, but for pushes without samples, which the collector's otlp
# receiver drops.


def debug_blocks(text):
    """The output cut at each summary line, without the empty pushes."""
    blocks = re.split(r"(?m)^(?=Profiles\t\{)", text)
    return [b for b in blocks if b and '"sample records": 0}' not in b]


port = free_port()
DEBUG_COLLECTOR = f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{port}
exporters:
  debug:
    verbosity: detailed
    use_internal_logger: false
    output_paths: ["{{tmp}}/debug.out"]
service:
  telemetry:
    metrics: {{level: none}}
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug]
"""
DEBUG_GATEWAY = f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
exporters:
  debug:
    verbosity: detailed
    use_internal_logger: false
    pprofgate_annotations: false
    output_paths: ["{{debug}}"]
  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug, otlp]
"""


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


with Collector(DEBUG_COLLECTOR) as col, Gateway(DEBUG_GATEWAY) as gw:
    n = 0
    for name, body, hdrs in fixture_bodies(gw.tmp, with_large=False):
        before_c, before_g = len(read_text(col.path("debug.out"))), len(gw.debug())
        st, _, rb = post(gw.port, "/v1/pprof", body, hdrs)
        n += st == 204
        deadline = time.time() + 10
        # wait until both printed this push (the collector skips empty requests)
        while time.time() < deadline:
            time.sleep(0.1)
            new_g = gw.debug()[before_g:]
            if new_g.endswith("\n\n") and (len(read_text(col.path("debug.out"))) > before_c or
                                            '"sample records": 0}' in new_g):
                time.sleep(0.3)
                break
    time.sleep(0.5)
    c_blocks, g_blocks = debug_blocks(read_text(col.path("debug.out"))), debug_blocks(gw.debug())
    first = next((i for i, (a, b) in enumerate(zip(c_blocks, g_blocks)) if a != b), None)
    detail = (len(c_blocks), len(g_blocks))
    if first is not None:
        c_l, g_l = c_blocks[first].splitlines(), g_blocks[first].splitlines()
        line = next((i for i, (a, b) in enumerate(zip(c_l, g_l)) if a != b), min(len(c_l), len(g_l)))
        detail = (f"push {first}, line {line}: collector {c_l[line:line + 3]!r} "
                  f"pprofgate {g_l[line:line + 3]!r}")
    lines = sum(b.count("\n") for b in c_blocks)
    res.check(f"debug detailed, use_internal_logger: false, pprofgate_annotations: false: "
              f"pprofgate's output = the collector's, byte for byte, for {n} pushes "
              f"({lines} lines)",
              n > 10 and first is None and len(c_blocks) == len(g_blocks) > 10 and lines > 100,
              detail)

res.finish()
