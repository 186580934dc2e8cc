#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile clients against the real binary, loopback only, every loop bounded.
Each attack asserts its outcome, and a well-behaved probe client (the real
SDK push, authenticated, from its own process and address, 127.0.0.2) runs
throughout and must never be refused (its p99 is printed against the 50 ms
goal, not asserted):

  slowloris headers and bodies (closed by their deadline), connection floods
  past max_connections_per_peer and max_connections (refused at accept), the
  fd headroom (a low RLIMIT_NOFILE caps connections, the health check still
  answers), unauthenticated large bodies (401 before any body byte, RSS
  flat), Expect: 100-continue without credentials (401, never 100), NUL /
  case / whitespace / duplicate token variants, failed-auth rate limiting,
  smuggling shapes (CL+TE, differing CLs, bad chunk sizes), pipelining,
  HTTP/1.0, long URLs and heads, and a flood of large bodies under
  memory_limiter (peak RSS <= limit_mib). Prints the figures it measured."""

import json
import os
import re
import resource
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "lib"))
from pg_harness import Gateway, Results, fixture, gzip_bytes, read  # noqa: E402
from hostile_lib import closed, conn, exchange, metric, read_response, trickle  # noqa: E402

SOURCE_DIR = os.environ.get("PG_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILD_DIR = os.environ.get("PG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
TOKEN = "s3cret-token-0123456789"
res = Results()
SMALL = gzip_bytes(read(fixture("debug/worked_example.pprof")))
# The probe (see Probe) and the large-body flood's load generator.
PROBE_BIN = os.path.join(BUILD_DIR, "bench", "flood_client")
with open(fixture("sdk/push0.json")) as f:
    SDK_ATTRS = json.load(f)["headers"]["otel-resource-attributes"]
FIGURES = []


def figure(text):
    FIGURES.append(text)
    print("     " + text, flush=True)


def config(server_extra="", processors="", extensions=""):
    procs = "\n      processors: [memory_limiter]" if processors else ""
    ext_list = "\n  extensions: [health_check]" if extensions else ""
    return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
      auth: {{bearer_token_file: "{{tmp}}/token"}}
{server_extra}
{processors}
{extensions}
exporters:
  debug:
    verbosity: basic
    output_paths: ["{{debug}}"]
service:{ext_list}
  pipelines:
    profiles:
      receivers: [pprof]{procs}
      exporters: [debug]
  telemetry:
    logs: {{level: info}}
"""


def gateway(cfg, **kw):
    gw = Gateway(cfg, **kw)
    with open(gw.path("token"), "w") as f:
        f.write(TOKEN + "\n")
    return gw


def request(body, token=TOKEN, extra=b"", path=b"/v1/pprof", cl=None):
    head = (b"POST " + path + b" HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n")
    if token is not None:
        head += b"Authorization: Bearer " + token.encode() + b"\r\n"
    head += b"Content-Length: %d\r\n" % (len(body) if cl is None else cl)
    return head + extra + b"\r\n" + body


class Probe:
    """bench/flood_client's probe in a process of its own (from 127.0.0.2,
    one thread, so neither the attackers' threads here nor their GIL delay
    it): the first real SDK push, authenticated, every 20 ms while the block
    runs."""

    def __init__(self, port, token=TOKEN):
        self.port, self.token = port, token
        self.lat, self.fail = [], []

    def __enter__(self):
        self.proc = subprocess.Popen([PROBE_BIN, "probe", str(self.port), fixture("sdk/push0.pprof.gz"),
                                      "127.0.0.2", self.token,
                                      "otel-resource-attributes: " + SDK_ATTRS],
                                     stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()  # "ready"
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *a):
        # At least a second of probing, however short the attack was.
        time.sleep(max(0.0, 1.0 - (time.monotonic() - self.t0)))
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        for line in out.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "ok":
                self.lat = [float(x) for x in rest.split()]
            elif kind == "fail":
                self.fail = rest.split()

    def p99_ms(self):
        if not self.lat:
            return float("inf")
        v = sorted(self.lat)
        return v[min(len(v) - 1, int(len(v) * 0.99))] * 1000


