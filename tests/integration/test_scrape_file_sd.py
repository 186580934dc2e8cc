# SPDX-License-Identifier: Apache-2.0
"""file_sd_configs end to end: a loopback server hands out a real Go heap
profile; a JSON target file adds a target (its labels reach the exporter as
resource attributes; the pipeline's processors apply), an atomic rename changes its labels, a malformed file
keeps the previous targets, a deleted file removes them; churning targets
leave /metrics with their series. Also an https target
(tls_config.ca_file, certificate made by openssl) that requires the bearer
token from authorization.credentials_file. Redirects: a path and an absolute
URL are followed, a loop stops after 10, follow_redirects: false refuses."""
import http.server
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, Gateway, Results  # noqa: E402

HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()

CONFIG = """
receivers:
  pprof:
    scrape:
      scrape_configs:
        - job_name: files
          scrape_interval: 1s
          file_sd_configs: [{files: ["{tmp}/sd/*.json"]}]
          profiling_config:
            pprof_config:
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: tls
          scrape_interval: 1s
          scheme: https
          tls_config: {ca_file: "{tmp}/tls.crt"}
          authorization: {credentials_file: "{tmp}/token"}
          static_configs: [{targets: ["127.0.0.1:TLSPORT"], labels: {service.name: secure}}]
          profiling_config:
            pprof_config:
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: untrusted
          scrape_interval: 1s
          scheme: https
          static_configs: [{targets: ["127.0.0.1:TLSPORT"]}]
          profiling_config:
            pprof_config:
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: redirect_rel
          scrape_interval: 1s
          static_configs: [{targets: ["127.0.0.1:PLAINPORT"], labels: {service.name: redirected-rel}}]
          profiling_config:
            pprof_config:
              memory: {path: /moved/debug/pprof/allocs}
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: redirect_abs
          scrape_interval: 1s
          static_configs: [{targets: ["127.0.0.1:PLAINPORT"], labels: {service.name: redirected-abs}}]
          profiling_config:
            pprof_config:
              memory: {path: /abs/debug/pprof/allocs}
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: redirect_loop
          scrape_interval: 1s
          static_configs: [{targets: ["127.0.0.1:PLAINPORT"]}]
          profiling_config:
            pprof_config:
              memory: {path: /loop}
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
        - job_name: no_redirect
          scrape_interval: 1s
          follow_redirects: false
          static_configs: [{targets: ["127.0.0.1:PLAINPORT"]}]
          profiling_config:
            pprof_config:
              memory: {path: /moved/debug/pprof/allocs}
              block: {enabled: false}
              goroutine: {enabled: false}
              mutex: {enabled: false}
              process_cpu: {enabled: false}
processors:
  resource:
    attributes:
      - {key: deployment.environment.name, value: bench, action: upsert}
exporters:
  debug: {verbosity: detailed, output_paths: ["{debug}"]}
service:
  pipelines:
    profiles: {receivers: [pprof], processors: [resource], exporters: [debug]}
  telemetry:
    metrics: {address: "127.0.0.1:0"}
"""


