# SPDX-License-Identifier: Apache-2.0
"""Fault-injection suite: drives the real pprofgate binary against the real
gRPC collector of tests/node/grpc_server.mjs and injects faults (destination
down, flapping, slow, every error code; SIGTERM/SIGKILL under load; half
bodies; 1 000 connections; gzip bombs; hostile and byte-flipped profiles; a
full spool and a full disk), checking each answer's status and that every
sample the gateway accepted (204) reaches the collector.

  python3 tests/faults/test_faults.py             short form (make test, < 2 min)
  python3 tests/faults/test_faults.py --long      every byte of every fixture, bigger loads
  python3 tests/faults/test_faults.py --only a,b  selected scenarios
  python3 tests/faults/test_faults.py --soak 1800 mixed load with faults (soak.sh)

A scenario that needs a feature the build does not have yet (the spool behind
sending_queue.storage, receiver TLS/auth) is reported as SKIP with the reason
and counted as skipped, never as passed. Features are detected by asking
`pprofgate validate` to accept a config that uses them.
"""

import asyncio
import gzip
import http.client
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "lib"))
from pg_harness import BIN, FIXTURES, SOURCE_DIR, Gateway, fixture, post  # noqa: E402

NODE_SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
LONG = "--long" in sys.argv


# ---- results --------------------------------------------------------------

class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name} {str(detail)[:600]}", flush=True)
        return bool(cond)

    def skip(self, name, reason):
        self.skipped += 1
        print(f"SKIP {name}: {reason}", flush=True)

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped", flush=True)
        sys.exit(1 if self.failed or (self.passed == 0 and self.skipped == 0) else 0)


# ---- the fake collector ------------------------------------------------------

class Collector:
    """tests/node/grpc_server.mjs in a child process, driven over its control port."""

    def __init__(self, *args, port=0):
        self.args = list(args)
        self.port = port
        self.proc = None

    def __enter__(self):
        cmd = ["node", NODE_SERVER, "--port", str(self.port)] + self.args
        env = dict(os.environ, PG_GRPC_STORE="0")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("grpc_server.mjs did not start")
        info = json.loads(line)
        self.port = info["grpc_port"]
        self.control = info["control_port"]
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return False

    def _call(self, method, path, obj=None):
        data = json.dumps(obj).encode() if obj is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(f"http://127.0.0.1:{self.control}{path}", data=data,
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def stats(self):
        return self._call("GET", "/stats")

    def mode(self, **kw):
        return self._call("POST", "/mode", kw)

    def stop(self):
        self._call("POST", "/stop")

    def start(self):
        self._call("POST", "/start")

    def reset(self):
        self._call("POST", "/reset")

    def wait_samples(self, want, timeout):
        """Polls until at least @want samples arrived; returns the final stats."""
        deadline = time.time() + timeout
        s = self.stats()
        while s["samples"] < want and time.time() < deadline:
            time.sleep(0.1)
            s = self.stats()
        return s


# ---- fixtures and bodies ---------------------------------------------------------

def load_bodies():
    """(name, raw pprof bytes) for every fixture we have."""
    out = []
    for sub, names in (("pprof/go", None), ("pprof/edge", None), ("sdk", None)):
        d = os.path.join(FIXTURES, sub)
        if not os.path.isdir(d):
            continue
        for n in sorted(os.listdir(d)):
            p = os.path.join(d, n)
            if n.endswith(".json") or not os.path.isfile(p):
                continue
            data = open(p, "rb").read()
            while data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            out.append((f"{sub}/{n}", data))
    return out


def gz(data):
    return gzip.compress(data, compresslevel=1, mtime=0)


def push(port, raw, extra=None, timeout=15):
    """POSTs one gzip'd pprof; returns (status, headers, body); status 0 = no answer."""
    h = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}
    h.update(extra or {})
    try:
        return post(port, "/v1/pprof", gz(raw), h, timeout=timeout)
    except (OSError, http.client.HTTPException) as e:
        return 0, {}, str(e).encode()


# A tiny protobuf writer for hostile pprof profiles.
def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wt, payload):
    return _varint(num << 3 | wt) + payload


def _ld(num, data):
    return _field(num, 2, _varint(len(data)) + data)


def _vi(num, v):
    return _field(num, 0, _varint(v))


def _packed(num, values):
    return _ld(num, b"".join(_varint(v) for v in values))


def make_pprof(n_samples=1, depth=1, n_funcs=None, n_strings=0, bad_ref=False):
    """A valid (unless bad_ref) pprof: @n_samples samples of @depth frames each."""
    n_funcs = n_funcs or max(depth, 1)
    strings = [b"", b"samples", b"count", b"cpu", b"nanoseconds", b"main.go"]
    body = bytearray()
    body += _ld(1, _vi(1, 1) + _vi(2, 2))            # sample_type samples/count
    for f in range(1, n_funcs + 1):
        strings.append(b"fn%d" % f)
        name = len(strings) - 1
        body += _ld(5, _vi(1, f) + _vi(2, name) + _vi(3, name) + _vi(4, 5))
        body += _ld(4, _vi(1, f) + _vi(3, 0x1000 + f) + _ld(4, _vi(1, f) + _vi(2, f)))
    for s in range(n_samples):
        locs = [((s + i) % n_funcs) + 1 for i in range(depth)]
        if bad_ref:
            locs[0] = n_funcs + 1000
        body += _ld(2, _packed(1, locs) + _packed(2, [s % 7 + 1]))
    for i in range(n_strings):
        strings.append(b"extra-string-%d" % i)
    for s in strings:
        body += _ld(6, s)
    body += _ld(11, _vi(1, 3) + _vi(2, 4))           # period_type cpu/nanoseconds
    body += _vi(12, 10000000)
    body += _vi(9, 1700000000000000000)
    return bytes(body)