# The goal is a probe p99 under 50 ms: printed with every figure here and
# measured by bench/flood.sh. Asserted is that the probe is served
# throughout and never refused; its latency is not asserted (house rule: no
# timed assertions in tests; under `make test`'s parallel load on 2 shared
# cores the scheduler alone adds hundreds of milliseconds).


def check_probe(name, probe, allow_fail=0):
    p99 = probe.p99_ms()
    figure(f"probe during {name}: {len(probe.lat)} pushes, p99 {p99:.1f} ms "
           f"(goal < 50), {len(probe.fail)} failed")
    res.check(f"{name}: probe served throughout, none refused",
              len(probe.lat) >= 3 and len(probe.fail) <= allow_fail,
              (len(probe.lat), p99, probe.fail[:5]))


def fd_count(gw):
    try:
        return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))
    except OSError:
        return -1


# ---------------------------------------------------------------------------
MAIN = config("""      read_header_timeout: 1s
      read_timeout: 4s
      idle_timeout: 2s
      min_body_rate: 1KiB
      max_request_body_size: 4MiB
      max_connections: 400
      max_connections_per_peer: 150""",
              extensions="""extensions:
  health_check:
    endpoint: "127.0.0.1:0"
""")
MAIN = MAIN.replace("  telemetry:\n    logs: {level: info}",
                    "  telemetry:\n    logs: {level: info}\n    metrics: {address: \"127.0.0.1:0\"}")

