# SPDX-License-Identifier: Apache-2.0
"""One bad push inside a merged (sending_queue.batch) export: the destination
rejects the merged request for good (INVALID_ARGUMENT), the exporter retries
its pushes in halves, and every other client's acknowledged samples arrive;
only the bad push's are dropped. Once with the queue in memory, once spooled
(storage: the halves are read back from disk)."""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, post  # noqa: E402
from pg_pprof import big_pprof  # noqa: E402

res = Results()
SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
N_SAMPLES = 500
BODY = gzip.compress(big_pprof(50, N_SAMPLES, 1))
BAD = gzip.compress(big_pprof(50, N_SAMPLES, 7))  # its function names carry the marker
MARKER = "pkg7.function_number_"


def stats(control):
    with urllib.request.urlopen(f"http://127.0.0.1:{control}/stats", timeout=10) as r:
        return json.loads(r.read())


for storage in (False, True):
    name = "spooled" if storage else "in memory"
    spool = tempfile.mkdtemp(prefix="pg-it-bisect-")
    srv = subprocess.Popen(["node", SERVER, "--reject-containing", MARKER],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        info = json.loads(srv.stdout.readline())
        ext = f"extensions:\n  file_storage: {{directory: {spool}}}\n" if storage else ""
        cfg = f"""{ext}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{info['grpc_port']}"
    tls: {{insecure: true}}
    sending_queue:
      {"storage: file_storage" if storage else ""}
      batch: {{flush_timeout: 1s, min_size: 1000000}}
service:
  {"extensions: [file_storage]" if storage else ""}
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""
        with Gateway(cfg) as gw:
            codes = []
            for i in range(7):
                status, _, _ = post(gw.port, "/v1/pprof", BAD if i == 3 else BODY,
                                    {"Content-Encoding": "gzip"})
                codes.append(status)
            res.check(f"{name}: all 7 pushes accepted", codes == [204] * 7, codes)
            want = 6 * N_SAMPLES
            end = time.time() + 30
            st = stats(info["control_port"])
            while st["samples"] < want and time.time() < end:
                time.sleep(0.1)
                st = stats(info["control_port"])
            time.sleep(0.5)
            st = stats(info["control_port"])
            res.check(f"{name}: the 6 good pushes' samples all delivered", st["samples"] == want,
                      (st["samples"], want))
            res.check(f"{name}: the bad push was isolated and rejected",
                      st.get("rejected_poison", 0) >= 2, st)
            res.check(f"{name}: bisection logged",
                      gw.wait_log(r"retrying them in two halves", 2) is not None, gw.log()[-800:])
            res.check(f"{name}: the bad push's drop logged",
                      gw.wait_log(r"rejected, not retryable: INVALID_ARGUMENT", 2) is not None,
                      gw.log()[-800:])
    finally:
        srv.terminate()
        srv.wait(5)
        subprocess.run(["rm", "-rf", spool], check=False)
res.finish()