# ---- gateway configs -------------------------------------------------------------

def gw_config(grpc_port, spool_dir=None, processors="", server_extra="", queue_extra="",
              extra_top=""):
    ext = ""
    svc_ext = ""
    storage = ""
    if spool_dir is not None:
        ext = f"""
extensions:
  file_storage:
    directory: {spool_dir}
    fsync: always
"""
        svc_ext = "  extensions: [file_storage]\n"
        storage = "      storage: file_storage\n"
    procs_def = ""
    procs_use = ""
    if processors:
        procs_def = "processors:\n" + processors
        procs_use = "      processors: [memory_limiter]\n"
    return f"""{ext}
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      read_timeout: 3s
      read_header_timeout: 3s
{server_extra}
{procs_def}
exporters:
  otlp:
    endpoint: 127.0.0.1:{grpc_port}
    tls: {{insecure: true}}
    timeout: 5s
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 300s
    sending_queue:
      queue_size: 5000
{storage}{queue_extra}
{extra_top}
service:
{svc_ext}  pipelines:
    profiles:
      receivers: [pprof]
{procs_use}      exporters: [otlp]
  telemetry:
    logs: {{level: info}}
"""


def validates(text):
    """True when `pprofgate validate` accepts @text (feature detection)."""
    d = tempfile.mkdtemp(prefix="pg-faults-v-")
    try:
        p = os.path.join(d, "c.yaml")
        with open(p, "w") as f:
            f.write(text.replace("{tmp}", d))
        open(os.path.join(d, "token"), "w").write("t0k3n\n")
        r = subprocess.run([BIN, "validate", "--config", p], capture_output=True, timeout=20)
        return r.returncode == 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Features:
    def __init__(self):
        self.spool = validates(gw_config(4317, spool_dir="{tmp}/spool"))
        self.rx_auth = validates(gw_config(4317, server_extra="      auth:\n"
                                           "        bearer_token_file: {tmp}/token\n"))
        self.rx_limits = validates(gw_config(4317, server_extra="      max_connections: 100\n"))
        self.memory_limiter = validates(gw_config(4317, processors="  memory_limiter:\n"
                                                  "    limit_mib: 100\n"))


# ---- load helpers ------------------------------------------------------------

class Tally:
    """Thread-safe counts of answers and accepted samples."""

    def __init__(self):
        self.lock = threading.Lock()
        self.status = {}
        self.accepted_samples = 0
        self.reasons = {}

    def add(self, status, samples, body=b""):
        with self.lock:
            self.status[status] = self.status.get(status, 0) + 1
            if status == 204:
                self.accepted_samples += samples
            elif status:
                reason = f"{status} " + re.sub(rb"[0-9.]+", b"N", body[:40]).decode(
                    "utf-8", "replace").strip()
                self.reasons[reason] = self.reasons.get(reason, 0) + 1
            else:
                self.reasons["no answer"] = self.reasons.get("no answer", 0) + 1


def load(port, bodies, calib, seconds, threads, tally, stop_evt=None, max_pushes=None):
    """Posts random fixtures from @threads threads for @seconds (or until stop_evt,
    or until @max_pushes answers in total)."""
    bad = []

    def worker(seed):
        rnd = random.Random(seed)
        end = time.time() + seconds
        while time.time() < end and not (stop_evt and stop_evt.is_set()):
            if max_pushes is not None and sum(tally.status.values()) >= max_pushes:
                break
            name, raw = rnd.choice(bodies)
            st, hdrs, body = push(port, raw, timeout=10)
            tally.add(st, calib.get(name, 0), body)
            if st == 503 and "retry-after" not in hdrs:
                bad.append("503 without Retry-After")
            if st == 503:
                time.sleep(0.05)
            if st == 0:
                time.sleep(0.05)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return bad


def calibrate(bodies):
    """Samples the collector receives for each fixture, measured through the gateway."""
    calib = {}
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            for name, raw in bodies:
                before = col.stats()["samples"]
                st, _, body = push(gw.port, raw)
                if st != 204:
                    continue
                # Wait until this push arrived (requests counter moves).
                deadline = time.time() + 10
                req0 = col.stats()["requests"]
                while time.time() < deadline:
                    s = col.stats()
                    if s["samples"] > before or s["requests"] > req0:
                        break
                    time.sleep(0.05)
                time.sleep(0.15)
                calib[name] = col.stats()["samples"] - before
    return calib


def count_samples(ctx, name, raw):
    """Calibrated sample count for a generated body (cached by name)."""
    if name not in ctx.calib:
        ctx.calib.update(calibrate([(name, raw)]))
    return ctx.calib.get(name, 0)


# ---- scenarios ---------------------------------------------------------------