with gateway(MAIN) as gw:
    p = gw.port
    mport = None
    for _ in range(50):
        m = re.search(r"serving /metrics on [0-9.]+:(\d+)", gw.log())
        if m:
            mport = int(m.group(1))
            break
        time.sleep(0.05)
    hc = re.search(r"serving .*health.* on 127\.0\.0\.1:(\d+)", gw.log())
    hport = int(hc.group(1)) if hc else None
    res.check("metrics and health_check ports found", mport is not None and hport is not None,
              gw.log()[-1500:])

    st, _, _ = exchange(p, request(SMALL))
    res.check("baseline: authenticated push -> 204", st == 204, st)

    # ---- slowloris: headers at 1 byte/s ------------------------------------
    with Probe(p) as probe:
        socks = [conn(p) for _ in range(150)]
        head = b"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nX-Slow: " + b"a" * 64
        # read_header_timeout 1 s + 1 s (+ slack)
        still = trickle(socks, lambda i: head[i:i + 1], 2.2, 1.0)
    figure(f"slowloris headers: {still}/150 connections open after read_header_timeout + 1 s")
    res.check("slowloris headers: all closed by read_header_timeout", still == 0, still)
    check_probe("slowloris headers", probe)

    # ---- slowloris: bodies at 1 byte/s -----------------------------------------
    with Probe(p) as probe:
        socks = []
        for _ in range(100):
            s = conn(p)
            s.sendall(request(b"", cl=100000))
            socks.append(s)
        still = trickle(socks, lambda i: b"x", 3.2, 1.0)  # 2 s grace + 1 s at < min_body_rate
    figure(f"slowloris bodies: {still}/100 connections open after 3.2 s (min_body_rate 1 KiB/s)")
    res.check("slowloris bodies: all closed by min_body_rate", still == 0, still)
    check_probe("slowloris bodies", probe)

    # ---- connection floods ---------------------------------------------------
    with Probe(p) as probe:
        socks = []
        t0 = time.monotonic()
        for _ in range(300):
            try:
                socks.append(conn(p))
            except OSError:
                pass
        time.sleep(0.3)
        open_ = sum(not closed(s) for s in socks)
        took_peer = took = time.monotonic() - t0
        for s in socks:
            s.close()
    figure(f"per-peer flood: 300 connections from one peer, {open_} stayed open "
           f"(max_connections_per_peer 150; {max(0, open_ - 150)} past the cap)")
    # <= the cap is the point; >= 130 shows the cap, not a failure, refused
    # them. Connections without a header byte are closed by
    # read_header_timeout (1 s) from accept: when a loaded machine took longer
    # than that to open and count them, the lower bound says nothing and the
    # refused-connections metric below carries that half.
    res.check("per-peer flood: none past the cap",
              open_ <= 150 and (open_ >= 130 or took >= 0.9), (open_, round(took, 2)))
    check_probe("per-peer connection flood", probe)

    time.sleep(1.2)  # the accepted ones above are idle-closed by now
    srcs = ["127.0.0.%d" % i for i in range(10, 16)]
    socks = []
    t0 = time.monotonic()
    for src in srcs:
        for _ in range(100):
            try:
                socks.append(conn(p, src))
            except OSError:
                pass
    time.sleep(0.3)
    open_ = sum(not closed(s) for s in socks)
    took_total = took = time.monotonic() - t0
    hc_ok = 0
    for _ in range(5):
        st, _, _ = exchange(hport, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        hc_ok += st == 200
    for s in socks:
        s.close()
    figure(f"total flood: 600 connections from 6 peers, {open_} stayed open "
           f"(max_connections 400; {max(0, open_ - 400)} past the cap)")
    res.check("total flood: none past max_connections",
              open_ <= 400 and (open_ >= 350 or took >= 0.9), (open_, round(took, 2)))
    res.check("total flood: health_check still answers", hc_ok == 5, hc_ok)
    time.sleep(1.2)
    refused = metric(mport, r'pprofgate_receiver_refused_connections_total\{.*reason="(max_connections|per_peer)"')
    # 150 + 150 when both floods were opened within read_header_timeout; on a
    # slower run deadline-closed slots were reused, so only "some" is certain.
    fast = took_peer < 0.9 and took_total < 0.9
    res.check("refused connections counted in /metrics",
              refused >= (150 + 150 if fast else 1), (refused, fast))

    # ---- authentication before the body -------------------------------------
    with Probe(p) as probe:
        # Head only, 19 MiB announced, a wrong token: 401 must come without a body byte.
        s = conn(p)
        s.sendall(request(b"", token="wrong", cl=19 << 20))
        t0 = time.monotonic()
        st, hdrs, body = read_response(s)
        took = time.monotonic() - t0
        gone = closed(s, wait=2.0)
        s.close()
        figure(f"unauthenticated 19 MiB body: {st} after {took*1000:.1f} ms with 0 body bytes "
               f"sent; connection closed: {gone}")
        res.check("no credentials: 401 before any body byte, then closed",
                  st == 401 and "www-authenticate" in hdrs and gone, (st, hdrs, gone))

        # 30 clients pushing 4 MiB unauthenticated bodies as fast as they can.
        rss0 = gw.rss_kb() or 0
        blob = os.urandom(1 << 20)

        def hammer(out):
            try:
                s = conn(p, "127.0.0.3")
                s.sendall(request(b"", token="nope", cl=4 << 20))
                for _ in range(4):
                    s.sendall(blob)
            except OSError:
                pass
            try:
                out.append(read_response(s)[0])
            except (OSError, ValueError, IndexError):
                out.append("reset")
            s.close()

        outs, ths = [], []
        for _ in range(30):
            th = threading.Thread(target=hammer, args=(outs,))
            th.start()
            ths.append(th)
        for th in ths:
            th.join(15)
        rss1 = gw.rss_kb() or 0
        figure(f"30 unauthenticated 4 MiB bodies: RSS {rss0//1024} -> {rss1//1024} MiB, "
               f"answers {sorted(set(map(str, outs)))}")
        res.check("unauthenticated bodies are not buffered (RSS grew < 16 MiB)",
                  rss1 - rss0 < 16 * 1024, (rss0, rss1))

        # Expect: 100-continue: never a 100 without credentials.
        s = conn(p, "127.0.0.4")
        s.sendall(request(b"", token="wrong", extra=b"Expect: 100-continue\r\n", cl=len(SMALL)))
        st, _, _ = read_response(s)
        s.close()
        res.check("Expect 100-continue without credentials: 401, no 100", st == 401, st)
        s = conn(p, "127.0.0.4")
        s.sendall(request(b"", extra=b"Expect: 100-continue\r\n", cl=len(SMALL)))
        st1, _, _ = read_response(s)
        s.sendall(SMALL)
        st2, _, _ = read_response(s)
        s.close()
        res.check("Expect 100-continue with credentials: 100 then 204", (st1, st2) == (100, 204),
                  (st1, st2))
    check_probe("unauthenticated bodies", probe)

    # ---- token variants -------------------------------------------------------
    def auth_status(value, src="127.0.0.5"):
        data = (b"POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n" + value +
                b"Content-Length: %d\r\n\r\n" % len(SMALL) + SMALL)
        return exchange(p, data, src)[0]

    tok = TOKEN.encode()
    variants = [
        ("valid", b"Authorization: Bearer " + tok + b"\r\n", 204),
        ("scheme in lower case", b"authorization: bearer " + tok + b"\r\n", 204),
        ("trailing whitespace", b"Authorization: Bearer " + tok + b"  \t\r\n", 204),
        ("token + NUL + junk", b"Authorization: Bearer " + tok + b"\x00junk\r\n", 400),
        ("token + junk", b"Authorization: Bearer " + tok + b"junk\r\n", 401),
        ("token prefix", b"Authorization: Bearer " + tok[:-1] + b"\r\n", 401),
        ("token in upper case", b"Authorization: Bearer " + tok.upper() + b"\r\n", 401),
        ("folded header", b"Authorization: Bearer\r\n " + tok + b"\r\n", 400),
        ("duplicate header", b"Authorization: Bearer " + tok + b"\r\nAuthorization: Bearer x\r\n",
         400),
        ("space before colon", b"Authorization : Bearer " + tok + b"\r\n", 400),
        ("empty", b"Authorization:\r\n", 401),
    ]
    for name, value, want in variants:
        st = auth_status(value)
        res.check(f"token variant '{name}' -> {want}", st == want, st)
    statuses = [auth_status(b"Authorization: Bearer wrong\r\n", "127.0.0.6") for _ in range(14)]
    res.check("failed attempts rate-limited per peer (429 after 10)",
              statuses[:10] == [401] * 10 and 429 in statuses[10:], statuses)
    res.check("another peer is not limited", auth_status(b"Authorization: Bearer " + tok + b"\r\n",
                                                         "127.0.0.7") == 204)

    # ---- smuggling, pipelining, versions, sizes ------------------------------
    auth = b"Authorization: Bearer " + tok + b"\r\n"

    def raw(data, src="127.0.0.8"):
        s = conn(p, src)
        s.sendall(data)
        out = []
        try:
            while True:
                st, h, b = read_response(s)
                if st is None:
                    break
                out.append(st)
        except (OSError, ValueError, IndexError):
            pass
        s.close()
        return out

    smuggle = [
        ("CL + TE", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n"
         b"Host: g\r\n\r\n", [400]),
        ("differing CLs", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Content-Length: 5\r\nContent-Length: 30\r\n\r\nhelloGET / HTTP/1.1\r\nHost: g\r\n\r\n",
         [400]),
        ("TE not chunked", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Transfer-Encoding: gzip\r\n\r\n", [501]),
        ("chunk size -1", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Transfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n", [400]),
        ("chunk size 0x10", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Transfer-Encoding: chunked\r\n\r\n0x10\r\n0123456789abcdef\r\n0\r\n\r\n", [400]),
        ("chunk size overflow", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Transfer-Encoding: chunked\r\n\r\n10000000000000001\r\nx\r\n0\r\n\r\n", [400]),
        ("chunk longer than its size", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" + auth +
         b"Transfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n", [400]),
        ("pipelined 3 pushes", request(SMALL) * 3, [204, 204, 204]),
        ("HTTP/1.0 push closes", b"POST /v1/pprof HTTP/1.0\r\n" + auth +
         b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(SMALL) + SMALL, [204]),
        ("HTTP/1.0 keep-alive, 2 pushes", (b"POST /v1/pprof HTTP/1.0\r\nConnection: keep-alive\r\n"
         + auth + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(SMALL) + SMALL) * 2
         + b"GET /v1/pprof HTTP/1.0\r\n" + auth + b"\r\n", [204, 204, 405]),
        ("HTTP/0.9 style", b"GET /\r\n\r\n", [400]),
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", [505]),
        ("10 KiB URL", b"POST /v1/pprof?" + b"a" * 10240 + b" HTTP/1.1\r\nHost: g\r\n\r\n", [414]),
        ("70 KiB header", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\nX-Big: " + b"b" * 70000 +
         b"\r\n\r\n", [431]),
        ("200 header lines", b"POST /v1/pprof HTTP/1.1\r\nHost: g\r\n" +
         b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n", [431]),
    ]
    for name, data, want in smuggle:
        got = raw(data)
        res.check(f"{name} -> {want}", got == want, got)
    code400 = metric(mport, r'otelcol_receiver_refused_requests_total\{.*code="400"')
    code431 = metric(mport, r'otelcol_receiver_refused_requests_total\{.*code="431"')
    res.check("HTTP-layer refusals counted by code in /metrics", code400 >= 6 and code431 >= 2,
              (code400, code431))
    res.check("refusals logged at info with reason and peer",
              re.search(r"level=info .*answered 431: .*peer=127\.0\.0\.8", gw.log()) is not None,
              gw.log()[-1500:])
    res.check("gateway alive after all of it", exchange(p, request(SMALL))[0] == 204)
    res.check("SIGTERM: exit 0", gw.stop() == 0, gw.log()[-1000:])

# ---- fd headroom: a low RLIMIT_NOFILE ---------------------------------------------------------
def low_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))


class LowFdGateway(Gateway):
    def start(self):
        orig = subprocess.Popen

        def popen(*a, **kw):
            kw["preexec_fn"] = low_nofile
            return orig(*a, **kw)
        subprocess.Popen = popen
        try:
            return super().start()
        finally:
            subprocess.Popen = orig


gw = LowFdGateway(config("      read_header_timeout: 2s",
                         extensions="extensions:\n  health_check:\n    endpoint: \"127.0.0.1:0\"\n"))
with open(gw.path("token"), "w") as f:
    f.write(TOKEN + "\n")
with gw:
    hc = re.search(r"serving .*health.* on 127\.0\.0\.1:(\d+)", gw.log())
    hport = int(hc.group(1)) if hc else 0
    cap = re.search(r"(\d+) connections at most", gw.log())
    res.check("fd headroom: cap logged (RLIMIT_NOFILE 200 - 64)", cap and cap.group(1) == "136",
              gw.log()[-800:])
    cpu0 = sum(int(x) for x in open(f"/proc/{gw.proc.pid}/stat").read().split()[13:15])
    socks = []
    for i in range(250):
        try:
            socks.append(conn(gw.port, "127.0.0.%d" % (20 + i % 5)))
        except OSError:
            pass
    time.sleep(0.5)
    open_ = sum(not closed(s) for s in socks)
    st, _, _ = exchange(hport, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    time.sleep(0.5)
    cpu1 = sum(int(x) for x in open(f"/proc/{gw.proc.pid}/stat").read().split()[13:15])
    for s in socks:
        s.close()
    ticks = os.sysconf("SC_CLK_TCK")
    figure(f"fd headroom: 250 connections, {open_} open (cap 136), health_check {st}, "
           f"gateway CPU {(cpu1 - cpu0) / ticks:.2f} s over the flood")
    res.check("fd headroom: connections capped below RLIMIT_NOFILE", 0 < open_ <= 136, open_)
    res.check("fd headroom: health_check answers at the cap", st == 200, st)
    res.check("fd headroom: the loop does not spin (< 0.5 s CPU)", (cpu1 - cpu0) / ticks < 0.5,
              cpu1 - cpu0)
    res.check("fd headroom: SIGTERM exit 0", gw.stop() == 0, gw.log()[-800:])

# ---- large-body flood under memory_limiter -----------------------------------------------------
large = os.path.join(BUILD_DIR, "hostile-large.pprof.gz")
if not os.path.exists(large):
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "translate_gen_large.py"),
                    large + ".raw", "--gzip", large], check=True, capture_output=True)
BIG = read(large)
# A lone large body fits an idle gateway whose soft limit (60 MiB) holds its
# admission estimate (~48 MiB) but not the estimate and its translated batch
# (~22 MiB) together: the batch replaces the estimate, it is not added to it.
with gateway(config("      max_request_body_size: 16MiB", processors="""processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: 80
    spike_limit_mib: 20
""")) as gw:
    sts = [exchange(gw.port, request(BIG), timeout=30)[0] for _ in range(2)]
    figure(f"lone large body under limit_mib 80: {sts}, VmHWM {(gw.hwm_kb() or 0) // 1024} MiB")
    res.check("lone large body: accepted by an idle gateway", sts == [204, 204], sts)
    res.check("lone large body: peak RSS <= limit_mib", (gw.hwm_kb() or 0) <= 80 * 1024,
              gw.hwm_kb())

LIMIT_MIB = 160
FLOOD = config("      max_request_body_size: 16MiB", processors=f"""processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: {LIMIT_MIB}
    spike_limit_mib: 32
""")
FLOOD_CLIENTS, FLOOD_S = 40, 6
with gateway(FLOOD) as gw:
    # bench/flood_client: one epoll thread keeps 40 uploads in flight, so the
    # attacker's own CPU hardly competes with the gateway for the 2 cores.
    with Probe(gw.port) as probe:
        t0 = time.monotonic()
        out = subprocess.run([PROBE_BIN, "flood", str(gw.port), large, str(FLOOD_CLIENTS),
                              str(FLOOD_S), TOKEN], capture_output=True, text=True, timeout=60).stdout
        took = time.monotonic() - t0
    hwm = gw.hwm_kb() or 0
    mix = {}
    for line in out.splitlines():
        if line.startswith("status "):
            mix = {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    ratio = hwm / 1024 / LIMIT_MIB
    figure(f"large-body flood: {FLOOD_CLIENTS} clients pushing {len(BIG) >> 10} KiB gzip for "
           f"{FLOOD_S} s (done in {took:.1f} s), peak RSS {hwm // 1024} MiB / limit {LIMIT_MIB} MiB "
           f"= {ratio:.2f}, status mix {mix}")
    res.check("flood: peak RSS <= limit_mib", ratio <= 1.0, (hwm, LIMIT_MIB))
    # Past the shared drain budget a refused upload is reset instead of
    # drained (the memory issue's "close if the client sends it anyway").
    res.check("flood: some admitted, the rest 503 or reset, nothing else",
              mix.get("204", 0) > 0 and mix.get("503", 0) > 0 and set(mix) <= {"204", "503", "reset"},
              mix)
    check_probe("large-body flood", probe)
    res.check("flood: SIGTERM exit 0", gw.stop() == 0, gw.log()[-800:])

print("figures:")
for f in FIGURES:
    print("  " + f)
res.finish()
