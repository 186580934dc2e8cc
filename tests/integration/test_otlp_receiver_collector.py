# SPDX-License-Identifier: Apache-2.0
"""The real Collector (tests/interop/collector's pg-otelcol) as a client of
pprofgate's otlp receiver: OTLP made from the pprof fixtures goes into the
Collector's otlp receiver, its `otlp_grpc` exporter (grpc-go, gzip by
default, then zstd; grpc-timeout set) sends it to pprofgate's gRPC side, and
pprofgate's otlp exporter forwards it to the Node gRPC test server. What
arrives must equal what was sent, sample for sample, with nothing refused
on the way. Skipped (77) without a Go toolchain, as the other Collector
tests."""

import collections
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "interop", "collector"))
from collector_lib import Collector, free_port, require_collector  # noqa: E402
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import FIXTURES, Gateway, Results  # noqa: E402

import test_otlp_receiver as rx  # noqa: E402  (its helpers; main() runs only as a script)

res = Results()
require_collector()


def main():
    tmp = tempfile.mkdtemp(prefix="pg-otlprx-col-")
    names = [os.path.join("pprof", "go", n) for n in ("cpu.pb.gz", "heap.pb.gz", "block.pb.gz")]
    names += [os.path.join("pprof", "edge", n) for n in ("labels.pprof", "links.pprof")]
    inputs = []
    for i, name in enumerate(names):
        src = os.path.join(FIXTURES, name)
        if not os.path.exists(src):
            continue
        out = os.path.join(tmp, f"req{i}.pb")
        r = subprocess.run([rx.P2O, "-z", src, "-o", out], capture_output=True, timeout=60)
        if r.returncode == 0 and os.path.getsize(out) > 0:
            inputs.append((name, out))
    res.check("OTLP made from the fixtures", len(inputs) >= 3, inputs)
    rx.node(tmp, "convert", *[f for _, f in inputs])
    want = collections.Counter()
    keys = set()
    for _, f in inputs:
        with open(f + ".plain.json") as fh:
            req = json.load(fh)
        want.update(rx.fingerprints([req]))
        keys |= rx.resource_keys([req])

    with GrpcServer() as sink, \
            Gateway(rx.config(sink.port).replace("    loops: 2\n", ""), n_listeners=2) as gw:
        gport, _ = rx.ports(gw)
        for comp in ("gzip", "zstd"):
            urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{sink.control}/reset", method="POST"), timeout=10).read()
            col_port = free_port()
            col_cfg = f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{col_port}
exporters:
  otlp_grpc:
    endpoint: 127.0.0.1:{gport}
    tls: {{insecure: true}}
    compression: {comp}
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_grpc]
  telemetry:
    logs: {{level: info}}
"""
            with Collector(col_cfg) as col:
                out = json.loads(rx.node(tmp, "send", str(col_port), "identity",
                                         *[f for _, f in inputs]))
                res.check(f"{comp}: the Collector accepted every request",
                          all(o["code"] == 0 for o in out), out)
                n_want = sum(want.values())
                st = sink.wait(lambda s: s.get("samples", 0) >= n_want, timeout=30)
                got = rx.fingerprints(sink.get("/requests"), keys)
                res.check(f"{comp}: Collector -> pprofgate gRPC -> sink: sample for sample "
                          f"({n_want} samples)", got == want,
                          (st, list((want - got).items())[:2], list((got - want).items())[:2]))
                res.check(f"{comp}: the Collector logged no export failure", not col.problems(),
                          col.problems()[:5])
        log = gw.log()
        res.check("pprofgate refused nothing", "answered" not in log, log[-1500:])
        rc = gw.stop()
        res.check("pprofgate: clean exit", rc == 0, rc)


main()
res.finish()
