# SPDX-License-Identifier: Apache-2.0
"""Differential test of the debug exporter on OTLP input (issue 23: "the
Collector's debug exporter and pprofgate's print the same text for the same
OTLP input"). Every pprof fixture is made into one OTLP request
(tests/tools/pg_pprof2otlp -z) and the same bytes go into the real
Collector's otlp receiver and into pprofgate's, over gRPC (@grpc/grpc-js,
identity and gzip), OTLP/HTTP protobuf and OTLP/HTTP JSON (the request's
OTLP/JSON form, written by the Node side of test_otlp_receiver.py). Both print with their debug
exporter, use_internal_logger: false (the Collector's raw text into a file),
at detailed and at normal; pprofgate's with pprofgate_annotations: false.
The two files must be the same byte for byte, summary lines included, but
for one documented difference (README.md, differences from the Collector):
the requests made from pprof carry no service.name, and pprofgate's
pipeline gives such a resource its unknown_service fallback, which the
Collector does not; the fallback's lines are taken out of pprofgate's text
(and counted) before the comparison.

Requests without samples are left out: the Collector's otlp receiver
answers them and hands nothing on, and so does pprofgate's, so neither
prints them (checked: the number of printed requests is the number sent
with samples)."""

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
from collector_lib import (Collector, Gateway, fixture_bodies, free_port,  # noqa: E402
                           require_collector)
from pg_harness import Results, post  # noqa: E402

import test_otlp_receiver as rx  # noqa: E402  (its Node gRPC client and paths)

require_collector()
res = Results()
VERBOSITIES = ("detailed", "normal")
TRANSPORTS = ("grpc", "grpc gzip", "http protobuf", "http json")


def debug_exporters(extra):
    """One debug exporter per verbosity, each into {tmp}/<verbosity>.out."""
    out = ""
    for v in VERBOSITIES:
        out += f"""  debug/{v}:
    verbosity: {v}
    use_internal_logger: false
{extra}    output_paths: ["{{tmp}}/{v}.out"]
"""
    return out


def collector_config(gport, hport):
    return f"""
receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "127.0.0.1:{gport}"}}
      http: {{endpoint: "127.0.0.1:{hport}"}}
exporters:
{debug_exporters("")}
service:
  telemetry:
    logs: {{level: info}}
    metrics: {{level: none}}
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [{", ".join("debug/" + v for v in VERBOSITIES)}]
"""


GATEWAY = f"""
receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "127.0.0.1:0"}}
      http: {{endpoint: "127.0.0.1:0"}}
exporters:
{debug_exporters("    pprofgate_annotations: false" + chr(10))}
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [{", ".join("debug/" + v for v in VERBOSITIES)}]
  telemetry:
    logs: {{level: info}}
"""


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def blocks(text):
    """The output cut at each request's summary line."""
    return [b for b in re.split(r"(?m)^(?=Profiles\t\{)", text) if b]


