# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the tests against the real OpenTelemetry Collector
(pg-otelcol, built from this directory by build.sh): where the binary is,
starting it, and the fixture set every test pushes."""

import collections
import glob
import json
import os
import re
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "lib"))
from pg_harness import FIXTURES, SHARED, SOURCE_DIR, Gateway  # noqa: E402,F401
sys.path.insert(0, HERE)
import pprof_otlp  # noqa: E402

BUILD_DIR = os.environ.get("PG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
COLLECTOR = os.environ.get("PG_OTELCOL", os.path.join(BUILD_DIR, "collector", "pg-otelcol"))
GO = os.environ.get("PG_GO", "/usr/local/go/bin/go")
NOT_RUN = 77  # ctest SKIP_RETURN_CODE


def require_collector():
    """Exits 77 with a visible NOT RUN line when Go is absent; fails loudly when
    Go is there but the collector was not built."""
    if os.access(COLLECTOR, os.X_OK):
        return
    if not os.access(GO, os.X_OK):
        print(f"NOT RUN: no Go toolchain at {GO}, so no OpenTelemetry Collector to test against",
              flush=True)
        sys.exit(NOT_RUN)
    print(f"FAIL Go is at {GO} but the collector {COLLECTOR} was not built "
          f"(tests/interop/collector/build.sh failed?)", flush=True)
    print("0 passed, 1 failed", flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def otlp_to_file_config(port):
    """A collector that takes OTLP/gRPC on @port and writes it as JSON lines to
    {tmp}/out.json (the Collector class fills in {tmp})."""
    return f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{port}
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
      exporters: [file]
"""


class Collector(Gateway):
    """pg-otelcol with a config text; ready once it logs 'Everything is ready'."""

    def __init__(self, config_text, args=None, ready_timeout=60):
        super().__init__(config_text, bin=COLLECTOR,
                         args=args or ["--config", "{config}",
                                       "--feature-gates=service.profilesSupport"],
                         ready_pattern=r"Everything is ready", ready_timeout=ready_timeout)
        self.args = [a.replace("{config}", self.config_path) for a in self.args]

    def problems(self):
        """Log lines at warn level or above (the console encoder tab-separates the level)."""
        return [ln for ln in self.log().splitlines()
                if re.search(r"\t(warn|error|dpanic|panic|fatal)\t", ln, re.I)]


def gateway_to_otlp_config(port, statement):
    """pprofgate as the SDK guide runs it: the pprof receiver (include_metadata)
    -> transform running @statement (error_mode ignore) -> OTLP/gRPC to @port,
    plaintext."""
    return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      include_metadata: true
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - {statement}
exporters:
  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      processors: [transform]
      exporters: [otlp]
  telemetry:
    logs: {{level: info}}
"""


def read_json_lines(path):
    """Complete lines only: the file exporter may be half way through one."""
    try:
        with open(path) as f:
            return [json.loads(ln) for ln in f if ln.endswith("\n") and ln.strip()]
    except FileNotFoundError:
        return []


def large_fixture(tmp):
    """The ~7 MB generated profile (bench/translate_gen_large.py), gzip'd."""
    plain, gz = os.path.join(tmp, "large.pprof"), os.path.join(tmp, "large.pprof.gz")
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "translate_gen_large.py"),
                    plain, "--gzip", gz], check=True, stdout=subprocess.DEVNULL)
    with open(gz, "rb") as f:
        return f.read()


def sdk_pushes():
    """(name, body, headers as sent, content) for the real SDK captures."""
    out = []
    for meta in sorted(glob.glob(os.path.join(FIXTURES, "sdk", "push*.json"))):
        with open(meta) as f:
            m = json.load(f)
        with open(meta.replace(".json", ".pprof.gz"), "rb") as f:
            body = f.read()
        out.append(("sdk/" + os.path.basename(meta), body, m))
    return out


def fixture_bodies(tmp, with_large=True):
    """(name, raw pprof body as a client sends it, headers) for every fixture:
    Go runtime profiles, edge cases, the worked example, the SDK pushes and the
    large generated one. Plain files are sent gzip'd with Content-Encoding."""
    import gzip
    items = []
    paths = sorted(glob.glob(os.path.join(FIXTURES, "pprof", "go", "*")) +
                   glob.glob(os.path.join(FIXTURES, "pprof", "edge", "*")) +
                   glob.glob(os.path.join(FIXTURES, "pprof", "golden", "*.pprof")) +
                   glob.glob(os.path.join(FIXTURES, "debug", "*.pprof")))
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        name = os.path.relpath(path, FIXTURES)
        hdrs = {"Content-Type": "application/octet-stream",
                "Otel-Resource-Attributes": "service.name=" + name}
        if not data.startswith(b"\x1f\x8b"):
            data = gzip.compress(data, mtime=0)
            hdrs["Content-Encoding"] = "gzip"
        items.append((name, data, hdrs))
    for name, body, m in sdk_pushes():
        hdrs = {k: v for k, v in m["headers"].items()
                if k.lower() in ("content-type", "content-encoding", "otel-resource-attributes")}
        items.append((name, body, hdrs))
    if with_large:
        items.append(("generated/large.pprof.gz", large_fixture(tmp),
                      {"Content-Type": "application/octet-stream",
                       "Otel-Resource-Attributes": "service.name=large"}))
    return items


def body_pprof(body, hdrs):
    """The pprof bytes inside a body as sent (Content-Encoding gzip removed;
    inner gzip layers are removed by the canonical decoder)."""
    import gzip
    enc = {k.lower(): v for k, v in hdrs.items()}.get("content-encoding", "")
    return gzip.decompress(body) if enc == "gzip" else body


def merged(lines):
    """Canonical profiles of several export requests, merged by sample type
    (a large push may arrive split over requests)."""
    by_type, order, resources, scopes = {}, [], [], []
    for req in lines:
        for rattrs, scope, profs in pprof_otlp.otlp_profiles(req):
            resources.append(rattrs)
            scopes.append(scope)
            for p in profs:
                k = p["sample_type"]
                if k not in by_type:
                    by_type[k] = dict(p, samples=collections.Counter(p["samples"]))
                    order.append(k)
                else:
                    by_type[k]["samples"].update(p["samples"])
    return [by_type[k] for k in order], resources, scopes


def wait_output(col, seen, want_samples, timeout):
    """New JSON lines after `seen`, once their sample count reaches want_samples
    (or after a quiet 1.5 s when nothing is expected). The file is parsed only
    when its size stopped changing: the large profile's JSON is ~40 MB."""
    path = col.path("out.json")
    deadline = time.time() + timeout
    start, size, stable, new = time.time(), -1, 0, []
    while time.time() < deadline:
        time.sleep(0.1)
        cur = os.path.getsize(path) if os.path.exists(path) else 0
        stable = stable + 1 if cur == size else 0
        size = cur
        if stable != 2:
            if not want_samples and time.time() - start > 1.5:
                break
            continue
        new = read_json_lines(path)[seen:]
        if want_samples and sum(sum(p["samples"].values()) for p in merged(new)[0]) >= want_samples:
            return new
    return read_json_lines(path)[seen:]
