#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Large-body flood against memory_limiter. bench/flood_client (one thread,
epoll: the attacker costs the machine little CPU) keeps CLIENTS uploads of a
~4 MB gzip profile (bench/translate_gen_large.py --samples SAMPLES, 15.5 MB
raw) in flight for DURATION seconds, while a probe (flood_client probe, a
process of its own) pushes the first real SDK capture every 20 ms from
127.0.0.2. The same probe pushes at the same time, from 127.0.0.3, to a
second gateway with the same config that nobody floods: the control, i.e.
what the machine (the load generator, other processes) adds whatever the
flooded gateway does. Samples the flooded gateway's VmRSS every 20 ms.
Prints peak RSS / limit_mib and VmHWM / limit_mib (goal <= 1.0), the status
mix, the probe's p50/p99 (goal < 50 ms) and the control's, and the CPU the
gateway and the attacker used.
PIN=1 (when the machine has 2+ cores): the flooded gateway (all its threads)
on the first core, the attacker, both probes, the control gateway and this
script on the second; PIN=0 leaves everything to the scheduler.
Env: CLIENTS (60), DURATION (10 s), LIMIT_MIB (160), SPIKE_MIB (32),
     SAMPLES (140000), WORKERS (receiver default), AUTH (1 = bearer auth on),
     PIN (0), SCHED (1 = `perf sched record` 4 s of the flood and print who kept the
     gateway's event loop waiting for a CPU: its own threads or other processes),
     PPROFGATE_BIN, PG_BUILD_DIR."""

import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "lib"))
from pg_harness import Gateway, fixture  # noqa: E402

BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(ROOT, "build"))
CLIENTS = int(os.environ.get("CLIENTS", "60"))
DURATION = float(os.environ.get("DURATION", "10"))
LIMIT = int(os.environ.get("LIMIT_MIB", "160"))
SPIKE = int(os.environ.get("SPIKE_MIB", "32"))
SAMPLES = int(os.environ.get("SAMPLES", "140000"))
WORKERS = os.environ.get("WORKERS", "")
AUTH = os.environ.get("AUTH", "0") == "1"
PIN = os.environ.get("PIN", "0") == "1"
SCHED = os.environ.get("SCHED", "0") == "1"
TOKEN = "bench-token"
CLIENT_BIN = os.path.join(BUILD, "bench", "flood_client")
if not os.path.exists(CLIENT_BIN):
    sys.exit(f"{CLIENT_BIN} missing: cmake --build {BUILD} --target flood_client")

large = os.path.join(BUILD, f"flood-{SAMPLES}.pprof.gz")
if not os.path.exists(large):
    subprocess.run([sys.executable, os.path.join(HERE, "translate_gen_large.py"), large + ".raw",
                    "--gzip", large, "--samples", str(SAMPLES)], check=True, capture_output=True)
    os.unlink(large + ".raw")
small = fixture("sdk/push0.pprof.gz")
with open(fixture("sdk/push0.json")) as f:
    small_attrs = json.load(f)["headers"]["otel-resource-attributes"]

extra = "      max_request_body_size: 16MiB\n"
if WORKERS:
    extra += f"      workers: {WORKERS}\n"
if AUTH:
    extra += '      auth: {bearer_token_file: "{tmp}/token"}\n'
cfg = f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
{extra}
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: {LIMIT}
    spike_limit_mib: {SPIKE}
exporters:
  debug:
    verbosity: basic
    output_paths: ["{{debug}}"]
service:
  pipelines:
    profiles: {{receivers: [pprof], processors: [memory_limiter], exporters: [debug]}}
"""

cores = sorted(os.sched_getaffinity(0))
pinned = PIN and len(cores) >= 2
gw_cores, client_cores = ({cores[0]}, {cores[1]}) if pinned else (set(cores), set(cores))


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_probe(port, src):
    pr = subprocess.Popen([CLIENT_BIN, "probe", str(port), small, src, TOKEN,
                           "otel-resource-attributes: " + small_attrs],
                          stdout=subprocess.PIPE, text=True)
    pr.stdout.readline()  # "ready"
    return pr


def probe_result(pr):
    pr.terminate()
    out, _ = pr.communicate(timeout=10)
    lat, fail = [], []
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ok":
            lat = sorted(float(x) * 1000 for x in rest.split())
        elif kind == "fail":
            fail = rest.split()
    return lat, fail


def sched_record():
    path = os.path.join(gw.tmp, "sched.data")
    return path, subprocess.Popen(["perf", "sched", "record", "-o", path, "--", "sleep", "4"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def sched_report(path, pid):
    """The loop thread's (tid = pid) waits for a CPU while runnable, and what
    ran on its CPU meanwhile: the gateway's own threads or other processes."""
    out = subprocess.run(["perf", "sched", "timehist", "-i", path], capture_output=True,
                         text=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1].startswith("[") and f[0][0].isdigit():
            try:
                rows.append((float(f[0].rstrip(":")), f[1], f[2], float(f[4]), float(f[5])))
            except ValueError:
                pass
    loop = f"pprofgate[{pid}]"
    delays, runs, blame = [], [], {}
    for i, (t, cpu, name, delay, run) in enumerate(rows):
        if name != loop:
            continue
        delays.append(delay)
        runs.append(run)
        if delay <= 2.0:
            continue
        start = t - (run + delay) / 1000
        for t2, cpu2, name2, _, run2 in reversed(rows[:i]):
            if t2 <= start:
                break
            if cpu2 == cpu:
                if name2.endswith(f"/{pid}]"):
                    who = "the gateway's own threads"
                elif name2.split("[")[0] in ("flood_client", "python3", "pprofgate", "perf"):
                    who = "this bench (attacker, probes, control, perf)"
                else:
                    who = "other processes"
                blame[who] = blame.get(who, 0.0) + run2
    if not delays:
        return "  sched: no samples of the loop thread"
    delays.sort()
    return (f"  sched (4 s): loop woke {len(delays)} times, waited for a CPU p50 "
            f"{pct(delays, 0.5):.2f} ms, p99 {pct(delays, 0.99):.2f} ms, max {delays[-1]:.1f} ms; "
            f"in its {sum(1 for d in delays if d > 2)} waits > 2 ms the CPU ran: "
            + ", ".join(f"{k} {v:.0f} ms" for k, v in sorted(blame.items()))
            + f"\n  loop on CPU {sum(runs):.0f} ms of 4 s, longest run {max(runs):.1f} ms, "
            f"{sum(1 for r in runs if r > 2)} runs > 2 ms")


def pct(lat, q):
    return lat[min(len(lat) - 1, int(len(lat) * q))] if lat else float("nan")


gw, ctl = Gateway(cfg), Gateway(cfg)
for g in (gw, ctl):
    with open(g.path("token"), "w") as f:
        f.write(TOKEN + "\n")
# Each gateway starts with its affinity set, so the default worker count
# (the CPUs it can use) follows the pinning; the probes and the attacker
# inherit this script's affinity.
os.sched_setaffinity(0, gw_cores)
gw.start()
os.sched_setaffinity(0, client_cores)
try:
    ctl.start()
    rss_peak = 0
    probe = start_probe(gw.port, "127.0.0.2")
    cprobe = start_probe(ctl.port, "127.0.0.3")
    rss_idle = gw.rss_kb() or 0
    cpu0, load0 = cpu_s(gw.proc.pid), os.getloadavg()[0]
    flood = subprocess.Popen([CLIENT_BIN, "flood", str(gw.port), large, str(CLIENTS), str(DURATION)]
                             + ([TOKEN] if AUTH else []), stdout=subprocess.PIPE, text=True)
    end = time.monotonic() + DURATION
    sched = None
    while time.monotonic() < end:
        rss_peak = max(rss_peak, gw.rss_kb() or 0)
        if SCHED and sched is None and time.monotonic() > end - DURATION + 2:
            sched = sched_record()
        time.sleep(0.02)
    # The probes cover the flood's window only, not the requests it lets finish.
    lat, pfail = probe_result(probe)
    clat, cfail = probe_result(cprobe)
    while flood.poll() is None:
        rss_peak = max(rss_peak, gw.rss_kb() or 0)
        time.sleep(0.02)
    out, _ = flood.communicate()
    if sched is not None:
        sched[1].wait(30)
    cpu1 = cpu_s(gw.proc.pid)
    hwm = gw.hwm_kb() or 0
    os.sched_setaffinity(0, set(cores))
    mix, attacker = {}, ""
    for line in out.splitlines():
        if line.startswith("status"):
            mix = dict(kv.split("=") for kv in line.split()[1:])
        elif line.startswith("cpu"):
            f = line.split()
            attacker = f"{float(f[1]) + float(f[2]):.2f} s CPU for {f[4]} uploads"

    where = (f"PINNED: gateway on core {cores[0]}, attacker + probes + control gateway on core "
             f"{cores[1]}" if pinned else "UNPINNED: every process on any core")
    m = re.search(r"(\d+) workers", gw.log())
    where += f"; gateway with {m.group(1) if m else '?'} workers"
    print(f"flood: {CLIENTS} clients x {os.path.getsize(large) >> 10} KiB gzip for {DURATION:.0f} s, "
          f"memory_limiter limit_mib {LIMIT} spike {SPIKE}, auth {'on' if AUTH else 'off'}; {where}; "
          f"load average {load0:.1f}")
    print(f"  RSS idle {rss_idle // 1024} MiB, peak (sampled 20 ms) {rss_peak // 1024} MiB, "
          f"VmHWM {hwm // 1024} MiB")
    print(f"  peak RSS / limit_mib = {rss_peak / 1024 / LIMIT:.2f}   VmHWM / limit_mib = "
          f"{hwm / 1024 / LIMIT:.2f}   (goal <= 1.0)")
    print(f"  status mix: {mix}; gateway CPU {cpu1 - cpu0:.2f} s, attacker {attacker}")
    print(f"  probe (flooded gateway): {len(lat)} ok, {len(pfail)} failed, p50 {pct(lat, 0.5):.1f} ms, "
          f"p99 {pct(lat, 0.99):.1f} ms, max {pct(lat, 1.0):.1f} ms (goal p99 < 50)"
          + (f"; failures {sorted(set(pfail))}" if pfail else ""))
    print(f"  control (idle gateway, same time): {len(clat)} ok, {len(cfail)} failed, "
          f"p50 {pct(clat, 0.5):.1f} ms, p99 {pct(clat, 0.99):.1f} ms, max {pct(clat, 1.0):.1f} ms; "
          f"p99 flooded / control = {pct(lat, 0.99) / max(pct(clat, 0.99), 0.001):.1f}")
    if sched is not None:
        print(sched_report(sched[0], gw.proc.pid))
    if os.environ.get("RAW503"):
        print("\n".join(re.findall(r"answered 503: [^\n]*", gw.log())[:12]))
    reasons = sorted({re.sub(r"[0-9.]+ MiB", "N MiB", r)
                      for r in re.findall(r'answered 503: ([^(]*)', gw.log())})
    print("  503 reasons: " + "; ".join(reasons[:4]))
finally:
    gw.kill()
    ctl.kill()
