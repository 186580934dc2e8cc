# SPDX-License-Identifier: Apache-2.0
"""The exporters' protocol_version through the real binary. Gateway A takes
pprof pushes and fans each batch out to four exporters at once: debug, an
otlp (gRPC) exporter with protocol_version v1.9 to gateway B, and two
otlphttp exporters to a capture server here, one v1.9 and one default. The
capture server's bodies are read field by field: the v1.9 ones carry Sample
values in field 2 (packed), attribute_indices in 3 and link_index in 4 (the
v1.9 numbering, which a Collector v0.140-v0.147 reads), the default ones
values in 4, attributes in 2, link in 3; both hold the same samples and the
same byte counts. Gateway B's otlp receiver (convert_v1_9) takes the gRPC
side: its debug exporter prints the samples A's prints. Last, `validate`
refuses an unknown protocol_version naming the accepted ones."""

import collections
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from otlp_capture import Capture, meaning, samples  # noqa: E402
from pg_harness import BIN, FIXTURES, Gateway, Results, post  # noqa: E402

res = Results()
PATH = "/v1development/profiles"


def sample_lines(debug_text):
    """Counter of each Sample's block of the debug exporter's detailed output."""
    out = collections.Counter()
    lines = debug_text.splitlines()
    for i, ln in enumerate(lines):
        if re.match(r"^\s+Sample #\d+$", ln):
            body = []
            j = i + 1
            while j < len(lines) and lines[j].startswith(ln[:len(ln) - len(ln.lstrip())] + "    "):
                body.append(lines[j].strip())
                j += 1
            out[tuple(body)] += 1
    return out


# ---- the gateways ---------------------------------------------------------------------

B_CONFIG = """
receivers:
  otlp:
    convert_v1_9: true
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
exporters:
  debug:
    verbosity: detailed
    output_paths: ["{debug}"]
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug]
"""


def a_config(b_grpc, cap_port):
    return f"""
receivers:
  pprof:
    server:
      endpoint: 127.0.0.1:0
exporters:
  debug:
    verbosity: detailed
    output_paths: ["{{debug}}"]
  otlp/v19:
    endpoint: 127.0.0.1:{b_grpc}
    tls: {{insecure: true}}
    protocol_version: v1.9
  otlphttp/v19:
    endpoint: http://127.0.0.1:{cap_port}/v19
    compression: gzip
    protocol_version: v1.9
  otlphttp/cur:
    endpoint: http://127.0.0.1:{cap_port}/cur
    compression: none
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug, otlp/v19, otlphttp/v19, otlphttp/cur]
"""


PUSHES = ["pprof/edge/labels.pprof", "pprof/edge/links.pprof", "pprof/golden/appendix_b.pprof",
          "pprof/go/heap.pb.gz"]

started = time.time()
cap = Capture()
try:
    with Gateway(B_CONFIG) as gb:
        b_grpc = int(re.search(r"grpc listening on [0-9.]+:(\d+)", gb.log()).group(1))
        with Gateway(a_config(b_grpc, cap.port)) as ga:
            res.check("A names the layout it writes", "OTLP Profiles v1.9 layout" in ga.log(),
                      ga.log()[-800:])
            accepted = 0
            for rel in PUSHES:
                with open(os.path.join(FIXTURES, rel), "rb") as f:
                    data = f.read()
                if data[:2] != b"\x1f\x8b":
                    data = gzip.compress(data)
                status, _, body = post(ga.port, "/v1/pprof", data,
                                       {"Content-Type": "application/octet-stream",
                                        "Content-Encoding": "gzip"})
                accepted += status == 204
                if status != 204:
                    print(f"     {rel}: {status} {body[:200]!r}")
            res.check("every push accepted", accepted == len(PUSHES), accepted)
            deadline = time.time() + 15
            while time.time() < deadline:
                v19, cur = cap.get("/v19" + PATH), cap.get("/cur" + PATH)
                if (len(v19) >= accepted and len(cur) >= accepted and
                        gb.debug().count("ResourceProfiles #") >= accepted and
                        ga.debug().count("ResourceProfiles #") >= accepted):
                    break
                time.sleep(0.1)
            v19, cur = cap.get("/v19" + PATH), cap.get("/cur" + PATH)
            res.check("both otlphttp exporters sent every push",
                      len(v19) == accepted and len(cur) == accepted, (len(v19), len(cur)))
            res.check("v1.9 bodies are as long as the current ones (renumbering keeps lengths)",
                      sorted(map(len, v19)) == sorted(map(len, cur)),
                      (sorted(map(len, v19)), sorted(map(len, cur))))
            s19 = [s for b in v19 for s in samples(b)]
            scur = [s for b in cur for s in samples(b)]
            try:
                m19 = collections.Counter(meaning(s, "v1.9") for s in s19)
                mcur = collections.Counter(meaning(s, "v1.11") for s in scur)
                wire_ok = True
            except ValueError as e:
                m19, mcur, wire_ok = collections.Counter(), collections.Counter(), str(e)
            res.check("every Sample reads with its layout's field numbers and wire types",
                      wire_ok is True, wire_ok)
            res.check("the same samples in both layouts", m19 == mcur and sum(m19.values()) > 0,
                      (sum(m19.values()), sum(mcur.values())))
            tags19 = {(f, wt) for s in s19 for f, wt, _ in s}
            tagscur = {(f, wt) for s in scur for f, wt, _ in s}
            res.check("v1.9 wire: values in 2, attribute_indices in 3, link_index in 4",
                      {(2, 2), (3, 2), (4, 0)} <= tags19 and (4, 2) not in tags19, tags19)
            res.check("current wire: attribute_indices in 2, link_index in 3, values in 4",
                      {(2, 2), (3, 0), (4, 2)} <= tagscur and (3, 2) not in tagscur, tagscur)
            # B received v1.9 over gRPC and converted it: the same samples as A's debug.
            a_lines, b_lines = sample_lines(ga.debug()), sample_lines(gb.debug())
            res.check("gRPC v1.9 -> receiver (convert_v1_9): B prints A's samples",
                      a_lines == b_lines and sum(a_lines.values()) > 0,
                      (sum(a_lines.values()), sum(b_lines.values()),
                       list((a_lines - b_lines).items())[:2], gb.log()[-600:]))
            res.check("nothing refused or dropped",
                      "refused" not in gb.log() and "dropped" not in ga.log(),
                      (gb.log()[-600:], ga.log()[-600:]))
finally:
    cap.close()

# validate: an unknown version is refused naming the accepted ones.
d = tempfile.mkdtemp(prefix="pg-pv-")
cfg = os.path.join(d, "bad.yaml")
with open(cfg, "w") as f:
    f.write("""receivers:
  pprof: {}
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:4318
    protocol_version: "1.9"
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [otlphttp]
""")
r = subprocess.run([BIN, "validate", "--config", cfg], capture_output=True, text=True, timeout=30)
res.check("validate refuses protocol_version \"1.9\" listing the accepted ones",
          r.returncode == 1 and 'is not one of: v1.11, v1.10, v1.9 (did you mean "v1.9"?)'
          in r.stderr, (r.returncode, r.stderr[-400:]))
print(f"     took {time.time() - started:.1f}s")
res.finish()
