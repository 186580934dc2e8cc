# SPDX-License-Identifier: Apache-2.0
"""Debug exporter output on the real binary: the worked example (otlp-profiles.md
§3.5) at basic, normal and detailed, the collector's raw framing
(use_internal_logger: false), sampling, every real fixture (SDK pushes, Go
runtime/pprof profiles) arriving with its samples, and an output nobody reads
(a FIFO) never holding up requests or the other exporters."""

import fcntl
import glob
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, FIXTURES, Gateway, Results, fixture, gzip_bytes, post, read  # noqa: E402

res = Results()
PPROF = read(fixture("debug/worked_example.pprof"))

CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug/basic: {verbosity: basic, output_paths: ["{tmp}/basic.out"]}
  debug/normal: {verbosity: normal, output_paths: ["{tmp}/normal.out"]}
  debug/detailed: {verbosity: detailed, output_paths: ["{tmp}/detailed.out"]}
  debug/raw: {verbosity: normal, use_internal_logger: false, output_paths: ["{tmp}/raw.out"]}
  debug/sampled:
    verbosity: basic
    sampling_initial: 1
    sampling_thereafter: 0
    output_paths: ["{tmp}/sampled.out"]
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug/basic, debug/normal, debug/detailed, debug/raw, debug/sampled]
"""


def text(gw, name):
    try:
        with open(gw.path(name), errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def settled(gw, name, done, timeout=10):
    """The exporter writes from its own thread after the 204: polls @name until
    done(text) holds (or the timeout passes) and returns the text."""
    deadline = time.time() + timeout
    while True:
        t = text(gw, name)
        if done(t) or time.time() >= deadline:
            return t
        time.sleep(0.02)


def summaries_in(t):
    return t.count('msg="Profiles"') + t.count("Profiles\t{")


with Gateway(CONFIG) as gw:
    s, _, b = post(gw.port, "/v1/pprof", gzip_bytes(PPROF), {"Content-Encoding": "gzip"})
    res.check("worked example accepted", s == 204, (s, b))
    for _ in range(2):  # two more, within the same second for the sampler
        post(gw.port, "/v1/pprof", gzip_bytes(PPROF), {"Content-Encoding": "gzip"})

    basic = settled(gw, "basic.out", lambda t: len(t.splitlines()) >= 3)
    summaries = re.findall(r'^ts=\S+ level=info comp=\S+ msg="Profiles" resource_profiles=1 '
                           r'sample_records=4$', basic, re.M)
    res.check("basic: one summary line per batch", len(summaries) == 3, basic[:400])
    res.check("basic: nothing else", len(basic.splitlines()) == 3, basic[:400])

    normal = settled(gw, "normal.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n"))
    res.check("normal: resource line", "ResourceProfiles #0" in normal, normal[:400])
    res.check("normal: scope line with name@version",
              re.search(r"^ScopeProfiles #0 \S+@\S+", normal, re.M) is not None, normal[:400])
    prof_lines = re.findall(r"^[0-9a-f]* samples=2( \S+=\S*)*$", normal, re.M)
    res.check("normal: two profile lines of 2 samples per batch", len(prof_lines) == 6,
              normal[:600])

    det = settled(gw, "detailed.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n"))
    for needle in [
        "Mapping #1\n    Memory start: 4194304\n    Memory limit: 4849664\n",
        "Location #1\n    Mapping index: 1\n    Address: 4198400\n",
        "String table:\n    \n",
        "    main.work\n",
        "Attribute table:\n    Attribute #0\n",
        "Link table:\n    Link #0\n",
        "    Start time     : 2023-11-14 22:13:20 +0000 UTC\n    DurationNano   : 10000000000\n",
        "        Values: [30000000]\n        Attributes:\n             -> handler: Str(/api)\n",
        "        Link #1: trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7\n",
        "        Stack #1:\n            main.work main.go:20\n            main.main main.go:10\n",
        "        Values: [3]\n",
        "        Values: [1]\n",
    ]:
        res.check(f"detailed: {needle.strip().splitlines()[0][:60]}", needle in det,
                  det[:300])

    raw = settled(gw, "raw.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n\n"))
    res.check("raw framing: collector summary line",
              raw.startswith('Profiles\t{"resource profiles": 1, "sample records": 4}\nResourceProfiles #0'),
              raw[:200])
    res.check("raw framing: blank line after the text", "\n\nProfiles\t{" in raw, raw[:600])

    sampled = settled(gw, "sampled.out", lambda t: len(t.splitlines()) >= 1)
    n = len(sampled.splitlines())
    res.check("sampling_initial 1, thereafter 0: fewer lines than batches", 1 <= n < 3, n)

    # Every real fixture: SDK captures (with their recorded headers) and any
    # Go runtime/pprof profiles under tests/fixtures.
    bodies = []
    for i in range(16):
        jp, bp = fixture(f"sdk/push{i}.json"), fixture(f"sdk/push{i}.pprof.gz")
        if jp is None or bp is None:
            break
        hdrs = json.load(open(jp))["headers"]
        hdrs = {k: v for k, v in hdrs.items() if k not in ("content-length", "host", "connection")}
        bodies.append((f"sdk/push{i}", read(bp), hdrs))
    for p in sorted(set(glob.glob(os.path.join(FIXTURES, "**", "*.pb.gz"), recursive=True) +
                        glob.glob(os.path.join(FIXTURES, "**", "*.pprof"), recursive=True))):
        if "/sdk/" in p or "/debug/" in p or "/bad" in p or "invalid" in p:
            continue
        bodies.append((os.path.relpath(p, FIXTURES), read(p), {}))
    res.check("found real fixtures", len(bodies) >= 4, [b[0] for b in bodies])
    with_samples = 0
    for name, body, hdrs in bodies:
        before = text(gw, "detailed.out")
        s, _, b = post(gw.port, "/v1/pprof", body, hdrs)

        def counts(t):
            new = t[len(before):]
            m = re.search(r"sample_records=(\d+)", new)
            return len(re.findall(r"^    Sample #\d+$", new, re.M)), int(m.group(1)) if m else -1

        # Complete when the printed samples reach the summary's count (a
        # reader may see a long write half done).
        new = settled(gw, "detailed.out", lambda t: counts(t)[0] == counts(t)[1])
        samples, records = counts(new)
        new = new[len(before):]
        with_samples += samples > 0
        # Some real profiles are empty (no contention, empty.pprof): the
        # printed samples must match the summary either way.
        res.check(f"{name}: 204, {samples} samples printed = sample_records",
                  s == 204 and samples == records, (s, b, new[:200]))
    res.check("most fixtures carry samples", with_samples * 2 > len(bodies), with_samples)
    rc = gw.stop()
    res.check("clean exit", rc == 0, rc)


# An output that stops being read (a FIFO whose reader never reads, as a
# stalled terminal or log pipe): every request is still answered 204 at once,
# the other exporter gets every batch, what did not fit is counted in
# /metrics and logged, and once the reader catches up the gateway exits clean.
STALL_CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug/stalled: {verbosity: detailed, sampling_initial: 100000, output_paths: ["{tmp}/stall.fifo"]}
  debug/file: {verbosity: basic, sampling_initial: 100000, output_paths: ["{tmp}/file.out"]}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug/stalled, debug/file]
  telemetry:
    metrics: {address: "127.0.0.1:0"}
"""
SDK = read(fixture("sdk/push0.pprof.gz"))
gw = Gateway(STALL_CONFIG)
fifo = gw.path("stall.fifo")
os.mkfifo(fifo)
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # open, never read (yet)
try:
    fcntl.fcntl(rfd, 1031, 4096)  # F_SETPIPE_SZ: fill it sooner
