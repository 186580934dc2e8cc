# SPDX-License-Identifier: Apache-2.0
"""Pull mode against real Go programs serving net/http/pprof (built here with
/usr/local/go or the go on PATH; the binary is cached in the build dir): a
memory scrape with keep_sample_type and resource attributes from labels, a CPU
delta profile whose Duration is `seconds`, single flight (interval shorter
than the CPU window: ticks counted as skipped, never a second request, so no
busy), busy (the test holds the CPU profile), a target that is down, HTML,
an oversized body, a gzip bomb, a hang and a body cut short: each a counted failure with
its reason. Metrics and /targets on the telemetry endpoint; SIGTERM exits
cleanly while a CPU scrape is in flight."""
import json
import os
import re
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402
from scrape_target import build_target, start_target  # noqa: E402

CONFIG = """
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0", max_request_body_size: 1MiB}}
    scrape:
      external_labels: {{k8s.cluster.name: test}}
      scrape_configs:
        - job_name: mem
          scrape_interval: 1s
          static_configs: [{{targets: ["127.0.0.1:{a}"], labels: {{team: a}}}}]
          profiling_config:
            pprof_config:
              memory: {{keep_sample_type: [{{type: inuse_space, unit: bytes}}]}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
          relabel_configs:
            - {{source_labels: [__address__], regex: '.*:(\\d+)', target_label: port}}
        - job_name: cpu
          scrape_interval: 1s
          scrape_timeout: 5s
          static_configs: [{{targets: ["127.0.0.1:{a}"]}}]
          profiling_config:
            pprof_config:
              memory: {{enabled: false}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{delta: true, seconds: 3}}
          relabel_configs:
            - {{target_label: service.name, replacement: hasher}}
        - job_name: busy
          scrape_interval: 1s
          scrape_timeout: 3s
          static_configs: [{{targets: ["127.0.0.1:{b}"]}}]
          profiling_config:
            pprof_config:
              memory: {{enabled: false}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{delta: true, seconds: 1}}
        - job_name: down
          scrape_interval: 1s
          static_configs: [{{targets: ["127.0.0.1:{dead}"]}}]
          profiling_config:
            pprof_config:
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
        - job_name: bad
          scrape_interval: 1s
          scrape_timeout: 1s
          static_configs: [{{targets: ["127.0.0.1:{b}"]}}]
          profiling_config:
            pprof_config:
              memory: {{enabled: false}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
              html: {{path: /html}}
              big: {{path: /big}}
              hang: {{path: /hang}}
              cut: {{path: /cut}}
          relabel_configs:
            - {{source_labels: [__name__], target_label: kind}}
        - job_name: bomb
          scrape_interval: 1s
          static_configs: [{{targets: ["127.0.0.1:{b}"]}}]
          profiling_config:
            pprof_config:
              memory: {{enabled: false}}
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
              bomb: {{path: /bomb}}
  pprof/remote:
    remote:
      endpoint: http://127.0.0.1:{a}/debug/pprof/heap
      collection_interval: 1s
      initial_delay: 100ms
exporters:
  debug: {{verbosity: detailed, output_paths: ["{{debug}}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof, pprof/remote], exporters: [debug]}}
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
"""


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read().decode()


def metric(text, name, **labels):
    total = None
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def blocks(debug):
    """ResourceProfiles blocks of the debug output."""
    return debug.split("ResourceProfiles #")[1:]


