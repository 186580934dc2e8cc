#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pull mode cost: 1000 static targets on loopback (one small server hands
out a real Go heap profile; targets differ by a query parameter) scraped
every 10 s, against the same profile pushed to /v1/pprof at the same rate,
in the same run. Prints pprofgate's CPU per profile for both and their
ratio (goal <= 1.2), the RSS samples over the scrape run (flat = no growth)
and the skipped ticks (healthy targets: 0). Figures only, no assertion.
Env: TARGETS (1000), INTERVAL (10), DURATION (60 s measured after one
interval of warm-up), PROFILE (a .pb.gz), PPROFGATE_BIN."""
import http.client
import http.server
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BIN = os.environ.get("PPROFGATE_BIN", os.path.join(ROOT, "build", "pprofgate"))
TARGETS = int(os.environ.get("TARGETS", "1000"))
INTERVAL = int(os.environ.get("INTERVAL", "10"))
DURATION = int(os.environ.get("DURATION", "60"))
PROFILE = os.environ.get("PROFILE", os.path.join(ROOT, "tests", "fixtures", "pprof", "go",
                                                 "heap.pb.gz"))
BODY = open(PROFILE, "rb").read()
TICK = os.sysconf("SC_CLK_TCK")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        try:
            self.wfile.write(BODY)
        except OSError:
            pass  # the gateway gave up (timeout) or stopped: counted on its side

    def log_message(self, *a):
        pass


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def rss_kb(pid):
    m = re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{pid}/status").read())
    return int(m.group(1)) if m else 0


def start(cfg_text, tmp, name):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(cfg_text)
    log = open(os.path.join(tmp, name + ".log"), "w+")
    p = subprocess.Popen([BIN, "--config", path], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        log.seek(0)
        text = log.read()
        m = re.search(r"serving /metrics on [0-9.]+:(\d+)", text)
        if m:
            lm = re.search(r"listening on [0-9.]+:(\d+)", text)
            return p, int(m.group(1)), int(lm.group(1)) if lm else None
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("gateway did not start")


def metric_sum(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
               if ln.startswith(name + "{") or ln.startswith(name + " "))


def main():
    tmp = tempfile.mkdtemp(prefix="pg-bench-scrape-")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    groups = "\n".join(f'            - {{targets: ["127.0.0.1:{port}"], labels: {{__param_id: "{i}"}}}}'
                       for i in range(TARGETS))
    common = """exporters:
  debug: {verbosity: basic, output_paths: [/dev/null]}
service:
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
  telemetry:
    metrics: {address: "127.0.0.1:0"}
"""
    scrape_cfg = f"""receivers:
  pprof:
    scrape:
      scrape_configs:
        - job_name: bench
          scrape_interval: {INTERVAL}s
          profiling_config:
            pprof_config:
              memory: {{path: /debug/pprof/heap}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
          static_configs:
{groups}
""" + common
    push_cfg = """receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
""" + common

    # Pull.
    p, mport, _ = start(scrape_cfg, tmp, "scrape")
    time.sleep(INTERVAL + 1)
    c0, n0 = cpu_seconds(p.pid), metric_sum(mport, "pprofgate_scrape_requests_total")
    rss = []
    t_end = time.time() + DURATION
    while time.time() < t_end:
        rss.append(rss_kb(p.pid))
        time.sleep(min(10, max(0.1, t_end - time.time())))
    c1, n1 = cpu_seconds(p.pid), metric_sum(mport, "pprofgate_scrape_requests_total")
    skipped = metric_sum(mport, "pprofgate_scrape_skipped_ticks_total")
    fails = metric_sum(mport, "pprofgate_scrape_failures_total")
    p.terminate()
    p.wait()
    scrapes = n1 - n0
    pull = (c1 - c0) / scrapes if scrapes else float("nan")

    # Push: the same number of profiles over the same time, one keep-alive client.
    p, mport, hport = start(push_cfg, tmp, "push")
    n = int(scrapes) or TARGETS
    conn = http.client.HTTPConnection("127.0.0.1", hport, timeout=10)
    gap = DURATION / n
    c0 = cpu_seconds(p.pid)
    t0 = time.time()
    ok = 0
    for i in range(n):
        conn.request("POST", "/v1/pprof", body=BODY, headers={"Content-Type": "application/octet-stream"})
        r = conn.getresponse()
        r.read()
        ok += r.status == 204
        delay = t0 + (i + 1) * gap - time.time()
        if delay > 0:
            time.sleep(delay)
    c1 = cpu_seconds(p.pid)
    p.terminate()
    p.wait()
    push = (c1 - c0) / ok if ok else float("nan")

    print(f"scrape: {TARGETS} targets every {INTERVAL}s, {int(scrapes)} scrapes in {DURATION}s, "
          f"{int(fails)} failures, {int(skipped)} skipped ticks")
    print(f"cpu per profile: scrape {pull * 1e3:.3f} ms, push {push * 1e3:.3f} ms "
          f"({ok} pushes) -> ratio {pull / push:.2f} (goal <= 1.2)")
    print("scrape RSS kB every 10 s: " + " ".join(str(x) for x in rss)
          + (f" (first->last {rss[-1] - rss[0]:+d} kB)" if rss else ""))
    srv.shutdown()


if __name__ == "__main__":
    sys.exit(main())