except OSError:
    pass
N = 1500
with gw:
    codes = []
    for _ in range(N):
        s, _, b = post(gw.port, "/v1/pprof", SDK, {"Content-Encoding": "gzip"}, timeout=10)
        codes.append(s)
    res.check(f"stalled output: all {N} requests answered 204", codes.count(204) == N,
              {c: codes.count(c) for c in set(codes)})
    lines = settled(gw, "file.out", lambda t: len(t.splitlines()) >= N)
    res.check("stalled output: the other debug exporter printed every batch",
              len(lines.splitlines()) == N, len(lines.splitlines()))
    m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
    dropped = -1
    if m:
        c = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=10)
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
        c.close()
        mm = re.search(r'^pprofgate_debug_exporter_dropped_batches_total\{exporter="debug/stalled"\} '
                       r'(\d+)$', body, re.M)
        dropped = int(mm.group(1)) if mm else -1
        mq = re.search(r'^pprofgate_debug_exporter_queue_batches\{exporter="debug/stalled"\} (\d+)$',
                       body, re.M)
        res.check("stalled output: /metrics shows the batches waiting", mq and int(mq.group(1)) > 0,
                  mq.group(0) if mq else body[-400:])
    res.check("stalled output: batches not printed are counted in /metrics", dropped > 0, dropped)
    res.check("stalled output: and logged at warn",
              gw.wait_log(r'level=warn comp=exporter/debug/stalled msg="output is not keeping up') is not None,
              gw.log()[-800:])

    # The reader catches up: the writer drains its queue, shutdown is clean.
    got = bytearray()
    os.set_blocking(rfd, True)
    try:
        fcntl.fcntl(rfd, 1031, 1 << 20)  # F_SETPIPE_SZ: read it back quickly
    except OSError:
        pass

    def drain():  # until the gateway exits and the write end closes
        while True:
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            got.extend(chunk)

    t = threading.Thread(target=drain)
    t.start()
    rc = gw.stop(timeout=30)
    t.join(timeout=10)
    os.close(rfd)
    res.check("stalled output: clean exit once the reader reads", rc == 0, gw.log()[-800:])
    printed = got.count(b'msg="Profiles"')
    res.check("stalled output: printed + not printed = all batches", printed + dropped == N,
              (printed, dropped))

