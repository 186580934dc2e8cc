# SPDX-License-Identifier: Apache-2.0
"""health_check answers 200 with the collector's JSON while the pipelines run
and flips to 503 as soon as a SIGTERM starts the drain, while an OTLP exporter
is still trying to deliver to an unreachable collector."""
import http.client
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, SHARED, Gateway, Results, post  # noqa: E402

CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  otlp:
    endpoint: "127.0.0.1:1"
    tls: {insecure: true}
    shutdown_timeout: 4s
    retry_on_failure: {initial_interval: 1s}
extensions:
  health_check: {endpoint: "127.0.0.1:0"}
service:
  extensions: [health_check]
  pipelines:
    profiles: {receivers: [pprof], exporters: [otlp]}
"""


def health(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/")
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body
    except OSError:
        return None, b""


def main():
    res = Results()
    body = None
    for base in (os.path.join(FIXTURES, "sdk"), os.path.join(SHARED, "fixtures", "sdk")):
        p = os.path.join(base, "push0.pprof.gz")
        if os.path.exists(p):
            with open(p, "rb") as f:
                body = f.read()
            break
    res.check("fixture found", body is not None)
    with Gateway(CONFIG) as gw:
        m = gw.wait_log(r"serving health on [0-9.]+:(\d+)")
        res.check("health endpoint announced", m is not None, gw.log()[-1500:])
        port = int(m.group(1))
        st, b = health(port)
        res.check("running -> 200", st == 200, (st, b))
        try:
            doc = json.loads(b)
        except ValueError:
            doc = {}
        res.check("collector-shaped JSON", doc.get("status") == "Server available"
                  and "upSince" in doc and "uptime" in doc, b)
        post(gw.port, "/v1/pprof", body or b"", {"Content-Type": "application/octet-stream"})
        gw.proc.send_signal(signal.SIGTERM)
        seen_503, deadline = None, time.time() + 3
        while time.time() < deadline and gw.proc.poll() is None:
            st, b = health(port)
            if st == 503:
                seen_503 = b
                break
            time.sleep(0.05)
        res.check("draining -> 503", seen_503 is not None, gw.log()[-1500:])
        if seen_503 is not None:
            res.check("503 body says not available",
                      json.loads(seen_503).get("status") == "Server not available", seen_503)
        code = gw.stop(signal.SIGTERM, timeout=15)
        res.check("exits after the drain", code is not None, code)
    res.finish()


if __name__ == "__main__":
    main()
