# SPDX-License-Identifier: Apache-2.0
"""Targets that answer wrongly are classed by what happened (issue 25 item
5): a negative Content-Length, an HTTP/0.9-style reply, a 4 MB header block
and a 20-digit status code are `bad_response` (not `connect`, not "HTTP
-1"); 1 000 `100 Continue` responses are refused after 5 as Go's client
does (`bad_response`), while 2 of them before a 200 are skipped and the
profile is delivered; a Location with raw 0x7F/0xFF/0xFE bytes leaves
/targets and the log valid UTF-8, the bytes written as \\xHH."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, Gateway, Results  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ["negcl", "http09", "bighdr", "cont", "cont2", "hugestatus", "loc"]


def config(port):
    jobs = "".join(f"""        - job_name: {m}
          scrape_interval: 1s
          static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
          profiling_config:
            path_prefix: /{m}
            pprof_config:
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
""" for m in MODES)
    return f"""
receivers:
  pprof:
    scrape:
      scrape_configs:
{jobs}
exporters:
  debug: {{verbosity: basic, output_paths: ["{{debug}}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [debug]}}
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
"""


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read()


def main():
    res = Results()
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "scrape", "bad_target.py"),
                            os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz")],
                           stdout=subprocess.PIPE)
    try:
        port = int(srv.stdout.readline())
        with Gateway(config(port), ready_pattern=r"serving /metrics on [0-9.]+:\d+") as gw:
            mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)").group(1))
            text = ""
            end = time.time() + 20
            while time.time() < end:
                text = get(mport, "/metrics").decode()
                failed = all(re.search(rf'scrape_failures_total\{{[^}}]*job="{m}"', text)
                             for m in MODES if m != "cont2")
                delivered = re.search(r'scrape_samples_total\{[^}]*job="cont2"[^}]*\} [1-9]', text)
                if failed and (delivered or
                               re.search(r'scrape_failures_total\{[^}]*job="cont2"', text)):
                    break
                time.sleep(0.3)

            def reasons(job):
                return set(re.findall(rf'pprofgate_scrape_failures_total\{{[^}}]*job="{job}"'
                                      r'[^}]*reason="(\w+)"', text))

            for job in ("negcl", "http09", "bighdr", "hugestatus", "cont"):
                res.check(f"{job}: counted as bad_response", reasons(job) == {"bad_response"},
                          reasons(job))
            samples = re.search(r'pprofgate_scrape_samples_total\{[^}]*job="cont2"[^}]*\} (\d+)',
                                text)
            res.check("cont2: two 100 Continue skipped, the profile delivered",
                      samples is not None and int(samples.group(1)) > 0 and not reasons("cont2"),
                      (samples and samples.group(0), reasons("cont2")))
            raw = get(mport, "/targets")
            try:
                doc = json.loads(raw.decode("utf-8"))
                ok = True
            except (UnicodeDecodeError, ValueError) as e:
                doc, ok = {"activeTargets": []}, False
                res.check("/targets is valid UTF-8 JSON", False, repr(e))
            if ok:
                res.check("/targets is valid UTF-8 JSON", True)
            errs = {t["job"]: t["lastError"] for t in doc["activeTargets"]}
            res.check("loc: the Location's raw bytes are written as \\xHH",
                      "\\x7f\\xff\\xfe" in errs.get("loc", ""), errs.get("loc"))
            res.check("hugestatus: says invalid status line, not HTTP -1",
                      "invalid status line" in errs.get("hugestatus", "") and
                      "-1" not in errs.get("hugestatus", ""), errs.get("hugestatus"))
            res.check("cont: says too many 1xx", "1xx" in errs.get("cont", ""), errs.get("cont"))
            log = open(gw.log_path, "rb").read()
            try:
                log.decode("utf-8")
                res.check("the log is valid UTF-8", True)
            except UnicodeDecodeError as e:
                res.check("the log is valid UTF-8", False, repr(e))
    finally:
        srv.kill()
        srv.wait()
    res.finish()


if __name__ == "__main__":
    main()