# telemetry.logs.encoding: json (a collector setting log pipelines rely on):
# every line on stderr is one JSON object, the debug summary included, and
# request bytes in a logged reason cannot break it.
JSON_CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
  telemetry:
    logs: {level: debug, encoding: json, output_paths: ["{tmp}/gw.jsonl", stderr]}
"""
with Gateway(JSON_CONFIG) as gw:
    s, _, _ = post(gw.port, "/v1/pprof", SDK, {"Content-Encoding": "gzip"})
    res.check("json logs: push accepted", s == 204, s)
    s, _, _ = post(gw.port, "/v1/pprof", b"\x0a\x05\"\n\xff\x01\\", {})
    res.check("json logs: bad body refused", s == 400, s)
    settled(gw, "gateway.log", lambda t: 'answered 400' in t and '"sample_records":' in t)
    rc = gw.stop()
    lines = gw.log().splitlines()
    parsed, bad = [], []
    for ln in lines:
        try:
            parsed.append(json.loads(ln))
        except ValueError:
            bad.append(ln)
    res.check("json logs: every line is a JSON object", lines and not bad, bad[:3])
    res.check("json logs: ts, level, comp, msg on each",
              all({"ts", "level", "comp", "msg"} <= set(p) for p in parsed), parsed[:2])
    summary = [p for p in parsed if p.get("msg") == "Profiles"]
    res.check("json logs: the debug summary is JSON with its counts",
              summary and summary[0].get("resource_profiles") == 1
              and summary[0].get("sample_records", 0) > 0, summary)
    res.check("json logs: clean exit", rc == 0, rc)
    # output_paths: the file got the same lines as stderr, the debug summary
    # included (with use_internal_logger and no output_paths of its own the
    # debug exporter writes where the logs go, as the collector's does).
    file_lines = text(gw, "gw.jsonl").splitlines()
    res.check("logs.output_paths: the file has every line stderr has", file_lines == lines,
              (len(file_lines), len(lines)))
    res.check("logs.output_paths: the debug summary went there too",
              any('"msg":"Profiles"' in ln for ln in file_lines), file_lines[-3:])

# Default destinations as the collector's: with use_internal_logger: false
# and no output_paths the raw framing goes to stdout, not stderr.
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
free_port = probe.getsockname()[1]
probe.close()
raw_cfg = gw.path("raw-default.yaml")
with open(raw_cfg, "w") as f:
    f.write(f"""
receivers: {{pprof: {{server: {{endpoint: "127.0.0.1:{free_port}"}}}}}}
exporters: {{debug: {{use_internal_logger: false}}}}
service:
  pipelines: {{profiles: {{receivers: [pprof], exporters: [debug]}}}}
""")
proc = subprocess.Popen([BIN, "--config", raw_cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
try:
    for _ in range(100):
        try:
            s, _, _ = post(free_port, "/v1/pprof", SDK, {"Content-Encoding": "gzip"})
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
finally:
    if proc.poll() is None:
        proc.kill()
res.check("raw framing without output_paths: 204", s == 204, s)
res.check("raw framing without output_paths goes to stdout",
          b'Profiles\t{"resource profiles": 1' in out and b"Profiles\t" not in err,
          (out[:200], err[-300:]))

res.finish()