def expect_delivered(res, name, col, tally, timeout=30, allow_dups=False):
    s = col.wait_samples(tally.accepted_samples, timeout)
    time.sleep(0.3)
    s = col.stats()
    ok = s["samples"] >= tally.accepted_samples if allow_dups else \
        s["samples"] == tally.accepted_samples
    res.check(f"{name}: accepted samples delivered (accepted={tally.accepted_samples} "
              f"delivered={s['samples']} dup_requests={s['duplicates']} answers={tally.status})",
              ok and tally.accepted_samples > 0, s)
    return s


def sc_grpc_unavailable(ctx):
    with Collector("--mode", "unavailable", "--fail-first", "5") as col:
        with Gateway(gw_config(col.port)) as gw:
            t = Tally()
            load(gw.port, ctx.bodies, ctx.calib, 2, 4, t)
            expect_delivered(ctx.res, "grpc UNAVAILABLE x5 then ok", col, t)
            ctx.res.check("grpc UNAVAILABLE: all answers 204", set(t.status) == {204}, t.status)


def sc_grpc_down_at_start(ctx):
    with Collector("--start-delay-ms", "3000") as col:
        with Gateway(gw_config(col.port)) as gw:
            t = Tally()
            load(gw.port, ctx.bodies, ctx.calib, 1.5, 3, t)
            ctx.res.check("grpc down at start: pushes accepted meanwhile", t.status.get(204, 0) > 0,
                          t.status)
            expect_delivered(ctx.res, "grpc down at start, up after 3s", col, t, timeout=30)


def sc_grpc_flapping(ctx):
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            t = Tally()
            stop = threading.Event()

            def flap():
                while not stop.is_set():
                    col.stop()
                    time.sleep(0.4)
                    col.start()
                    time.sleep(0.4)

            f = threading.Thread(target=flap)
            f.start()
            load(gw.port, ctx.bodies, ctx.calib, 8 if LONG else 3, 4, t)
            stop.set()
            f.join()
            col.start()
            expect_delivered(ctx.res, "grpc flapping every 0.4s", col, t, timeout=40,
                             allow_dups=True)


def sc_grpc_slow(ctx):
    with Collector("--mode", "slow", "--delay-ms", "400") as col:
        with Gateway(gw_config(col.port)) as gw:
            t = Tally()
            # 10 consumers x 400 ms = 25 exports/s: 300 pushes drain in ~12 s, so
            # answers within 8 s (~1 s unloaded) prove nobody waited on an export.
            t0 = time.time()
            load(gw.port, ctx.bodies, ctx.calib, 10, 4, t, max_pushes=300)
            took = time.time() - t0
            ctx.res.check(f"grpc slow (400ms): receiver never waits on the exporter (300 pushes "
                          f"answered in {took:.1f}s)", set(t.status) <= {204, 503} and took < 8,
                          t.status)
            expect_delivered(ctx.res, "grpc slow", col, t, timeout=40)


