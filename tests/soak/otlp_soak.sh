#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# On-demand soak (not part of `make test`): SDK-sized pushes through the real binary to the
# real gRPC server (tests/node/grpc_server.mjs) while the server flaps (down/up every
# FLAP_SECONDS). Passes when every push answered 204 reached the server exactly once (zero loss,
# duplicates only for calls the server handled but whose answer a stop cut) and the gateway's
# RSS is flat (last sample <= 1.5x the one after warm-up).
# usage: tests/soak/otlp_soak.sh [BUILD_DIR]     env: SOAK_SECONDS (600) FLAP_SECONDS (30)
#        PUSH_PER_SEC (20) SOAK_DEBUG (a debug verbosity: adds a debug exporter writing to
#        /dev/null beside otlp, so its writer thread soaks too)
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build}"
export PPROFGATE_BIN="${PPROFGATE_BIN:-$build/pprofgate}"
export PG_SOURCE_DIR="$src" PG_FIXTURES="$src/tests/fixtures"
exec python3 - <<'PY'
import glob, json, os, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.environ["PG_SOURCE_DIR"], "tests", "integration", "lib"))
from pg_harness import FIXTURES, SOURCE_DIR, Gateway, Results, post

soak = int(os.environ.get("SOAK_SECONDS", "600"))
flap = int(os.environ.get("FLAP_SECONDS", "30"))
rate = float(os.environ.get("PUSH_PER_SEC", "20"))
res = Results()
srv = subprocess.Popen(["node", os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       env=dict(os.environ, PG_GRPC_STORE="0"))
info = json.loads(srv.stdout.readline())


def ctl(method, path):
    req = urllib.request.Request(f"http://127.0.0.1:{info['control_port']}{path}", method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


pushes = []
for meta in sorted(glob.glob(os.path.join(FIXTURES, "sdk", "push*.json"))):
    h = json.load(open(meta))["headers"]
    body = open(meta.replace(".json", ".pprof.gz"), "rb").read()
    pushes.append((body, {k: v for k, v in h.items()
                          if k in ("content-type", "content-encoding", "otel-resource-attributes")}))

debug = os.environ.get("SOAK_DEBUG", "")
cfg = f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  {"debug: {verbosity: " + debug + ", output_paths: [/dev/null]}" if debug else ""}
  otlp:
    endpoint: 127.0.0.1:{info['grpc_port']}
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 1s, max_interval: 5s, max_elapsed_time: 0s}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [{"debug, " if debug else ""}otlp]}}
"""
try:
    with Gateway(cfg) as gw:
        start = time.time()
        ok = busy = other = 0
        rss = []
        next_flap = start + flap
        up = True
        i = 0
        while time.time() - start < soak:
            body, hdrs = pushes[i % len(pushes)]
            i += 1
            status, _, _ = post(gw.port, "/v1/pprof", body, hdrs)
            ok += status == 204
            busy += status == 503
            other += status not in (204, 503)
            if time.time() >= next_flap:
                ctl("POST", "/stop" if up else "/start")
                up = not up
                next_flap += flap
                rss.append(gw.rss_kb())
                print(f"     t={time.time() - start:5.0f}s server {'up' if up else 'down'} "
                      f"204={ok} 503={busy} rss={rss[-1]} kB", flush=True)
            time.sleep(1.0 / rate)
        if not up:
            ctl("POST", "/start")
        # Wait for every accepted push to arrive once: count distinct requests,
        # since a retry of a call the server handled but whose answer was cut
        # by a stop arrives twice (at-least-once delivery).
        end = time.time() + 120
        while time.time() < end:
            st = ctl("GET", "/stats")
            if st["requests"] - st["duplicates"] >= ok:
                break
            time.sleep(0.5)
        st = ctl("GET", "/stats")
        unique = st["requests"] - st["duplicates"]
        stops = int(soak // flap + 1) // 2 + 1
        print(f"     {ok} pushes accepted, {busy} told to retry, server got {st['requests']} "
              f"requests ({unique} distinct, {st['duplicates']} duplicates over {stops} stops), "
              f"rss {rss[:1]} -> {rss[-1:]}")
        res.check("no unexpected status", other == 0, other)
        res.check("zero loss: every 204 delivered", unique == ok, (unique, ok))
        # A stop can cut at most the calls in flight (num_consumers, 10) after
        # the server handled them; those, and only those, may arrive twice.
        res.check("duplicates only from calls cut by a stop", st["duplicates"] <= 10 * stops,
                  (st["duplicates"], stops))
        if len(rss) >= 3:
            res.check("flat memory", rss[-1] <= 1.5 * rss[1], rss)
finally:
    srv.terminate()
    srv.wait()
res.finish()
PY
