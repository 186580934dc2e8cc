# SPDX-License-Identifier: Apache-2.0
"""Pull mode against a Node target using @datadog/pprof (tests/node/
pprof_target.mjs): its heap profile (inuse_objects/count, inuse_space/bytes,
Content-Type application/x-protobuf) filtered to inuse_space/bytes, and a wall
profile asked for with ?seconds=1 (Content-Type text/plain: the type is
recognised by its gzip bytes); both reach the exporter with the target's
labels as resource attributes."""
import os
import re
import subprocess
import sys
import time
import urllib.request
import json

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import Gateway, Results  # noqa: E402

NODE_DIR = os.path.join(os.path.dirname(__file__), "..", "node")

CONFIG = """
receivers:
  pprof:
    scrape:
      scrape_configs:
        - job_name: node-svc
          scrape_interval: 2s
          static_configs: [{{targets: ["127.0.0.1:{port}"], labels: {{service.name: node-svc, runtime: node}}}}]
          profiling_config:
            pprof_config:
              memory: {{path: /debug/pprof/heap, keep_sample_type: [{{type: inuse_space, unit: bytes}}]}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{delta: true, seconds: 1}}
exporters:
  debug: {{verbosity: detailed, output_paths: ["{{debug}}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [debug]}}
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
"""


def main():
    res = Results()
    mods = os.path.join(NODE_DIR, "node_modules", "@datadog", "pprof")
    res.check("@datadog/pprof installed (bash scripts/bootstrap.sh)", os.path.isdir(mods), mods)
    if not os.path.isdir(mods):
        res.finish()
    node = subprocess.Popen(["node", "pprof_target.mjs"], cwd=NODE_DIR, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        m = re.search(r"listening on (\d+)", node.stdout.readline())
        res.check("node target started", m is not None)
        if not m:
            res.finish()
        with Gateway(CONFIG.format(port=m.group(1)),
                     ready_pattern=r"serving /metrics on [0-9.]+:\d+") as gw:
            mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)").group(1))
            end = time.time() + 15
            up = {}
            while time.time() < end:
                t = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{mport}/targets",
                                                      timeout=5).read())["activeTargets"]
                up = {x["profile"]: x["health"] for x in t}
                if up.get("memory") == "up" and up.get("process_cpu") == "up":
                    break
                time.sleep(0.3)
            res.check("heap and wall targets up", up == {"memory": "up", "process_cpu": "up"},
                      (up, gw.log()[-1500:]))
            blocks = open(gw.debug_path).read().split("ResourceProfiles #")[1:]
            def dur(b):
                d = [int(x) for x in re.findall(r"DurationNano\s*:\s*(\d+)", b)]
                return max(d) if d else 0
            wall = [b for b in blocks if dur(b) > 0]
            res.check("profiles carry the target's labels",
                      blocks and all("runtime: Str(node)" in b and "service.name: Str(node-svc)" in b
                                     for b in blocks), blocks[:1])
            res.check("wall profile for ~1 s (seconds=1)",
                      wall and all(0.8e9 <= dur(b) <= 3e9 for b in wall), [dur(b) for b in wall])
            nprof = [len(re.findall(r"(?m)^Profile #", b)) for b in blocks if b not in wall]
            res.check("heap: keep_sample_type leaves one of the two profiles",
                      nprof and all(n == 1 for n in nprof), nprof)
            res.check("clean exit", gw.stop() == 0)
    finally:
        node.terminate()
        node.wait()
    res.finish()


if __name__ == "__main__":
    main()