def sc_block_on_overflow(ctx):
    """sending_queue.block_on_overflow: with the queue full, a push waits for room
    (answered 204 later, delivered once) instead of a 503 at once; write_timeout
    bounds the wait. The real SDK client never retries a 503."""
    body = make_pprof(n_samples=3)

    def burst(port, n):
        t = Tally()

        def one():
            st, _, b = push(port, body, timeout=30)
            t.add(st, 3, b)
        ths = [threading.Thread(target=one) for _ in range(n)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(60)
        return t

    def cfg(port, block, write_timeout):
        return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      write_timeout: {write_timeout}
exporters:
  otlp:
    endpoint: 127.0.0.1:{port}
    tls: {{insecure: true}}
    timeout: 5s
    sending_queue: {{queue_size: 1, num_consumers: 1, block_on_overflow: {block}}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""
    # one consumer, 300 ms per export, room for 2: 8 pushes at once overflow
    for block, wt, name in ((False, "30s", "off"), (True, "30s", "on"),
                            (True, "700ms", "on, write_timeout 700ms")):
        with Collector("--mode", "slow", "--delay-ms", "300") as col:
            with Gateway(cfg(col.port, "true" if block else "false", wt)) as gw:
                t = burst(gw.port, 8)
                if not block:
                    ctx.res.check(f"block_on_overflow {name}: a full queue answers 503 at once",
                                  t.status.get(503, 0) > 0 and t.status.get(204, 0) > 0,
                                  (t.status, t.reasons))
                elif wt == "30s":
                    ctx.res.check(f"block_on_overflow {name}: every push waits and gets 204",
                                  t.status == {204: 8}, (t.status, t.reasons))
                else:
                    held = [r for r in t.reasons if r.startswith("503") and "queue is full" in r]
                    ctx.res.check(f"block_on_overflow {name}: held past write_timeout -> 503, "
                                  f"the rest 204", t.status.get(204, 0) > 0 and
                                  t.status.get(503, 0) > 0 and len(held) > 0, (t.status, t.reasons))
                expect_delivered(ctx.res, f"block_on_overflow {name}", col, t, timeout=30)
                if block:
                    ctx.res.check(f"block_on_overflow {name}: the hold is logged",
                                  "holding requests" in gw.log(), gw.log()[-600:])


def sc_grpc_codes(ctx):
    """Retryable codes end delivered; permanent ones are dropped once, not retried."""
    cases = [("exhausted_retryinfo", True), ("cut", True), ("invalid", False),
             ("exhausted", False)]
    for mode, delivered in cases:
        with Collector("--mode", mode, "--fail-first", "3", "--retry-delay-ms", "200") as col:
            with Gateway(gw_config(col.port)) as gw:
                t = Tally()
                n = 0
                for name, raw in ctx.bodies[:6]:
                    st, _, _ = push(gw.port, raw)
                    t.add(st, ctx.calib.get(name, 0))
                    n += st == 204
                if delivered:
                    expect_delivered(ctx.res, f"grpc {mode} on the first 3 calls", col, t,
                                     allow_dups=(mode == "cut"))
                else:
                    time.sleep(1.5)
                    s = col.stats()
                    ctx.res.check(f"grpc {mode}: dropped without retry (exports={n} "
                                  f"calls={s['calls']} delivered={s['samples']})",
                                  s["samples"] == 0 and 0 < s["calls"] <= n, s)
                    ctx.res.check(f"grpc {mode}: the drop is logged with the code",
                                  gw.wait_log(r"(?i)(invalid_argument|resource_exhausted|"
                                              r"code[= ]+(3|8))", 3) is not None,
                                  gw.log()[-800:])


def sc_sigterm_under_load(ctx):
    """SIGTERM drains within the exporter's shutdown_timeout. With the spool,
    what could not be sent in time stays on disk and is sent after a restart;
    without it, the load is kept small enough to drain in time."""
    spool = tempfile.mkdtemp(prefix="pg-faults-spool-") if ctx.feat.spool else None
    try:
        with Collector("--mode", "slow", "--delay-ms", "100") as col:
            cfg = gw_config(col.port, spool_dir=spool).replace(
                "    timeout: 5s\n", "    timeout: 5s\n    shutdown_timeout: 2s\n")
            gw = Gateway(cfg).start()
            try:
                t = Tally()
                stop = threading.Event()
                th = threading.Thread(target=load, args=(
                    gw.port, ctx.bodies, ctx.calib, 10, 4, t, stop,
                    None if spool else 100))
                th.start()
                time.sleep(1.5)
                rc = gw.stop(signal.SIGTERM, timeout=20)
                stop.set()
                th.join()
                ctx.res.check("SIGTERM under load: exit code 0", rc == 0, f"rc={rc}")
            finally:
                gw.kill()
            if spool:
                col.mode(mode="ok")
                gw = Gateway(cfg).start()
                try:
                    s = expect_delivered(ctx.res, "SIGTERM under load, then restart: the spool "
                                         "delivers the rest", col, t, timeout=40,
                                         allow_dups=True)
                    print(f"     duplicates after SIGTERM: {s['samples'] - t.accepted_samples} "
                          f"samples", flush=True)
                finally:
                    gw.kill()
            else:
                expect_delivered(ctx.res, "SIGTERM under load (drained before exit)", col, t,
                                 timeout=5)
    finally:
        if spool:
            shutil.rmtree(spool, ignore_errors=True)


def sc_sigkill_restart(ctx):
    if not ctx.feat.spool:
        ctx.res.skip("SIGKILL under load + restart", "sending_queue.storage / file_storage not "
                     "integrated in this build (spool exists in src/storage/spool.c)")
        return
    spool = tempfile.mkdtemp(prefix="pg-faults-spool-")
    try:
        with Collector("--mode", "slow", "--delay-ms", "300") as col:
            cfg = gw_config(col.port, spool_dir=spool)
            t = Tally()
            for rnd in range(3 if LONG else 1):
                gw = Gateway(cfg).start()
                stop = threading.Event()
                th = threading.Thread(target=load, args=(gw.port, ctx.bodies, ctx.calib, 10, 4,
                                                         t, stop))
                th.start()
                time.sleep(2)
                gw.proc.kill()          # SIGKILL: no drain, no flush
                gw.proc.wait()
                stop.set()
                th.join()
                gw.kill()
            col.mode(mode="ok")
            gw = Gateway(cfg).start()
            try:
                s = expect_delivered(ctx.res, "SIGKILL under load, restart replays the spool",
                                     col, t, timeout=60, allow_dups=True)
                print(f"     duplicates after kill -9: {s['samples'] - t.accepted_samples} "
                      f"samples, {s['duplicates']} requests", flush=True)
            finally:
                gw.kill()
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def sc_spool_full(ctx):
    if not ctx.feat.spool:
        ctx.res.skip("spool full -> 503 Retry-After", "sending_queue.storage not integrated")
        return
    big = make_pprof(n_samples=3000, depth=8, n_funcs=400)
    per = count_samples(ctx, "gen/big3000", big)
    spool = tempfile.mkdtemp(prefix="pg-faults-spool-")
    try:
        with Collector() as col:
            col.stop()
            cfg = gw_config(col.port, spool_dir=spool).replace(
                "    fsync: always\n", "    fsync: always\n    max_size: 1MiB\n")
            with Gateway(cfg) as gw:
                t = Tally()
                for _ in range(400):
                    st, h, body = push(gw.port, big)
                    t.add(st, per, body)
                    if st == 503:
                        ctx.res.check("spool full: 503 carries Retry-After", "retry-after" in h, h)
                        break
                ctx.res.check(f"spool full: 503 once the 1 MiB cap is reached ({t.status} "
                              f"{t.reasons})",
                              t.status.get(503, 0) == 1 and set(t.status) <= {204, 503}, t.reasons)
                col.start()
                expect_delivered(ctx.res, "spool full: accepted pushes delivered once the "
                                 "collector is back", col, t, timeout=40)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def sc_disk_full(ctx):
    if not ctx.feat.spool:
        ctx.res.skip("disk full under the spool", "sending_queue.storage not integrated")
        return
    mnt = tempfile.mkdtemp(prefix="pg-faults-tmpfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", mnt],
                       capture_output=True)
    if r.returncode != 0:
        ctx.res.skip("disk full under the spool", "cannot mount a small tmpfs here: "
                     + r.stderr.decode().strip())
        os.rmdir(mnt)
        return
    try:
        big = make_pprof(n_samples=3000, depth=8, n_funcs=400)
        per = count_samples(ctx, "gen/big3000", big)
        with Collector() as col:
            col.stop()
            with Gateway(gw_config(col.port, spool_dir=mnt + "/spool")) as gw:
                t = Tally()
                for _ in range(400):
                    st, h, body = push(gw.port, big)
                    t.add(st, per, body)
                    if st != 204:
                        break
                ctx.res.check("disk full: 503 + Retry-After, no 500 (answers %s %s)"
                              % (t.status, t.reasons),
                              t.status.get(503, 0) == 1 and set(t.status) <= {204, 503}, t.reasons)
                col.start()
                expect_delivered(ctx.res, "disk full: accepted data delivered after", col, t,
                                 timeout=40, allow_dups=True)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        shutil.rmtree(mnt, ignore_errors=True)


def sc_half_body(ctx):
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            raw = gz(ctx.bodies[0][1])
            socks = []
            t0 = time.time()
            for _ in range(20):
                s = socket.create_connection(("127.0.0.1", gw.port))
                s.sendall(b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(raw) + raw[: len(raw) // 2])
                socks.append(s)
            # The loop is not blocked by the stalled clients.
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check("half body + stall: other clients still served", st == 204, st)
            closed = 0
            for s in socks:
                s.settimeout(10)
                try:
                    data = s.recv(4096)
                    closed += 1 if (data == b"" or b" 408 " in data or b" 400 " in data) else 0
                except OSError:
                    closed += 1
                s.close()
            took = time.time() - t0
            ctx.res.check(f"half body + stall: all 20 connections closed by the read timeout "
                          f"({closed}/20 in {took:.1f}s)", closed == 20 and took < 12, took)


async def _one_conn(port, body, results):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 20)
        w.write(b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body))
        await asyncio.sleep(0.5)  # hold all 1 000 open at once
        w.write(body)
        await w.drain()
        line = await asyncio.wait_for(r.readline(), 30)
        w.close()
        m = re.match(rb"HTTP/1\.[01] (\d+)", line)
        results.append(int(m.group(1)) if m else 0)
    except (OSError, asyncio.TimeoutError):
        results.append(0)


def sc_thousand_connections(ctx):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 8192
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    except (ValueError, OSError):
        pass
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 2200:
        ctx.res.skip("1000 concurrent connections", "cannot raise ulimit -n to 2200 here")
        return
    name, raw = ctx.bodies[0]
    body = gz(raw)
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:   # inherits the raised limit
            results = []

            async def main():
                await asyncio.gather(*[_one_conn(gw.port, body, results) for _ in range(1000)])

            asyncio.run(main())
            counts = {s: results.count(s) for s in set(results)}
            t = Tally()
            for s in results:
                t.add(s, ctx.calib.get(name, 0))
            ctx.res.check(f"1000 concurrent connections: every one answered 204/503 ({counts})",
                          set(counts) <= {204, 503} and counts.get(204, 0) > 0, counts)
            expect_delivered(ctx.res, "1000 concurrent connections", col, t, timeout=40)
            st, _, _ = push(gw.port, raw)
            ctx.res.check("1000 concurrent connections: still serving after", st == 204, st)


def _bomb(inner_bytes, layers):
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    out = [co.compress(chunk) for _ in range(inner_bytes >> 20)]
    data = b"".join(out) + co.flush()
    for _ in range(layers - 1):
        data = gzip.compress(data, 9, mtime=0)
    return data


def sc_gzip_bombs(ctx):
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            cases = [("1 GiB in one gzip layer", _bomb(1 << 30 if LONG else 256 << 20, 1),
                      {"Content-Encoding": "gzip"}),
                     ("gzip inside gzip", _bomb(256 << 20, 2), {"Content-Encoding": "gzip"}),
                     ("bomb body with identity encoding (gzip magic)", _bomb(256 << 20, 1), {})]
            for label, body, hdrs in cases:
                t0 = time.time()
                st, _, msg = post(gw.port, "/v1/pprof", body, hdrs, timeout=30)
                ctx.res.check(f"gzip bomb {label} ({len(body)} bytes): 413 in "
                              f"{time.time() - t0:.2f}s", st == 413, (st, msg[:200]))
            hwm = gw.hwm_kb() or 0
            ctx.res.check(f"gzip bombs: peak RSS {hwm // 1024} MiB stays < 120 MiB",
                          0 < hwm < 120 * 1024, hwm)
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check("gzip bombs: still serving", st == 204, st)


def sc_hostile_profiles(ctx):
    scale = 4 if LONG else 1
    cases = [
        ("deep stack (100k frames)", make_pprof(1, depth=100000 * scale), {204, 400, 413}),
        ("wide (200k samples)", make_pprof(200000 * scale, depth=1, n_funcs=50), {204, 413}),
        ("many strings (300k)", make_pprof(10, depth=3, n_strings=300000 * scale), {204, 413}),
        ("dangling location id", make_pprof(5, depth=3, bad_ref=True), {400}),
        ("empty body", b"", {400}),
        ("truncated varint", b"\x0a\xff\xff\xff\xff", {400}),
    ]
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            for label, raw, ok in cases:
                st, _, msg = push(gw.port, raw, timeout=60)
                ctx.res.check(f"hostile profile, {label}: {st} in {sorted(ok)}", st in ok,
                              msg[:200])
            ctx.res.check("hostile profiles: gateway alive", gw.proc.poll() is None)
            hwm = gw.hwm_kb() or 0
            print(f"     hostile profiles: peak RSS {hwm // 1024} MiB", flush=True)
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check("hostile profiles: still serving", st == 204, st)


def sc_mutation_pass(ctx):
    rnd = random.Random(6)
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            counts = {}
            bad = []
            n = 0
            for name, raw in ctx.bodies:
                if LONG:
                    positions = range(len(raw))
                else:
                    k = min(len(raw), 24)
                    positions = sorted(set([i * len(raw) // k for i in range(k)] +
                                           [rnd.randrange(len(raw)) for _ in range(8)]))
                for pos in positions:
                    m = bytearray(raw)
                    m[pos] ^= 0xFF
                    st, _, msg = push(gw.port, bytes(m))
                    counts[st] = counts.get(st, 0) + 1
                    n += 1
                    if st not in (204, 400, 413):
                        bad.append((name, pos, st, msg[:80]))
                    if gw.proc.poll() is not None:
                        bad.append((name, pos, "gateway died"))
                        break
            ctx.res.check(f"mutation pass: {n} byte-flipped bodies answered 204/400/413 "
                          f"({counts})", not bad and n > 0, bad[:5])
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check("mutation pass: still serving", st == 204, st)


def sc_memory_flood(ctx):
    if not ctx.feat.memory_limiter:
        ctx.res.skip("memory flood", "memory_limiter processor not in this build")
        return
    limit = 96
    big = make_pprof(20000, depth=16, n_funcs=2000)
    per = count_samples(ctx, "gen/big20000", big)
    procs = (f"  memory_limiter:\n    limit_mib: {limit}\n    spike_limit_mib: 32\n"
             "    check_interval: 100ms\n")
    with Collector() as col:
        with Gateway(gw_config(col.port, processors=procs)) as gw:
            t = Tally()
            load(gw.port, [("big", big)], {"big": per}, 8 if LONG else 4, 12, t)
            hwm = (gw.hwm_kb() or 0) // 1024
            ctx.res.check(f"memory flood: answers 204/503 only ({t.status}, {t.reasons})",
                          set(t.status) <= {204, 503} and t.status.get(204, 0) > 0, t.reasons)
            ctx.res.check(f"memory flood: peak RSS {hwm} MiB <= limit_mib {limit} + 32",
                          0 < hwm <= limit + 32, hwm)
            # Big exports can outlive the 5 s attempt timeout at the collector and be
            # retried: at-least-once, so duplicates are allowed (and printed).
            expect_delivered(ctx.res, "memory flood", col, t, timeout=60, allow_dups=True)


def sc_receiver_auth(ctx):
    if not ctx.feat.rx_auth:
        ctx.res.skip("receiver bearer auth (401 + WWW-Authenticate)",
                     "server.auth not wired into the receiver in this build "
                     "(helpers exist in src/http/auth.c)")
        return
    with Collector() as col:
        d = tempfile.mkdtemp(prefix="pg-faults-auth-")
        tok = os.path.join(d, "token")
        open(tok, "w").write("s3cret\n")
        cfg = gw_config(col.port, server_extra=f"      auth:\n        bearer_token_file: {tok}\n")
        try:
            with Gateway(cfg) as gw:
                raw = ctx.bodies[0][1]
                st, h, _ = push(gw.port, raw)
                ctx.res.check("auth: no token -> 401 + WWW-Authenticate",
                              st == 401 and "www-authenticate" in h, (st, h))
                st, _, _ = push(gw.port, raw, {"Authorization": "Bearer wrong"})
                ctx.res.check("auth: wrong token -> 401", st == 401, st)
                st, _, _ = push(gw.port, raw, {"Authorization": "Bearer s3cret"})
                ctx.res.check("auth: right token -> 204", st == 204, st)
        finally:
            shutil.rmtree(d, ignore_errors=True)


def _make_certs(d):
    sh = lambda c: subprocess.run(c, shell=True, cwd=d, capture_output=True).returncode == 0
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
    ok = sh(f"openssl req -x509 {ec} -keyout ca.key -out ca.crt -days 2 -subj /CN=ca")
    for n, cn in (("server", "localhost"), ("client", "client")):
        ext = ("-extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1')"
               if n == "server" else "")
        ok = ok and sh(f"openssl req {ec} -keyout {n}.key -out {n}.csr -subj /CN={cn}")
        ok = ok and subprocess.run(
            ["bash", "-c", f"openssl x509 -req -in {n}.csr -CA ca.crt -CAkey ca.key "
                           f"-CAcreateserial -out {n}.crt -days 2 {ext}"],
            cwd=d, capture_output=True).returncode == 0
    return ok


def sc_receiver_tls(ctx):
    if not ctx.feat.rx_auth:
        ctx.res.skip("receiver TLS / mTLS", "server.tls not wired into the receiver in this build "
                     "(helpers exist in src/http/tls.c)")
        return
    import ssl
    d = tempfile.mkdtemp(prefix="pg-faults-tls-")
    try:
        if not _make_certs(d):
            ctx.res.check("receiver TLS: certificates made with the openssl CLI", False)
            return
        with Collector() as col:
            cfg = gw_config(col.port, server_extra=(
                f"      tls:\n        cert_file: {d}/server.crt\n        key_file: {d}/server.key\n"
                f"        client_ca_file: {d}/ca.crt\n        min_version: \"1.2\"\n"))
            with Gateway(cfg) as gw:
                body = gz(ctx.bodies[0][1])
                hdrs = {"Content-Encoding": "gzip"}

                def tls_post(cert):
                    c = ssl.create_default_context(cafile=f"{d}/ca.crt")
                    if cert:
                        c.load_cert_chain(f"{d}/client.crt", f"{d}/client.key")
                    try:
                        conn = http.client.HTTPSConnection("127.0.0.1", gw.port, context=c,
                                                           timeout=10)
                        conn.request("POST", "/v1/pprof", body=body, headers=hdrs)
                        return conn.getresponse().status
                    except (OSError, ssl.SSLError, http.client.HTTPException) as e:
                        return repr(e)[:80]

                st = tls_post(True)
                ctx.res.check(f"receiver mTLS: client with a certificate -> 204 ({st})", st == 204)
                st = tls_post(False)
                ctx.res.check(f"receiver mTLS: client without a certificate refused ({st})",
                              st != 204)
                st, _, _ = push(gw.port, ctx.bodies[0][1])
                ctx.res.check(f"receiver TLS: plaintext HTTP gets no answer ({st})", st != 204)
                st = tls_post(True)
                ctx.res.check(f"receiver TLS: still serving after bad clients ({st})", st == 204)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def sc_header_flood(ctx):
    if not ctx.feat.rx_auth:
        ctx.res.skip("header-count cap", "max_request_headers not in this build")
        return
    with Collector() as col:
        with Gateway(gw_config(col.port)) as gw:
            many = {f"X-Junk-{i}": "x" for i in range(500)}
            st, _, msg = push(gw.port, ctx.bodies[0][1], many)
            ctx.res.check(f"500 header lines -> 431 ({st})", st == 431, msg[:120])
            big = {"X-Big": "y" * (2 << 20)}
            st, _, msg = push(gw.port, ctx.bodies[0][1], big)
            ctx.res.check(f"a 2 MiB header -> refused, not served ({st})", st != 204, msg[:120])
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check("header floods: still serving", st == 204, st)


def _raw_request(sock, body):
    sock.sendall(b"POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n")[0].decode("latin-1")
    m = re.match(r"HTTP/1\.[01] (\d+)", head)
    clen = re.search(r"(?i)content-length: *(\d+)", head)
    rest = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    want = int(clen.group(1)) if clen else 0
    while len(rest) < want:
        chunk = sock.recv(4096)
        if not chunk:
            break
        rest += chunk
    return (int(m.group(1)) if m else 0), head.lower()


def sc_connection_limits(ctx):
    if not ctx.feat.rx_limits:
        ctx.res.skip("max_connections / max_requests_per_connection",
                     "not in the receiver of this build")
        return
    body = gz(ctx.bodies[0][1])
    # One loop: which connections are refused follows the accept order, which
    # over several loops is the kernel's (test_receiver_loops checks the caps
    # across loops by count).
    extra = "      max_connections: 3\n      max_requests_per_connection: 3\n      loops: 1\n"
    with Collector() as col:
        with Gateway(gw_config(col.port, server_extra=extra)) as gw:
            socks = [socket.create_connection(("127.0.0.1", gw.port), timeout=10)
                     for _ in range(5)]
            answers = [_raw_request(s, body) for s in socks]
            codes = [a[0] for a in answers]
            ctx.res.check(f"max_connections 3: connections 4 and 5 get 503 + close ({codes})",
                          codes == [204, 204, 204, 503, 503] and
                          all("retry-after" in a[1] and "connection: close" in a[1]
                              for a in answers[3:]), answers[3:])
            # Keep-alive on the first connection: the 3rd request carries Connection: close.
            r2 = _raw_request(socks[0], body)
            r3 = _raw_request(socks[0], body)
            ctx.res.check(f"max_requests_per_connection 3: 2nd keeps alive, 3rd closes "
                          f"({r2[0]}, {r3[0]})", r2[0] == 204 and "connection: close" not in r2[1]
                          and r3[0] == 204 and "connection: close" in r3[1], (r2, r3))
            for s in socks:
                s.close()
            time.sleep(0.3)
            st, _, _ = push(gw.port, ctx.bodies[0][1])
            ctx.res.check(f"connections freed on close: a new one is served ({st})", st == 204)


SCENARIOS = [
    ("grpc_unavailable", sc_grpc_unavailable),
    ("grpc_down_at_start", sc_grpc_down_at_start),
    ("grpc_flapping", sc_grpc_flapping),
    ("grpc_slow", sc_grpc_slow),
    ("grpc_codes", sc_grpc_codes),
    ("block_on_overflow", sc_block_on_overflow),
    ("sigterm", sc_sigterm_under_load),
    ("sigkill", sc_sigkill_restart),
    ("spool_full", sc_spool_full),
    ("disk_full", sc_disk_full),
    ("half_body", sc_half_body),
    ("thousand", sc_thousand_connections),
    ("gzip_bombs", sc_gzip_bombs),
    ("hostile", sc_hostile_profiles),
    ("mutation", sc_mutation_pass),
    ("memory_flood", sc_memory_flood),
    ("auth", sc_receiver_auth),
    ("tls", sc_receiver_tls),
    ("headers", sc_header_flood),
    ("conn_limits", sc_connection_limits),
]


# ---- soak (long form) ------------------------------------------------------------

def soak(ctx, seconds):
    """Mixed load with a fault every 30 s; prints accepted/delivered/refused/peak RSS."""
    spool = tempfile.mkdtemp(prefix="pg-soak-spool-") if ctx.feat.spool else None
    faults = ["ok", "stop", "slow", "unavailable", "cut", "ok"]
    if spool:
        faults.append("sigkill")
    t = Tally()
    peak = 0
    with Collector() as col:
        cfg = gw_config(col.port, spool_dir=spool)
        gw = Gateway(cfg).start()
        end = time.time() + seconds
        stop = threading.Event()
        gw_lock = threading.Lock()
        port = [gw.port]

        def loader():
            while time.time() < end:
                load(port[0], ctx.bodies, ctx.calib, 5, 4, t)

        lt = threading.Thread(target=loader)
        lt.start()
        i = 0
        while time.time() < end:
            f = faults[i % len(faults)]
            i += 1
            print(f"soak t={int(seconds - (end - time.time()))}s fault={f} "
                  f"accepted={t.accepted_samples} answers={t.status}", flush=True)
            if f == "stop":
                col.stop()
                time.sleep(10)
                col.start()
            elif f == "sigkill":
                with gw_lock:
                    peak = max(peak, gw.hwm_kb() or 0)
                    gw.proc.kill()
                    gw.proc.wait()
                    gw.kill()
                    gw = Gateway(cfg).start()
                    port[0] = gw.port
            elif f in ("slow", "unavailable", "cut"):
                col.mode(mode=f, fail_first=50, delay_ms=300)
                time.sleep(10)
                col.mode(mode="ok")
            peak = max(peak, gw.hwm_kb() or 0)
            time.sleep(max(0, min(30, end - time.time())))
        lt.join()
        col.mode(mode="ok")
        peak = max(peak, gw.hwm_kb() or 0)
        s = col.wait_samples(t.accepted_samples, 120)
        rc = gw.stop()
        print(f"soak result: accepted={t.accepted_samples} delivered={s['samples']} "
              f"duplicate_requests={s['duplicates']} refused={t.reasons} peak_rss={peak // 1024}MiB "
              f"exit={rc}", flush=True)
        ctx.res.check("soak: accepted == delivered (duplicates allowed after kill -9)",
                      s["samples"] >= t.accepted_samples > 0, s)
    if spool:
        shutil.rmtree(spool, ignore_errors=True)


class Ctx:
    pass


def main():
    res = Results()
    if not os.path.exists(BIN):
        print(f"SKIP all: {BIN} not built")
        res.skip("fault suite", f"{BIN} not built")
        res.finish()
    if shutil.which("node") is None or not os.path.exists(NODE_SERVER):
        res.skip("fault suite", "node or tests/node/grpc_server.mjs missing")
        res.finish()
    if not validates(gw_config(4317)):
        res.skip("fault suite", "this build has no otlp exporter yet")
        res.finish()
    ctx = Ctx()
    ctx.res = res
    ctx.feat = Features()
    print(f"features: spool={ctx.feat.spool} receiver_auth={ctx.feat.rx_auth} "
          f"max_connections={ctx.feat.rx_limits} memory_limiter={ctx.feat.memory_limiter}",
          flush=True)
    ctx.bodies = load_bodies()
    if not ctx.bodies:
        res.check("fixtures present", False, FIXTURES)
        res.finish()
    ctx.calib = calibrate(ctx.bodies)
    # Keep the fixtures the gateway accepts for load (edge cases may be 400 on purpose).
    ctx.bodies = [(n, b) for n, b in ctx.bodies if n in ctx.calib]
    res.check(f"calibration: {len(ctx.calib)} fixtures accepted and delivered",
              len(ctx.calib) > 0 and sum(ctx.calib.values()) > 0, ctx.calib)
    if "--soak" in sys.argv:
        soak(ctx, int(sys.argv[sys.argv.index("--soak") + 1]))
        res.finish()
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    for name, fn in SCENARIOS:
        if only and name not in only:
            continue
        t0 = time.time()
        try:
            fn(ctx)
        except Exception as e:  # a crashed scenario is a failure, never a pass
            res.check(f"{name}: ran without an exception", False, repr(e))
        print(f"     ({name}: {time.time() - t0:.1f}s)", flush=True)
    res.finish()


if __name__ == "__main__":
    main()
