# SPDX-License-Identifier: Apache-2.0
"""The real OpenTelemetry Collector's exporters into pprofgate's otlp
receiver. pprofgate A (pprof receiver) prints every fixture with its debug
exporter (detailed) and sends it with its otlphttp exporter to a Collector,
whose otlp receiver (HTTP) fans out to three exporters:
  otlp_grpc                   -> pprofgate B, otlp receiver, gRPC side
  otlp_http (proto, gzip)     -> pprofgate C, otlp receiver, HTTP side
  otlp_http (json, zstd)      -> pprofgate D, otlp receiver, HTTP side
B, C and D print what they received with the same debug exporter; each of
their texts must equal A's line for line (every resource, scope, profile,
sample value, stack and attribute; the string table's entries aside, see
debug_lines), nothing may be refused, and no log may carry a warning or
error."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collector_lib import Collector, Gateway, fixture_bodies, free_port, require_collector  # noqa: E402
from pg_harness import Results, post  # noqa: E402

require_collector()
res = Results()


def receiving_gateway(protocol):
    return f"""
receivers:
  otlp:
    protocols:
      {protocol}:
        endpoint: 127.0.0.1:0
exporters:
  debug:
    verbosity: detailed
    output_paths: ["{{debug}}"]
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug]
  telemetry:
    logs: {{level: info}}
"""


def debug_lines(text):
    """The debug text without its per-batch log lines (they carry times),
    without batches of no samples (the collector's otlp receiver passes a
    request without samples on to nobody) and without the string table's
    entries: the Collector's HTTP marshalling (pprofile.ProtoMarshaler, and
    its JSON) appends resource and scope attribute keys and values to the
    string table and refers to them by key_strindex / string_value_strindex,
    so the table legitimately grows; every use of a string is still compared
    where it is printed."""
    out, empty, strings = [], False, False
    for ln in text.splitlines():
        if ln.startswith("ts="):
            empty = 'msg="Profiles"' in ln and "sample_records=0" in ln
            continue
        if empty or not ln.strip():
            continue
        if ln == "String table:":
            strings = True
        elif strings and not ln.startswith(" "):
            strings = False
        if not strings or ln == "String table:":
            out.append(ln)
    return out


def sample_records(text):
    return sum(int(n) for n in re.findall(r"sample_records=(\d+)", text))


col_port = free_port()
with Gateway(receiving_gateway("grpc")) as b, Gateway(receiving_gateway("http")) as c, \
        Gateway(receiving_gateway("http")) as d:
    collector_config = f"""
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{col_port}
exporters:
  otlp_grpc:
    endpoint: 127.0.0.1:{b.port}
    tls: {{insecure: true}}
  otlp_http/proto:
    endpoint: http://127.0.0.1:{c.port}
  otlp_http/json:
    endpoint: http://127.0.0.1:{d.port}
    encoding: json
    compression: zstd
service:
  telemetry:
    logs: {{level: info}}
    metrics: {{level: none}}
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_grpc, otlp_http/proto, otlp_http/json]
"""
    a_config = f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      include_metadata: true
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))
exporters:
  debug:
    verbosity: detailed
    output_paths: ["{{debug}}"]
  otlphttp:
    endpoint: http://127.0.0.1:{col_port}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      processors: [transform]
      exporters: [debug, otlphttp]
  telemetry:
    logs: {{level: info}}
"""
    with Collector(collector_config) as col, Gateway(a_config) as a:
        n = 0
        for name, body, hdrs in fixture_bodies(a.tmp, with_large=False):
            n_before = a.debug().count('msg="Profiles"')
            st, _, rb = post(a.port, "/v1/pprof", body, hdrs)
            if not res.check(f"{name}: A accepts it (204)", st == 204, (st, rb[:200])):
                continue
            n += 1
            deadline = time.time() + 15
            while time.time() < deadline:
                time.sleep(0.1)
                text = a.debug()
                n_a = len(debug_lines(text))
                if text.count('msg="Profiles"') > n_before and n_a > 0 and \
                        all(len(debug_lines(g.debug())) >= n_a for g in (b, c, d)):
                    time.sleep(0.2)
                    break
        time.sleep(1.0)
        want = debug_lines(a.debug())
        want_records = sample_records(a.debug())
        res.check("fixtures pushed", n >= 15, n)
        for label, g in (("B: Collector otlp_grpc -> pprofgate gRPC", b),
                         ("C: Collector otlp_http proto+gzip -> pprofgate HTTP", c),
                         ("D: Collector otlp_http json+zstd -> pprofgate HTTP", d)):
            got = debug_lines(g.debug())
            first = next((i for i, (x, y) in enumerate(zip(want, got)) if x != y), None)
            if first is not None or len(got) != len(want):
                with open(g.path("want.debug.txt"), "w") as f:
                    f.write("\n".join(want) + "\n")
                print(f"     compare: {g.path('want.debug.txt')} {g.debug_path}")
            res.check(f"{label}: debug text = A's ({len(want)} lines)",
                      first is None and len(got) == len(want) and len(want) > 100,
                      f"line {first}: A {want[first:first + 2]!r} got {got[first:first + 2]!r}"
                      if first is not None else (len(got), len(want)))
            res.check(f"{label}: {want_records} sample records",
                      sample_records(g.debug()) == want_records,
                      (sample_records(g.debug()), want_records))
            res.check(f"{label}: no warning or error logged",
                      not re.search(r"level=(warn|error)", g.log()), g.log()[-1500:])
        res.check("A logged no error", "level=error" not in a.log(), a.log()[-1500:])
        res.check("collector logged no warning or error", not col.problems(),
                  "\n".join(col.problems())[:1500])

res.finish()
