# SPDX-License-Identifier: Apache-2.0
"""pprofgate's `protocol_version: v1.9` read by a real v1.9 peer: pg-v19peer
(this directory, built by build.sh) decodes with the pdata of Collector
v0.147.0 (go.opentelemetry.io/collector/pdata v1.53.0, OTLP v1.9.0). A gateway
pushes each fixture to two otlphttp exporters, v1.9 and the default, and a
capture server keeps the bodies. The peer must read every v1.9 body with the
samples (stack, values, attribute indices, link) the default bodies mean
under the current numbering, with its attributes resolved to key=value, and
must refuse the default bodies (v1.10 puts values where v1.9 reads
link_index: "wrong wireType"). Exit 77 (NOT RUN) when the peer was not built
(no Go toolchain)."""

import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "lib"))
from otlp_capture import Capture, meaning, samples  # noqa: E402
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402

PEER = os.environ.get("PG_V19PEER", os.path.join(os.environ.get("PG_BUILD_DIR", "build"),
                                                 "v19peer", "pg-v19peer"))
if not os.access(PEER, os.X_OK):
    print(f"NOT RUN: {PEER} was not built (interop/v19peer_build needs Go at /usr/local/go)")
    sys.exit(77)

res = Results()
PATH = "/v1development/profiles"
PUSHES = ["pprof/edge/labels.pprof", "pprof/edge/links.pprof", "pprof/golden/appendix_b.pprof",
          "pprof/go/heap.pb.gz", "sdk/push0.pprof.gz"]


def config(cap_port):
    return f"""
receivers:
  pprof:
    server:
      endpoint: 127.0.0.1:0
exporters:
  otlphttp/v19:
    endpoint: http://127.0.0.1:{cap_port}/v19
    protocol_version: v1.9
  otlphttp/cur:
    endpoint: http://127.0.0.1:{cap_port}/cur
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [otlphttp/v19, otlphttp/cur]
"""


def peer(files):
    r = subprocess.run([PEER, *files], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"pg-v19peer exited {r.returncode}: {r.stderr[-800:]}")
    return [json.loads(ln) for ln in r.stdout.splitlines()]


started = time.time()
cap = Capture()
tmp = tempfile.mkdtemp(prefix="pg-v19peer-")
try:
    with Gateway(config(cap.port)) as gw:
        accepted = 0
        for rel in PUSHES:
            with open(os.path.join(FIXTURES, rel), "rb") as f:
                data = f.read()
            if data[:2] != b"\x1f\x8b":
                data = gzip.compress(data)
            status, _, _ = post(gw.port, "/v1/pprof", data,
                                {"Content-Type": "application/octet-stream",
                                 "Content-Encoding": "gzip"})
            accepted += status == 204
        res.check("every push accepted", accepted == len(PUSHES), accepted)
        deadline = time.time() + 15
        while time.time() < deadline and (len(cap.get("/v19" + PATH)) < accepted or
                                          len(cap.get("/cur" + PATH)) < accepted):
            time.sleep(0.1)
    v19, cur = cap.get("/v19" + PATH), cap.get("/cur" + PATH)
    res.check("both exporters sent every push", len(v19) == len(cur) == accepted,
              (len(v19), len(cur)))
    files19, filescur = [], []
    for name, bodies, files in (("v19", v19, files19), ("cur", cur, filescur)):
        for i, b in enumerate(bodies):
            files.append(os.path.join(tmp, f"{name}{i}.pb"))
            with open(files[-1], "wb") as f:
                f.write(b)
    got19 = peer(files19)
    errs = [r["error"] for r in got19 if r.get("error")]
    res.check("pdata v1.53.0 (Collector v0.147.0) reads every v1.9 body", not errs, errs[:2])
    seen = collections.Counter((s["stack"], tuple(s["values"] or ()),
                                tuple(s["attribute_indices"] or ()), s["link"])
                               for r in got19 for s in r["samples"])
    want = collections.Counter(meaning(s, "v1.11") for b in cur for s in samples(b))
    res.check("its samples are what the default bodies mean (values, attributes, links)",
              seen == want and sum(want.values()) > 0,
              (sum(seen.values()), sum(want.values()), list((want - seen).items())[:2]))
    kvs = [kv for r in got19 for s in r["samples"] for kv in s["attributes"]]
    res.check("sample attributes resolve to key=value through its dictionary",
              kvs and all("=" in kv and not kv.startswith("=") and "?" not in kv for kv in kvs),
              kvs[:5])
    print("     sample values as the peer read them (first 5):",
          [s["values"] for r in got19 for s in r["samples"]][:5])
    gotcur = peer(filescur)
    res.check("the same peer refuses the default (v1.10/v1.11) bodies",
              all(r.get("error") for r in gotcur), [r.get("error") for r in gotcur][:2])
    if gotcur and gotcur[0].get("error"):
        print(f"     its words: {gotcur[0]['error']}")
finally:
    cap.close()
print(f"     took {time.time() - started:.1f}s")
res.finish()
