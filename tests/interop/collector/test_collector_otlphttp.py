# SPDX-License-Identifier: Apache-2.0
"""Interop of pprofgate's otlphttp exporter with the real OpenTelemetry
Collector: pprofgate (pprof receiver -> otlphttp exporter) -> the Collector's
otlp receiver, HTTP side (/v1development/profiles) -> its file exporter
(JSON). Every fixture goes through with protobuf bodies and gzip; the SDK
pushes and a few Go profiles also with zstd and without compression, and as
OTLP/JSON with each compression (the large profile too, with gzip); what the Collector wrote must
be the pprof input sample for sample, with no warning or error in either log.
Over https with mTLS (the Collector's receiver asks for a client certificate)
the SDK pushes arrive the same; with an unknown CA nothing does, and the
failure is retried and logged as TLS. Then a fake destination answers 503 + Retry-After: 1 and 429 before 200: the
same body is sent three times on one kept-alive connection, the second try
no sooner than the Retry-After second, and counted sent once."""

import http.server
import os
import re
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collector_lib import (Collector, Gateway, body_pprof, fixture_bodies,  # noqa: E402
                           free_port, merged, read_json_lines, require_collector, wait_output)
from pg_harness import Results, post  # noqa: E402
import pprof_otlp  # noqa: E402

require_collector()
res = Results()
port = free_port()

COLLECTOR_CONFIG = f"""
receivers:
  otlp:
    protocols:
      http:
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


def gateway_config(endpoint_lines):
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
      - set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))
exporters:
  otlphttp:
{endpoint_lines}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 2s, max_elapsed_time: 30s}}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      processors: [transform]
      exporters: [otlphttp]
  telemetry:
    logs: {{level: info}}
"""


def run_fixtures(col, seen, label, fixtures, cfg_lines, scheme="http", at_port=None):
    with Gateway(gateway_config(cfg_lines)) as gw:
        for name, body, hdrs in fixtures:
            want = pprof_otlp.pprof_profiles(body_pprof(body, hdrs))
            n_want = sum(sum(p["samples"].values()) for p in want)
            status, _, rbody = post(gw.port, "/v1/pprof", body, hdrs, timeout=60)
            if not res.check(f"{label} {name}: pprofgate accepts it (204)", status == 204,
                             (status, rbody[:200])):
                continue
            lines = wait_output(col, seen, n_want, 60 if "large" in name else 20)
            seen += len(lines)
            got = merged(lines)[0]
            if n_want == 0:
                res.check(f"{label} {name}: no samples, nothing in the collector", not got,
                          len(got))
                continue
            order = pprof_otlp.otlp_order(len(want))
            diffs = [f"profile {j}: {d}" for j, k in enumerate(order[:len(got)])
                     for d in pprof_otlp.diff_profile(want[k], got[j])]
            res.check(f"{label} {name}: {len(want)} profiles, {n_want} sample records as sent",
                      len(got) == len(want) and not diffs,
                      (len(got), "; ".join(diffs)[:1200]))
        res.check(f"{label}: pprofgate logged no error", "level=error" not in gw.log(),
                  gw.log()[-1500:])
        res.check(f"{label}: pprofgate says where and how",
                  f"exporting to {scheme}://127.0.0.1:{at_port or port}/v1development/profiles"
                  in gw.log(),
                  gw.log()[-800:])
    return seen


with Collector(COLLECTOR_CONFIG) as col:
    fixtures = fixture_bodies(col.tmp)
    few = [f for f in fixtures if "push" in f[0]][:2] + \
          [f for f in fixtures if f[0].startswith("pprof/go/")][:2]
    res.check("fixtures found", len(fixtures) >= 15 and len(few) == 4, len(fixtures))
    seen = 0
    seen = run_fixtures(col, seen, "proto+gzip", fixtures,
                        f"    endpoint: http://127.0.0.1:{port}")
    for comp in ("zstd", "none"):
        seen = run_fixtures(col, seen, f"proto+{comp}", few,
                            f"    endpoint: http://127.0.0.1:{port}/\n    compression: {comp}")
    large = [f for f in fixtures if "large" in f[0]]
    for comp in ("gzip", "zstd", "none"):
        seen = run_fixtures(col, seen, f"json+{comp}", few + (large if comp == "gzip" else []),
                            f"    profiles_endpoint: http://127.0.0.1:{port}"
                            f"/v1development/profiles\n    encoding: json\n"
                            f"    compression: {comp}")
    time.sleep(0.3)
    res.check("collector logged no warning or error", not col.problems(),
              "\n".join(col.problems())[:1500])


# ---- https with mTLS: the Collector's receiver asks for a client certificate --

