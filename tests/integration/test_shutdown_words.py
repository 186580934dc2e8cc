# SPDX-License-Identifier: Apache-2.0
"""Log lines that say what happened, on the real binary and the real gRPC
server (tests/node/grpc_server.mjs):

1. With file_storage and the destination down, shutdown says how many samples
   stay in the spool for the next start (info), never "dropped", and counts
   nothing as dropped; the next start with the destination back delivers them.
2. Without storage, the same shutdown says "dropped" (error) and counts the
   samples in otelcol_exporter_send_failed_profile_samples.
3. While the destination is down: one line when the outage begins (not one or
   two per retry attempt) and one when delivery resumes, with its length.
4. Refusals carry no "(0 similar lines suppressed)".
5. GET / on the pprof port: 200 and a short text naming POST /v1/pprof.
6. A JSON body or an OTLP protobuf request on /v1/pprof: 400 with the hint
   that it is not pprof and where OTLP goes."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, fixture, post, read  # noqa: E402

res = Results()
SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
HINT = ("this is not pprof (plain or gzip'd)", "OTLP goes to the otlp receiver "
        "(:4317 gRPC, :4318 /v1development/profiles)")


class Server:
    def __init__(self):
        self.proc = subprocess.Popen(["node", SERVER], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.port, self.control = info["grpc_port"], info["control_port"]

    def call(self, path):
        method = "GET" if path == "/stats" else "POST"
        req = urllib.request.Request(f"http://127.0.0.1:{self.control}{path}", method=method,
                                     data=None if method == "GET" else b"")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def wait_samples(self, want, timeout):
        end = time.time() + timeout
        st = self.call("/stats")
        while st["samples"] < want and time.time() < end:
            time.sleep(0.1)
            st = self.call("/stats")
        return st["samples"]

    def close(self):
        self.proc.terminate()
        self.proc.wait(5)


def config(port, storage_dir=None):
    ext = (f"extensions:\n  file_storage: {{directory: {storage_dir}, fsync: interval}}\n"
           if storage_dir else "")
    return f"""{ext}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{port}"
    tls: {{insecure: true}}
    shutdown_timeout: 1s
    retry_on_failure: {{initial_interval: 50ms, max_interval: 200ms, max_elapsed_time: 0s}}
    sending_queue: {{num_consumers: 2{", storage: file_storage" if storage_dir else ""}}}
service:
  {"extensions: [file_storage]" if storage_dir else ""}
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""


def with_slow_twin(cfg):
    """@cfg plus a second otlp exporter (same destination) that drains 3s
    longer: the gateway, and its /metrics, outlive the first one's drop."""
    twin = re.search(r"  otlp:\n((?:    .*\n)+)", cfg).group(1)
    twin = twin.replace("shutdown_timeout: 1s", "shutdown_timeout: 4s")
    cfg = cfg.replace("exporters:\n  otlp:\n", "exporters:\n  otlp/slow:\n" + twin + "  otlp:\n", 1)
    return cfg.replace("exporters: [otlp]", "exporters: [otlp, otlp/slow]")


def metric(gw, name, labels=""):
    m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
    if m is None:
        return None
    with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and labels in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def stop_watching(gw, name, labels=""):
    """SIGTERM; reads metric @name until the endpoint closes (what an exporter
    counts at shutdown is counted just before the end). (exit code, last value)."""
    seen = []

    def poll():
        while gw.proc.poll() is None:
            try:
                seen.append(metric(gw, name, labels))
            except OSError:
                return
            time.sleep(0.02)

    t = threading.Thread(target=poll)
    t.start()
    code = gw.stop(signal.SIGTERM, timeout=15)
    t.join()
    return code, (seen[-1] if seen else None)


def samples_of(log):
    m = re.search(r"(\d+) samples left in the spool|dropped (\d+) samples", log)
    return int(m.group(1) or m.group(2)) if m else 0


