# SPDX-License-Identifier: Apache-2.0
"""Scrape work stays off the push path (issue 25 items 1, 2 and the scrape
lane of item 2). Ordering checks, no timed bounds:

- churn: a 20 000-target file_sd rewrite that changes 10 addresses relabels
  10, not 20 000 (pprofgate_scrape_sd_builds_total), and the targets end up
  exactly the new set.
- /metrics and /targets: with 20 000 targets (~40 MB of text, ~8 MB of
  JSON to render) and one event loop, a push sent while either renders is
  answered before that answer's head arrives.
- scrape lane: a target serves a 23 KB gzip body that inflates to 1e6
  samples (~1-2 s of CPU to translate); a push sent right after the body
  left the target reaches the pipeline before the scraped profile does
  (the debug exporter prints batches in consume order)."""
import gzip
import http.server
import os
import re
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402
from pg_pprof import field, varint  # noqa: E402
import test_scale_targets as scale  # noqa: E402

HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()
N = 20000
ONE_LOOP = '    server: {endpoint: "127.0.0.1:0"}\n'


def get(port, path, timeout=60):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


def builds(mport):
    m = re.search(r'^pprofgate_scrape_sd_builds_total\{[^}]*job="cmdb"\} (\d+)',
                  get(mport, "/metrics"), re.M)
    return int(m.group(1)) if m else None


def write(path, ports):
    import json
    groups = [{"targets": [f"127.0.0.1:{p}" for p in ports], "labels": {"env": "scale"}}]
    with open(path + ".tmp", "w") as f:
        json.dump(groups, f)
    os.rename(path + ".tmp", path)


def churn_and_metrics(res):
    cfg = scale.FILE_CONFIG.replace(ONE_LOOP, ONE_LOOP[:-2] + ', loops: 1}\n')
    gw = Gateway(cfg, ready_timeout=30)
    os.makedirs(gw.path("sd"))
    ports = list(range(10000, 10000 + N))
    write(gw.path("sd/targets.json"), ports)
    gw.start()
    with gw:
        mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)", 10).group(1))
        loaded = scale.wait(lambda: gw.wait_log(rf"{N} targets added", 0) is not None, 120)
        res.check(f"churn: {N} targets loaded", loaded, gw.log()[-500:])
        before = builds(mport)
        res.check("churn: every address was built once at load", before == N, before)
        new = ports[10:] + list(range(40000, 40010))
        write(gw.path("sd/targets.json"), new)
        done = scale.wait(lambda: gw.wait_log(r"10 targets added, 10 removed", 0) is not None, 60)
        after = builds(mport)
        res.check("churn: a rewrite changing 10 of 20 000 addresses relabels 10",
                  done and after is not None and before is not None and after - before == 10,
                  (done, before, after))
        text = get(mport, "/metrics")
        inst = set(re.findall(r'^pprofgate_scrape_target_up\{[^}]*instance="127\.0\.0\.1:(\d+)"',
                              text, re.M))
        res.check("churn: the targets are exactly the new set",
                  inst == {str(p) for p in new}, (len(inst), sorted(inst ^ {str(p) for p in new})[:5]))

        # /metrics renders off the loop: a push sent meanwhile is answered first.
        order, lock = [], threading.Lock()

        def scrape_metrics():
            # urlopen returns once the answer's head arrived: the render is over
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=60) as r:
                with lock:
                    order.append("metrics")
                r.read()

        ok = True
        for _ in range(3):
            order.clear()
            th = threading.Thread(target=scrape_metrics)
            th.start()
            time.sleep(0.2)
            st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=60)
            with lock:
                order.append(("push", st))
            th.join(60)
            ok = ok and order[0] == ("push", 204)
        res.check("/metrics: a push sent while 20 000 targets' metrics render is answered first",
                  ok, order)

        # /targets too: the loop takes a snapshot, the JSON is written off it.
        def scrape_targets():
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/targets", timeout=60) as r:
                with lock:
                    order.append("targets")
                r.read()

        ok = True
        for _ in range(3):
            order.clear()
            th = threading.Thread(target=scrape_targets)
            th.start()
            time.sleep(0.05)
            st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=60)
            with lock:
                order.append(("push", st))
            th.join(60)
            ok = ok and order[0] == ("push", 204)
        res.check("/targets: a push sent while 20 000 targets' JSON renders is answered first",
                  ok, order)


def expensive_body():
    """1e6 identical one-frame samples: ~8 MB of pprof, gzip'd to ~23 KB."""
    out = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    out += field(5, 2, field(1, 0, 1) + field(2, 0, 3))
    out += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1)))
    out += field(2, 2, field(1, 2, varint(1)) + field(2, 2, varint(1))) * 1_000_000
    for s in (b"", b"samples", b"count", b"main.spin"):
        out += field(6, 2, s)
    return gzip.compress(bytes(out), 9)


def scrape_lane(res):
    body = expensive_body()
    served = threading.Event()

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            if served.is_set():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            served.set()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cfg = f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0", loops: 1, workers: 2}}
    scrape:
      scrape_configs:
        - job_name: heavy
          scrape_interval: 2s
          static_configs: [{{targets: ["127.0.0.1:{srv.server_address[1]}"]}}]
""" + scale.ONLY_MEMORY + """
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
service:
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""
    with Gateway(cfg) as gw:
        st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=30)
        res.check("lane: a warm-up push", st == 204, st)
        lines = lambda: re.findall(r'sample_records=(\d+)', open(gw.debug_path).read())  # noqa
        scale.wait(lambda: len(lines()) >= 1, 10)
        heap_records = lines()[0]
        res.check("lane: the target was scraped", served.wait(15))
        st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=60)
        res.check("lane: the push during the scrape's translation is answered", st == 204, st)
        scale.wait(lambda: len(lines()) >= 3, 30)
        seen = lines()
        # [warm-up, then either push first (fixed) or the scraped profile first]
        res.check("lane: the push reached the pipeline before the scraped profile",
                  len(seen) >= 3 and seen[1] == heap_records and seen[2] != heap_records,
                  (heap_records, seen))
    srv.shutdown()


def main():
    res = Results()
    if os.environ.get("PG_ONLY") != "lane":
        churn_and_metrics(res)
    scrape_lane(res)
    res.finish()


if __name__ == "__main__":
    main()
