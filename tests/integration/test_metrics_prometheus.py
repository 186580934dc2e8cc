# SPDX-License-Identifier: Apache-2.0
"""service.telemetry.metrics.address serves /metrics: the text must parse as
Prometheus exposition format 0.0.4 (HELP/TYPE before samples, valid names,
labels and values), carry the collector's names, and its counters must move
as requests are sent."""
import glob
import http.client
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, SHARED, Gateway, Results, post  # noqa: E402

CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
service:
  telemetry:
    metrics: {address: "127.0.0.1:0"}
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
SAMPLE_RE = re.compile(rf"^({NAME})(\{{(?:{LABEL})(?:,{LABEL})*\}})? (\S+)( -?\d+)?$")


def parse(text):
    """Returns ({(name, labels): value}, errors). Strict enough to catch format slips."""
    series, errors, typed = {}, [], {}
    for i, line in enumerate(text.splitlines(), 1):
        if line == "":
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                errors.append(f"{i}: bad comment {line!r}")
            elif parts[1] == "TYPE":
                if parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    errors.append(f"{i}: bad type {line!r}")
                typed[parts[2]] = parts[3]
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            errors.append(f"{i}: bad sample {line!r}")
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in typed and base not in typed:
            errors.append(f"{i}: sample before its TYPE {name}")
        try:
            float(value)
        except ValueError:
            errors.append(f"{i}: bad value {line!r}")
            continue
        series[(name, labels)] = float(value)
    return series, errors


def scrape(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read().decode()
    ctype = r.getheader("Content-Type")
    c.close()
    return r.status, ctype, body


def total(series, name):
    return sum(v for (n, _), v in series.items() if n == name)


def main():
    res = Results()
    bodies = sorted(glob.glob(os.path.join(FIXTURES, "sdk", "*.pprof.gz"))) or \
        sorted(glob.glob(os.path.join(SHARED, "fixtures", "sdk", "*.pprof.gz")))
    res.check("fixtures found", len(bodies) > 0)
    with Gateway(CONFIG) as gw:
        m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
        res.check("metrics endpoint announced", m is not None, gw.log()[-1500:])
        port = int(m.group(1))
        st, ctype, text = scrape(port)
        res.check("GET /metrics 200", st == 200, st)
        res.check("Prometheus text content type", ctype and ctype.startswith("text/plain; version=0.0.4"),
                  ctype)
        s0, errs = parse(text)
        res.check("parses as Prometheus text", not errs, errs[:5])
        for name in ("otelcol_process_memory_rss", "otelcol_process_uptime",
                     "pprofgate_heap_sampler_samples", "pprofgate_heap_sampler_dropped_samples",
                     "pprofgate_heap_sampler_stacks", "pprofgate_heap_sampler_table_bytes"):
            res.check(f"has {name}", any(n == name for n, _ in s0), name)
        res.check("RSS is plausible", 1e6 < total(s0, "otelcol_process_memory_rss") < 4e9)
        ok = 0
        for b in bodies:
            with open(b, "rb") as f:
                st, _, _ = post(gw.port, "/v1/pprof", f.read(),
                                {"Content-Type": "application/octet-stream"})
            ok += st == 204
        res.check("pushes accepted", ok == len(bodies))
        st, _, _ = post(gw.port, "/v1/pprof", b"not a profile", {})
        res.check("bad push refused", st == 400, st)
        gw.wait_debug(r".", timeout=3)
        st, _, text = scrape(port)
        s1, errs = parse(text)
        res.check("still parses after traffic", not errs, errs[:5])
        acc0 = total(s0, "otelcol_receiver_accepted_profile_samples")
        acc1 = total(s1, "otelcol_receiver_accepted_profile_samples")
        res.check("accepted profile samples moved", acc1 > acc0, (acc0, acc1))
        req1 = total(s1, "pprofgate_admin_http_requests")
        res.check("admin request counter counts the scrape", req1 >= 1, req1)
        st, _, text = scrape(port)
        s2, _ = parse(text)
        res.check("admin request counter moves per scrape",
                  total(s2, "pprofgate_admin_http_requests") == req1 + 1,
                  (req1, total(s2, "pprofgate_admin_http_requests")))
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/other")
        r = c.getresponse()
        r.read()
        res.check("other paths 404", r.status == 404, r.status)
        c.close()
    # The collector's current form (address is deprecated there): one pull reader.
    readers = CONFIG.replace('metrics: {address: "127.0.0.1:0"}',
                             "metrics:\n      readers:\n        - pull: {exporter: {prometheus: "
                             "{host: 127.0.0.1, port: 0, without_units: true}}}")
    with Gateway(readers) as gw:
        m = gw.wait_log(r"serving /metrics on 127\.0\.0\.1:(\d+)")
        res.check("readers: pull prometheus serves /metrics", m is not None, gw.log()[-800:])
        if m:
            st, _, text = scrape(int(m.group(1)))
            res.check("readers: GET /metrics 200 and parses", st == 200 and not parse(text)[1], st)
    res.finish()


if __name__ == "__main__":
    main()