def main():
    body = read(fixture("pprof/go/cpu.pb.gz"))
    hdrs = {"Content-Type": "application/octet-stream"}
    srv = Server()
    spool = tempfile.mkdtemp(prefix="pg-it-words-")
    try:
        srv.call("/stop")
        # ---- 1. storage, destination down ----
        with Gateway(config(srv.port, spool)) as gw:
            codes = [post(gw.port, "/v1/pprof", body, hdrs)[0] for _ in range(3)]
            res.check("storage: pushes spooled (204)", codes == [204] * 3, codes)
            time.sleep(1.5)  # ~10 retry attempts per request
            log = gw.log()
            outage = re.findall(r"destination unreachable \(UNAVAILABLE", log)
            res.check("outage: one line when it begins, not one per attempt",
                      len(outage) == 1, log[-1500:])
            res.check("outage: no per-attempt lines at info or warn",
                      "retrying in" not in log and 'msg="connection to' not in log,
                      [ln for ln in log.splitlines() if "retrying in" in ln
                       or 'msg="connection to' in ln][:3])
            res.check("outage: the first line says how many requests wait",
                      re.search(r"retrying with backoff, [1-9]\d* request\(s\) waiting", log)
                      is not None, log[-800:])
            code, dropped = stop_watching(gw, "pprofgate_exporter_dropped_profile_samples")
            log = gw.log()
            res.check("storage: clean exit", code == 0, (code, log[-800:]))
            line = next((ln for ln in log.splitlines() if "left in the spool" in ln), "")
            res.check("storage: shutdown says the samples stay in the spool (info)",
                      "level=info" in line and re.search(
                          r"shutdown_timeout \(1s\) passed: \d+ samples left in the spool for "
                          r"the next start", line) is not None, log[-1500:])
            res.check("storage: the word 'dropped' is not used", "dropped" not in log.lower(),
                      log[-1500:])
            res.check("storage: no error logged", "level=error" not in log, log[-1500:])
            res.check("storage: nothing counted as dropped", dropped == 0, dropped)
            kept = samples_of(log)
        srv.call("/start")
        with Gateway(config(srv.port, spool)) as gw:
            got = srv.wait_samples(kept, 20) if kept else 0
            res.check("storage: what the log said was kept arrives after the restart",
                      kept > 0 and got >= kept, (kept, got))
            # ---- 3. recovery ----
            srv.call("/stop")
            codes = [post(gw.port, "/v1/pprof", body, hdrs)[0] for _ in range(2)]
            time.sleep(1.0)
            srv.call("/start")
            rec = gw.wait_log(r"delivering again after a \d+\.\ds outage "
                              r"\((\d+) failed attempts", 15)
            log = gw.log()
            res.check("recovery: one line when delivery resumes, with the outage's length",
                      rec is not None and int(rec.group(1)) >= 2
                      and len(re.findall("delivering again", log)) == 1, log[-1500:])
            res.check("recovery: the outage was said once",
                      len(re.findall(r"destination unreachable", log)) == 1, log[-1500:])
            gw.stop(signal.SIGTERM, timeout=15)
        srv.call("/stop")

        # ---- 2. no storage, destination down ----
        with Gateway(with_slow_twin(config(srv.port))) as gw:
            codes = [post(gw.port, "/v1/pprof", body, hdrs)[0] for _ in range(2)]
            res.check("memory: pushes queued (204)", codes == [204] * 2, codes)
            time.sleep(0.5)
            code, failed = stop_watching(gw, "otelcol_exporter_send_failed_profile_samples",
                                         'exporter="otlp"')
            log = gw.log()
            line = next((ln for ln in log.splitlines() if "dropped" in ln), "")
            n = samples_of(log)
            res.check("memory: shutdown says 'dropped' (error) with the count",
                      code == 0 and "level=error" in line and n > 0
                      and "shutdown_timeout (1s) passed: dropped" in line, log[-1500:])
            res.check("memory: the drop is counted in otelcol_exporter_send_failed_profile_samples",
                      failed == n, (n, failed))
            res.check("memory: nothing said to stay in a spool", "spool" not in log, log[-800:])
    finally:
        srv.close()
        subprocess.run(["rm", "-rf", spool], check=False)

    # ---- 4-6. the receiver's own words ----
    cfg = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""
    with Gateway(cfg) as gw:
        st, hd, text = post(gw.port, "/", method="GET")
        res.check("GET /: 200 naming the push endpoint",
                  st == 200 and b"POST /v1/pprof" in text and len(text) < 400, (st, text))
        st, _, text = post(gw.port, "/v1/pprof", b'{"resourceProfiles": []}',
                           {"Content-Type": "application/json"})
        res.check("JSON body: 400 with the hint",
                  st == 400 and all(h.encode() in text for h in HINT) and b"JSON" in text,
                  (st, text))
        # ExportProfilesServiceRequest{resource_profiles: [{scope_profiles: [{}]}], dictionary: {}}
        otlp = bytes([0x0a, 0x04, 0x12, 0x02, 0x0a, 0x00, 0x12, 0x00])
        st, _, text = post(gw.port, "/v1/pprof", otlp, hdrs)
        res.check("OTLP protobuf body: 400 with the hint",
                  st == 400 and all(h.encode() in text for h in HINT) and b"OTLP" in text,
                  (st, text))
        st, _, text = post(gw.port, "/v1/pprof", b"\x0a\x04\x08\x01\x10\x02\x99", hdrs)
        res.check("broken pprof: 400 without the hint", st == 400 and HINT[0].encode()
                  not in text, (st, text))
        for _ in range(3):
            post(gw.port, "/nope", b"x", hdrs)
        log = gw.log()
        res.check("refusals logged", "answered 404" in log and "answered 400" in log, log[-800:])
        res.check("no '0 similar lines suppressed'", "0 similar lines suppressed" not in log,
                  [ln for ln in log.splitlines() if "suppressed" in ln][:3])
        res.check("GET / is not logged as a refusal", "answered 404: 404 page not found "
                  "(peer" not in log.split("answered 400")[0], log[-800:])
    res.finish()


if __name__ == "__main__":
    main()