def make_certs(d):
    """A CA, a server certificate for 127.0.0.1, a client certificate, and a
    second, unrelated CA."""
    k = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    script = "\n".join([
        "set -e",
        f"openssl req -x509 {k} -keyout ca.key -out ca.pem -days 2 -subj /CN=pg-test-ca",
        f"openssl req -x509 {k} -keyout other.key -out other.pem -days 2 -subj /CN=other-ca",
        f"openssl req {k} -keyout srv.key -out srv.csr -subj /CN=localhost",
        "echo subjectAltName=DNS:localhost,IP:127.0.0.1 > srv.ext",
        "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
        "-days 2 -extfile srv.ext",
        f"openssl req {k} -keyout cli.key -out cli.csr -subj /CN=pprofgate",
        "echo extendedKeyUsage=clientAuth > cli.ext",
        "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem "
        "-days 2 -extfile cli.ext"])
    return subprocess.run(["bash", "-c", script], cwd=d, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


certs = tempfile.mkdtemp(prefix="pg-oh-tls-")
if res.check("tls: certificates made (openssl)", make_certs(certs)):
    tls_port = free_port()
    tls_collector = COLLECTOR_CONFIG.replace(
        f"endpoint: 127.0.0.1:{port}",
        f"endpoint: 127.0.0.1:{tls_port}\n"
        f"        tls: {{cert_file: {certs}/srv.pem, key_file: {certs}/srv.key, "
        f"client_ca_file: {certs}/ca.pem}}")
    with Collector(tls_collector) as col:
        fx = [f for f in fixture_bodies(col.tmp, with_large=False) if "push" in f[0]][:2]
        run_fixtures(col, 0, "https+mTLS", fx,
                     f"    endpoint: https://127.0.0.1:{tls_port}\n"
                     f"    tls: {{ca_file: {certs}/ca.pem, cert_file: {certs}/cli.pem, "
                     f"key_file: {certs}/cli.key}}", scheme="https", at_port=tls_port)
        # a server certificate from an unknown CA: nothing is sent, the
        # failure is retried and logged as TLS
        before = len(read_json_lines(col.path("out.json")))
        bad = gateway_config(f"    endpoint: https://127.0.0.1:{tls_port}\n"
                             f"    tls: {{ca_file: {certs}/other.pem, cert_file: {certs}/cli.pem, "
                             f"key_file: {certs}/cli.key}}")
        with Gateway(bad) as gw:
            name, body, hdrs = fx[0]
            status, _, _ = post(gw.port, "/v1/pprof", body, hdrs, timeout=30)
            time.sleep(2.0)
            res.check("https, unknown CA: accepted by pprofgate (204)", status == 204, status)
            res.check("https, unknown CA: nothing reaches the collector",
                      len(read_json_lines(col.path("out.json"))) == before)
            # One line when the outage begins (each attempt is at debug level).
            res.check("https, unknown CA: retried, logged as a TLS failure",
                      re.search(r"destination \w[\w ]* \(.*tls.*retrying", gw.log()) is not None,
                      gw.log()[-1200:])
    subprocess.run(["rm", "-rf", certs])


# ---- a throttling destination: 503 + Retry-After: 1, 429, then 200 ---------

class Throttle(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    answers = [(503, {"Retry-After": "1"}), (429, {}), (200, {})]
    seen = []  # (time, connection id, path, content-type, body)
    conns = set()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        Throttle.conns.add(self.client_address[1])
        Throttle.seen.append((time.time(), self.client_address[1], self.path,
                              self.headers.get("Content-Type"), body))
        code, hdrs = Throttle.answers[min(len(Throttle.seen), 3) - 1]
        out = b"" if code == 200 else b"\x08\x0e\x12\x04busy"  # google.rpc.Status
        self.send_response(code)
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Throttle)
threading.Thread(target=srv.serve_forever, daemon=True).start()
try:
    cfg = gateway_config(f"    endpoint: http://127.0.0.1:{srv.server_address[1]}\n"
                         f"    sending_queue: {{num_consumers: 1}}")
    cfg = cfg.replace("initial_interval: 100ms", "initial_interval: 50ms")
    with Gateway(cfg) as gw:
        name, body, hdrs = [f for f in fixture_bodies(gw.tmp, with_large=False)
                            if "push" in f[0]][0]
        status, _, _ = post(gw.port, "/v1/pprof", body, hdrs, timeout=30)
        deadline = time.time() + 15
        while time.time() < deadline and len(Throttle.seen) < 3:
            time.sleep(0.1)
        time.sleep(0.5)
        s = Throttle.seen
        res.check("throttled: accepted (204)", status == 204, status)
        res.check("throttled: three attempts (503, 429, 200), no more", len(s) == 3, len(s))
        if len(s) == 3:
            res.check("throttled: Retry-After: 1 honoured", s[1][0] - s[0][0] >= 0.95,
                      s[1][0] - s[0][0])
            res.check("throttled: the 429 without Retry-After retried on the backoff",
                      s[2][0] - s[1][0] < 0.9, s[2][0] - s[1][0])
            res.check("throttled: the same body each time", s[0][4] == s[1][4] == s[2][4])
            res.check("throttled: one kept-alive connection", len(Throttle.conns) == 1,
                      len(Throttle.conns))
            res.check("throttled: path and content type",
                      s[0][2] == "/v1development/profiles" and
                      s[0][3] == "application/x-protobuf", s[0][2:4])
        log = gw.log()
        # The outage's first failure is logged with its status, the recovery
        # once; the attempts in between are at debug level.
        res.check("throttled: the outage is logged with the status, and its end",
                  "HTTP 503" in log and "delivering again after" in log, log[-1200:])
        res.check("throttled: no error logged", "level=error" not in log, log[-1200:])
finally:
    srv.shutdown()

res.finish()