def wait_blocks(paths, n, timeout=20):
    """Until every file holds n summary lines and its last block has ended
    (the writer prints a request in one go, then a blank line)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        texts = [read_text(p) for p in paths]
        if all(len(blocks(t)) >= n for t in texts):
            time.sleep(0.3)
            return
        time.sleep(0.05)


FALLBACK = (re.compile(r"(?m)^Resource attributes:\n     -> service\.name: "
                       r"Str\(unknown_service(:[^)]*)?\)\n"),          # detailed
            re.compile(r"(?m)(?<=\]) service\.name=unknown_service(:\S*)?$"))  # normal


def without_fallback(text):
    """pprofgate's text without the service.name fallback, and how many
    resources had it."""
    n = 0
    for rx_ in FALLBACK:
        text, k = rx_.subn("", text)
        n += k
    return text, n


def first_difference(c_blocks, g_blocks, names):
    i = next((k for k, (a, b) in enumerate(zip(c_blocks, g_blocks)) if a != b), None)
    if i is None:
        return None
    c_l, g_l = c_blocks[i].splitlines(), g_blocks[i].splitlines()
    ln = next((k for k, (a, b) in enumerate(zip(c_l, g_l)) if a != b), min(len(c_l), len(g_l)))
    return (f"request {i} ({names[i] if i < len(names) else '?'}), line {ln}: "
            f"collector {c_l[ln:ln + 3]!r} pprofgate {g_l[ln:ln + 3]!r}")


def main():
    tmp = tempfile.mkdtemp(prefix="pg-otlp-debug-diff-")
    inputs = []
    fixtures = fixture_bodies(tmp, with_large=False)
    for i, (name, body, _) in enumerate(fixtures):
        src, out = os.path.join(tmp, f"in{i}.pprof"), os.path.join(tmp, f"req{i}.pb")
        with open(src, "wb") as f:
            f.write(body)
        r = subprocess.run([rx.P2O, "-z", src, "-o", out], capture_output=True, timeout=60)
        if r.returncode == 0 and os.path.getsize(out) > 0:
            inputs.append((name, out))
    res.check(f"OTLP made from every pprof fixture ({len(fixtures)})",
              len(inputs) == len(fixtures) > 10, [n for n, _ in inputs])
    rx.node(tmp, "convert", *[f for _, f in inputs])  # each f + ".otlp.json"

    gport, hport = free_port(), free_port()
    with Collector(collector_config(gport, hport)) as col, \
            Gateway(GATEWAY, n_listeners=2) as gw:
        pg_g, pg_h = rx.ports(gw)
        printed = 0
        for transport in TRANSPORTS:
            for name, f in inputs:
                if transport.startswith("grpc"):
                    comp = "gzip" if transport.endswith("gzip") else "identity"
                    out = [rx.node(tmp, "send", str(p), comp, f) for p in (gport, pg_g)]
                    ok = all('"code":0' in o for o in out)
                    detail = out
                else:
                    json_ = transport.endswith("json")
                    with open(f + ".otlp.json" if json_ else f, "rb") as fh:
                        data = fh.read()
                    ctype = "application/json" if json_ else "application/x-protobuf"
                    sts = [post(p, rx.PATH, data, {"Content-Type": ctype})[0]
                           for p in (hport, pg_h)]
                    ok = sts == [200, 200]
                    detail = sts
                res.check(f"{transport} {name}: both accept it", ok, detail)
                # Wait for this request in both (or for nothing, when it
                # holds no sample: neither prints those).
                paths = [col.path("detailed.out"), gw.path("detailed.out")]
                deadline = time.time() + 5
                while time.time() < deadline:
                    counts = [len(blocks(read_text(p))) for p in paths]
                    if min(counts) > printed:
                        printed += 1
                        break
                    time.sleep(0.05)
                else:
                    res.check(f"{transport} {name}: printed by neither (no sample)",
                              counts[0] == counts[1] == printed, counts)
        wait_blocks([col.path(f"{v}.out") for v in VERBOSITIES] +
                    [gw.path(f"{v}.out") for v in VERBOSITIES], printed)
        for v in VERBOSITIES:
            c_text, g_text = read_text(col.path(f"{v}.out")), read_text(gw.path(f"{v}.out"))
            g_text, fell_back = without_fallback(g_text)
            print(f"     {v}: {fell_back} resources without service.name got pprofgate's "
                  "documented fallback (taken out)")
            res.check(f"debug {v}: the Collector prints no unknown_service of its own",
                      "unknown_service" not in c_text)
            c_b, g_b = blocks(c_text), blocks(g_text)
            diff = first_difference(c_b, g_b, [n for n, _ in inputs] * len(TRANSPORTS))
            res.check(f"debug {v}, use_internal_logger: false: pprofgate's text = the "
                      f"Collector's, byte for byte, {len(c_b)} requests "
                      f"({c_text.count(chr(10))} lines)",
                      diff is None and len(c_b) == len(g_b) == printed > 20,
                      diff or (len(c_b), len(g_b), printed))
            if diff is not None:
                for who, text in (("collector", c_text), ("pprofgate", g_text)):
                    with open(os.path.join(tmp, f"{who}.{v}.out"), "w") as fh:
                        fh.write(text)
                print(f"     compare: {tmp}/collector.{v}.out {tmp}/pprofgate.{v}.out")
        problems = col.problems()
        res.check("the Collector logged no warning or error", not problems,
                  "\n".join(problems)[:800])
        res.check("pprofgate logged no warning or error",
                  "level=warn" not in gw.log() and "level=error" not in gw.log(),
                  gw.log()[-1500:])
        res.check("pprofgate: clean exit", gw.stop() == 0, gw.log()[-800:])
    res.finish()


if __name__ == "__main__":
    main()
