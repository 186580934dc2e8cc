#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""memory_limiter admission estimates against what requests really take (issue 25 item 3).
Each body is POSTed once to a fresh gateway (pprof receiver -> memory_limiter -> debug at
basic, log level debug, limit_mib 2000 so no estimate is capped by the soft limit). Printed
per body: the reservation (the admission estimate, after the gzip ISIZE re-estimate), the
peak of what the arenas and pool blocks charged to the request (core/membudget.h), and the
process's VmHWM growth over its idle RSS (what the memory limit is really about, heap and
thread stacks included). Bodies: a real SDK push (sdk/push0), the 4 MB flood body
(translate_gen_large.py --samples 140000, 15.5 MB raw), the 23 KB gzip of 1e6 identical
samples (issue 25), and the 60 000-sample generated profile as one OTLP request (4.4 MB,
tests/tools/pg_pprof2otlp, to the otlp receiver over HTTP) when pg_pprof2otlp is built.
PPROFGATE_BIN, PG_BUILD_DIR."""

import gzip
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "lib"))
from pg_harness import Gateway, fixture, post  # noqa: E402
from pg_pprof import field, varint  # noqa: E402

BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(ROOT, "build"))

CFG = """
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      max_request_body_size: 16MiB
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: 2000
    spike_limit_mib: 400
exporters:
  debug:
    verbosity: basic
    output_paths: ["{debug}"]
service:
  pipelines:
    profiles: {receivers: [pprof], processors: [memory_limiter], exporters: [debug]}
  telemetry:
    logs: {level: debug}
"""

OTLP_CFG = """
receivers:
  otlp:
    protocols:
      http: {endpoint: "127.0.0.1:0"}
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: 2000
    spike_limit_mib: 400
exporters:
  debug:
    verbosity: basic
    output_paths: ["{debug}"]
service:
  pipelines:
    profiles: {receivers: [otlp], processors: [memory_limiter], exporters: [debug]}
  telemetry:
    logs: {level: debug}
"""

MEM_RE = re.compile(r"memory: ([0-9.]+) MiB estimated, ([0-9.]+) MiB charged at the peak")


def bomb():
    """1e6 identical one-frame samples: ~8 MB of pprof, gzip'd to ~23 KB (issue 25)."""
    out = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    out += field(5, 2, field(1, 0, 1) + field(2, 0, 3))
    out += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1)))
    out += field(2, 2, field(1, 2, varint(1)) + field(2, 2, varint(1))) * 1_000_000
    for s in (b"", b"samples", b"count", b"main.spin"):
        out += field(6, 2, s)
    return gzip.compress(bytes(out), 9)


def large():
    path = os.path.join(BUILD, "flood-140000.pprof.gz")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"),
                        path + ".raw", "--gzip", path, "--samples", "140000"], check=True,
                       capture_output=True)
        os.unlink(path + ".raw")
    with open(path, "rb") as f:
        return f.read()


def otlp_large():
    p2o = os.path.join(BUILD, "tests", "pg_pprof2otlp")
    if not os.path.exists(p2o):
        return None
    tmp = os.path.join(BUILD, "mem-estimate-large")
    subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), tmp + ".pprof",
                    "--gzip", tmp + ".pprof.gz"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([p2o, tmp + ".pprof.gz", "-o", tmp + ".pb"], check=True)
    with open(tmp + ".pb", "rb") as f:
        body = f.read()
    for ext in (".pprof", ".pprof.gz", ".pb"):
        os.unlink(tmp + ext)
    return body


def measure(name, body, headers=None, cfg=CFG, path="/v1/pprof"):
    gw = Gateway(cfg).start()
    try:
        time.sleep(0.3)
        idle = gw.rss_kb() or 0
        st, _, _ = post(gw.port, path, body, headers=headers, timeout=60)
        time.sleep(0.2)
        hwm = gw.hwm_kb() or 0
        m = MEM_RE.findall(gw.log())
    finally:
        gw.kill()
    est, peak = (float(m[-1][0]), float(m[-1][1])) if m else (float("nan"), float("nan"))
    raw = len(gzip.decompress(body)) if body[:2] == b"\x1f\x8b" else len(body)
    grow = (hwm - idle) / 1024
    print(f"  {name:<28} {len(body) / 1e6:7.3f} MB ({raw / 1e6:6.2f} MB raw) -> {st}: "
          f"estimate {est:6.1f} MiB, charged peak {peak:6.1f} MiB, VmHWM growth {grow:6.1f} MiB; "
          f"estimate / growth {est / grow if grow > 0 else float('nan'):.2f}, "
          f"charged / growth {peak / grow if grow > 0 else float('nan'):.2f}")
    return est, peak, grow


def main():
    print("admission estimate vs real (one request per fresh gateway, limit_mib 2000):")
    with open(fixture("sdk/push0.pprof.gz"), "rb") as f:
        measure("SDK push (sdk/push0)", f.read())
    measure("4 MB flood body", large())
    measure("1e6-sample bomb", bomb())
    body = otlp_large()
    if body is None:
        print("  OTLP 4.4 MB request: skipped (build pg_pprof2otlp)")
    else:
        measure("OTLP 4.4 MB (HTTP, protobuf)", body, {"Content-Type": "application/x-protobuf"},
                OTLP_CFG, "/v1development/profiles")


if __name__ == "__main__":
    main()