def main():
    res = Results()
    exe = build_target(res)
    ta, pa = start_target(exe)
    tb, pb = start_target(exe)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    holder = None
    try:
        # Hold target B's CPU profile for 6 s: pprofgate's scrapes of it are busy.
        def hold():
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{pb}/debug/pprof/profile?seconds=6",
                                       timeout=20).read()
            except Exception:
                pass
        holder = threading.Thread(target=hold)
        holder.start()
        time.sleep(0.3)
        with Gateway(CONFIG.format(a=pa, b=pb, dead=dead)) as gw:
            m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
            mport = int(m.group(1)) if m else None
            res.check("metrics endpoint up", mport is not None, gw.log()[-1500:])
            log = gw.log()
            res.check("effective profile set logged per job",
                      "job cpu: every 1s (timeout 5s): process_cpu /debug/pprof/profile?seconds=3"
                      in log and "job mem: every 1s (timeout 4s): memory /debug/pprof/allocs keep "
                      "inuse_space/bytes" in log, log[-2000:])
            # Wait for: a CPU profile (>= 3 s window) and the failure cases.
            deadline = time.time() + 12
            text = ""
            while time.time() < deadline:
                text = get(mport, "/metrics")
                need = [metric(text, "pprofgate_scrape_failures_total", job=j, reason=r)
                        for j, r in (("busy", "busy"), ("down", "connect"), ("bad", "parse"),
                                     ("bad", "too_large"), ("bad", "timeout"), ("bad", "read"),
                                     ("bomb", "too_large"))]
                cpu_ok = (metric(text, "pprofgate_scrape_samples_total", job="cpu")
                          and metric(text, "pprofgate_scrape_skipped_ticks_total", job="cpu"))
                if all(need) and cpu_ok and "hasher" in open(gw.debug_path).read():
                    break
                time.sleep(0.5)
            for j, r in (("busy", "busy"), ("down", "connect"), ("bad", "parse"),
                         ("bad", "too_large"), ("bad", "timeout"), ("bad", "read"),
                         ("bomb", "too_large")):
                res.check(f"job {j}: failure counted as {r}",
                          (metric(text, "pprofgate_scrape_failures_total", job=j, reason=r) or 0) >= 1,
                          [ln for ln in text.splitlines() if "failures" in ln][:20])
            res.check("remote: (upstream keys) scrapes its one URL",
                      metric(text, "pprofgate_scrape_target_up", receiver="pprof/remote") == 1,
                      [ln for ln in text.splitlines() if "pprof/remote" in ln][:5])
            with open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb") as f:
                st, _, _ = post(gw.port, "/v1/pprof", f.read(),
                                {"Content-Type": "application/octet-stream"})
            res.check("push path answers 204 while targets fail", st == 204, st)
            res.check("down target: up 0",
                      metric(text, "pprofgate_scrape_target_up", job="down") == 0)
            res.check("memory target: up 1",
                      metric(text, "pprofgate_scrape_target_up", job="mem") == 1)
            res.check("single flight: CPU ticks during the 3 s window counted as skipped",
                      (metric(text, "pprofgate_scrape_skipped_ticks_total", job="cpu") or 0) >= 1,
                      [ln for ln in text.splitlines() if "skipped" in ln])
            res.check("single flight: our own CPU scrapes never collide (no busy on job cpu)",
                      metric(text, "pprofgate_scrape_failures_total", job="cpu", reason="busy")
                      is None)
            res.check("scraped samples counted as accepted by the receiver",
                      (metric(text, "otelcol_receiver_accepted_profile_samples",
                              transport="scrape") or 0) > 0)

            targets = json.loads(get(mport, "/targets"))
            act = targets["activeTargets"]
            res.check("/targets lists every target", len(act) == 10, len(act))
            by = {(t["job"], t["profile"]): t for t in act}
            res.check("/targets: down target with its error",
                      by.get(("down", "memory"), {}).get("health") == "down"
                      and by[("down", "memory")]["lastError"] != "", by.get(("down", "memory")))
            res.check("relabeling sees the profile type as __name__",
                      by.get(("bad", "html"), {}).get("labels", {}).get("kind") == "html",
                      by.get(("bad", "html")))
            res.check("/targets: CPU URL carries seconds=3",
                      by.get(("cpu", "process_cpu"), {}).get("scrapeUrl", "").endswith(
                          "/debug/pprof/profile?seconds=3"))

            dbg = open(gw.debug_path).read()
            mem = [b for b in blocks(dbg) if "team: Str(a)" in b]
            res.check("memory profile exported with label attributes", len(mem) >= 1, dbg[:1500])
            if mem:
                b = mem[0]
                for want in ("service.name: Str(mem)", f"service.instance.id: Str(127.0.0.1:{pa})",
                             f"port: Str({pa})", "k8s.cluster.name: Str(test)"):
                    res.check("memory resource has " + want, want in b, b[:1200])
                res.check("job/instance/__name__ not emitted raw",
                          "-> job:" not in b and "-> instance:" not in b and "__name__" not in b)
                # Go's allocs profile has 4 sample types = 4 OTLP profiles; keep leaves 1.
                res.check("keep_sample_type: one profile of the four remains",
                          len(re.findall(r"(?m)^Profile #", b)) == 1, b[:3000])
                res.check("scope pprofgate/scrape", "pprofgate/scrape" in b)
            cpu = [b for b in blocks(dbg) if "service.name: Str(hasher)" in b]
            res.check("CPU profile exported with the relabeled service.name", len(cpu) >= 1)
            if cpu:
                durs = [int(x) for x in re.findall(r"DurationNano\s*:\s*(\d+)", cpu[0])]
                res.check("CPU delta: Duration ~= seconds (3 s)",
                          durs and all(2.8e9 <= d <= 3.6e9 for d in durs), durs)
                res.check("CPU samples carry the pprof.Do label", "hasher" in cpu[0]
                          and "worker" in cpu[0], cpu[0][:2000])
            # SIGTERM while a 3 s CPU scrape may be in flight: exits cleanly and promptly.
            t0 = time.time()
            rc = gw.stop()
            res.check("SIGTERM: clean exit", rc == 0, gw.log()[-1500:])
            res.check("SIGTERM: does not wait for a CPU window", time.time() - t0 < 5,
                      time.time() - t0)
            res.check("push receiver unaffected (no crash, no error lines)",
                      "level=error" not in gw.log(), gw.log()[-1500:])
    finally:
        for p in (ta, tb):
            p.kill()
            p.wait()
        if holder is not None:
            holder.join(timeout=10)
    res.finish()


if __name__ == "__main__":
    main()