class Handler(http.server.BaseHTTPRequestHandler):
    token = None  # when set, requests need "Authorization: Bearer <token>"

    def do_GET(self):
        if self.token and self.headers.get("Authorization") != "Bearer " + self.token:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # Redirects: a path, an absolute URL, and a loop.
        moved = {"/moved/": self.path[len("/moved"):],
                 "/abs/": "http://%s:%d%s" % (self.server.server_address[0],
                                               self.server.server_address[1], self.path[len("/abs"):]),
                 "/loop": "/loop"}
        for prefix, loc in moved.items():
            if self.path.startswith(prefix):
                self.send_response(302)
                self.send_header("Location", loc)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-gzip")  # not octet-stream: still accepted
        self.send_header("Content-Length", str(len(HEAP)))
        self.end_headers()
        self.wfile.write(HEAP)

    def log_message(self, *a):
        pass


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def get_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def targets(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/targets", timeout=5) as r:
        return json.loads(r.read())["activeTargets"]


def wait(pred, timeout=8):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def main():
    res = Results()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    tmp_certs = __import__("tempfile").mkdtemp(prefix="pg-tls-")
    crt, key = os.path.join(tmp_certs, "tls.crt"), os.path.join(tmp_certs, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "1", "-subj", "/CN=pprof-target",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)

    class TLSHandler(Handler):
        token = "s3cret"
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TLSHandler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    threading.Thread(target=tls.serve_forever, daemon=True).start()
    try:
        gw = Gateway(CONFIG.replace("TLSPORT", str(tls.server_address[1])).replace("PLAINPORT", str(port)),
                     ready_pattern=r"serving /metrics on [0-9.]+:\d+")
        with open(gw.path("tls.crt"), "w") as f:
            f.write(open(crt).read())
        with open(gw.path("token"), "w") as f:
            f.write("s3cret\n")
        os.makedirs(gw.path("sd"))
        tf = gw.path("sd/t.json")
        write_atomic(tf, json.dumps([{"targets": [f"127.0.0.1:{port}"], "labels": {"team": "one"}}]))
        with gw:
            m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
            mport = int(m.group(1))
            res.check("file target scraped; its labels are resource attributes",
                      wait(lambda: "team: Str(one)" in open(gw.debug_path).read()), gw.log()[-1500:])
            res.check("https target with tls_config.ca_file and authorization.credentials_file",
                      wait(lambda: "service.name: Str(secure)" in open(gw.debug_path).read()),
                      gw.log()[-1500:])
            res.check("a certificate the system roots do not trust is a tls failure",
                      wait(lambda: 'job="untrusted"' in get_metrics(mport)
                           and re.search(r'job="untrusted".*reason="tls"', get_metrics(mport))),
                      [ln for ln in get_metrics(mport).splitlines() if "untrusted" in ln][:6])
            res.check("a redirect to a path is followed (follow_redirects defaults to true)",
                      wait(lambda: "service.name: Str(redirected-rel)" in open(gw.debug_path).read()))
            res.check("a redirect to an absolute URL of the same scheme is followed",
                      wait(lambda: "service.name: Str(redirected-abs)" in open(gw.debug_path).read()))
            res.check("a redirect loop stops after 10 hops, counted as http_other",
                      wait(lambda: any("10 redirects" in x["lastError"] for x in targets(mport)
                                       if x["job"] == "redirect_loop")
                           and re.search(r'job="redirect_loop".*reason="http_other"', get_metrics(mport))),
                      [x for x in targets(mport) if x["job"] == "redirect_loop"])
            res.check("follow_redirects: false makes a 3xx a failure that names the Location",
                      wait(lambda: any("follow_redirects: false" in x["lastError"] for x in targets(mport)
                                       if x["job"] == "no_redirect")),
                      [x for x in targets(mport) if x["job"] == "no_redirect"])
            res.check("scraped profiles pass the pipeline's processors",
                      "deployment.environment.name: Str(bench)" in open(gw.debug_path).read())
            res.check("__meta_filepath is not emitted",
                      "__meta_filepath" not in open(gw.debug_path).read())
            write_atomic(tf, json.dumps([{"targets": [f"127.0.0.1:{port}"], "labels": {"team": "two"}}]))
            res.check("atomic rename re-read: new labels exported",
                      wait(lambda: "team: Str(two)" in open(gw.debug_path).read()))
            t = [x for x in targets(mport) if x["job"] == "files"]
            res.check("one target, with the new labels", len(t) == 1 and t[0]["labels"].get("team") == "two", t)
            write_atomic(tf, "[{\"targets\": [")
            res.check("malformed file logged", wait(lambda: "keeping its previous targets" in gw.log()))
            t = [x for x in targets(mport) if x["job"] == "files"]
            res.check("malformed file keeps the previous target", len(t) == 1, t)
            # Churn: a live target plus one short-lived target per rewrite
            # (nothing listens on 127.0.0.N, so each gets failure series too).
            live = f"127.0.0.1:{port}"
            churn = [f"127.0.0.{i}:{port}" for i in range(2, 6)]
            for c in churn:
                write_atomic(tf, json.dumps([{"targets": [live, c], "labels": {"team": "two"}}]))
                res.check(f"churn target {c} scraped and failing (connect)",
                          wait(lambda: re.search(r'job="files",instance="%s".*reason="connect"'
                                                 % re.escape(c), get_metrics(mport))))

            def files_instances():
                return {m for ln in get_metrics(mport).splitlines() if ln.startswith("pprofgate_scrape_")
                        for m in re.findall(r'job="files",instance="([^"]+)"', ln)}
            res.check("removed targets' series leave /metrics; the live ones stay",
                      files_instances() == {live, churn[-1]}, files_instances())
            res.check("the live target's counters survive the rewrites",
                      re.search(r'pprofgate_scrape_requests_total\{[^}]*instance="%s"[^}]*\} ([2-9]|\d\d)'
                                % re.escape(live), get_metrics(mport)))
            os.remove(tf)
            res.check("deleted file removes its targets",
                      wait(lambda: [x for x in targets(mport) if x["job"] == "files"] == []))
            res.check("and their series", files_instances() == set(), files_instances())
            res.check("clean exit", gw.stop() == 0, gw.log()[-1000:])
    finally:
        srv.shutdown()
        tls.shutdown()
    res.finish()


if __name__ == "__main__":
    main()
