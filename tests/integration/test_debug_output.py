# SPDX-License-Identifier: Apache-2.0
"""Debug exporter output on the real binary: the worked example (otlp-profiles.md
§3.5) at basic, normal and detailed, the collector's raw framing
(use_internal_logger: false) and text (pprofgate_annotations: false),
sampling, every real fixture (SDK pushes, Go runtime/pprof profiles) arriving
with its samples, what each profile holds for a Go CPU and heap push (sample
type, period, window, total, top frames, sample_type_order; expected values
read from the pprof itself), the collector's otelcol_exporter_* series on
/metrics, and an output nobody reads (a FIFO) never holding up requests or
the other exporters."""

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
  debug/collector:
    verbosity: detailed
    use_internal_logger: false
    pprofgate_annotations: false
    output_paths: ["{tmp}/collector.out"]
  debug/sampled:
    verbosity: basic
    sampling_initial: 1
    sampling_thereafter: 0
    output_paths: ["{tmp}/sampled.out"]
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug/basic, debug/normal, debug/detailed, debug/raw, debug/sampled,
                  debug/collector]
  telemetry:
    metrics: {address: "127.0.0.1:0"}
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


def metrics(gw):
    """/metrics as {"name{labels}": value}."""
    m = gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)")
    if not m:
        return {}
    c = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=10)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    return {k: float(v) for k, v in re.findall(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", body, re.M)}


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
    prof_lines = re.findall(r"^[0-9a-f]* samples=2 sample_type=\S+/\S+ total=\S+( \S+=\S*)*$",
                            normal, re.M)
    res.check("normal: two profile lines of 2 samples per batch", len(prof_lines) == 6,
              normal[:600])
    res.check("normal: the CPU profile named, with its period and window",
              re.search(r"^[0-9a-f]+ samples=2 sample_type=cpu/nanoseconds total=40ms period=10ms "
                        r"period_type=cpu/nanoseconds start=2023-11-14T22:13:20Z duration=10s ",
                        normal, re.M) is not None, normal[:800])
    res.check("normal: sample_type_order decoded",
              re.search(r"^ScopeProfiles #0 .* pprof\.scope\.sample_type_order=\[1,0\] .*"
                        r"pprof_sample_types=samples/count,cpu/nanoseconds$", normal, re.M)
              is not None, normal[:800])

    det = settled(gw, "detailed.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n"))
    for needle in [
        "Mapping #1\n    Memory start: 4194304\n    Memory limit: 4849664\n",
        "Location #1\n    Mapping index: 1\n    Address: 4198400\n",
        "String table:\n    \n",
        "    main.work\n",
        "Attribute table:\n    Attribute #0\n",
        "Link table:\n    Link #0\n",
        "    Start time     : 2023-11-14 22:13:20 +0000 UTC\n    DurationNano   : 10000000000\n",
        "        Values: [30000000] cpu/nanoseconds\n        Attributes:\n"
        "             -> handler: Str(/api)\n",
        "        Link #1: trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7\n",
        "        Stack #1:\n            main.work main.go:20\n            main.main main.go:10\n",
        "        Values: [3] samples/count\n",
        "        Values: [1] samples/count\n",
        "pprof sample types: [0] samples/count = Profile #1, [1] cpu/nanoseconds = Profile #0\n",
        "    Sample type    : cpu/nanoseconds\n    Period         : 10ms (cpu/nanoseconds)\n"
        "    Duration       : 10s\n    Total          : 40ms in 2 samples\n"
        "    Top frames     : top 2 of 2 leaf frames by self value\n"
        "        30ms  75.0%  main.work main.go:20\n        10ms  25.0%  main.main main.go:10\n",
    ]:
        res.check(f"detailed: {needle.strip().splitlines()[0][:60]}", needle in det,
                  det[:300])

    # pprofgate_annotations: false: the collector's text, tables collapsed to
    # their last entry as it prints them, nothing of pprofgate's.
    col = settled(gw, "collector.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n\n"))
    res.check("collector text: raw framing",
              col.startswith('Profiles\t{"resource profiles": 1, "sample records": 4}\nMapping #0\n'),
              col[:200])
    res.check("collector text: tables as the collector prints them",
              "Attribute table:\n     -> Key: Int(" in col and "Link table:\n     -> Trace ID: Str(" in col
              and "    Attribute #" not in col and "    Link #" not in col, col[:3000])
    res.check("collector text: bare values, no annotations",
              "        Values: [30000000]\n" in col and
              not re.search(r"Sample type|Top frames|Stack #|pprof sample types|Link #1:", col),
              col[-1500:])
    raw = settled(gw, "raw.out", lambda t: summaries_in(t) >= 3 and t.endswith("\n\n"))
    res.check("raw framing: collector summary line",
              raw.startswith('Profiles\t{"resource profiles": 1, "sample records": 4}\nResourceProfiles #0'),
              raw[:200])
    res.check("raw framing: blank line after the text", "\n\nProfiles\t{" in raw, raw[:600])

    sampled = settled(gw, "sampled.out", lambda t: len(t.splitlines()) >= 1)
    n = len(sampled.splitlines())
    res.check("sampling_initial 1, thereafter 0: fewer lines than batches", 1 <= n < 3, n)

    # The collector's exporterhelper series, as the otlp exporter has them: a
    # batch sampled away still counts as sent (zap's sampler drops the line,
    # the push succeeds), so both exporters sent all 3 x 4 samples.
    m = metrics(gw)
    for exp in ("debug/normal", "debug/sampled", "debug/collector"):
        lab = f'{{exporter="{exp}"}}'
        res.check(f"/metrics: {exp} sent 12 samples, none failed or refused",
                  m.get("otelcol_exporter_sent_profile_samples" + lab) == 12 and
                  m.get("otelcol_exporter_send_failed_profile_samples" + lab) == 0 and
                  m.get("otelcol_exporter_enqueue_failed_profile_samples" + lab) == 0,
                  {k: v for k, v in m.items() if exp + '"' in k})
        res.check(f"/metrics: {exp} queue size and capacity",
                  m.get("otelcol_exporter_queue_capacity" + lab) == 1024 and
                  "otelcol_exporter_queue_size" + lab in m, sorted(m)[:40])

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


# ---- What each profile holds: a Go CPU and a heap push -----------------------
# Expected values come from the pprof itself (pprof_otlp reads it without
# pprofgate); profile k of the OTLP request is pprof's sample type k with the
# first and last swapped (pprof's default type, its last, comes first).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop",
                                "collector"))
import pprof_otlp  # noqa: E402


def go_duration(ns):
    """Go's time.Duration.String()."""
    if ns == 0:
        return "0s"
    sign, u = ("-" if ns < 0 else ""), abs(ns)

    def frac(u, prec):
        f = ("%0*d" % (prec, u % 10 ** prec)).rstrip("0")
        return u // 10 ** prec, ("." + f) if f else ""
    if u < 1000:
        return f"{sign}{u}ns"
    if u < 10 ** 6:
        i, f = frac(u, 3)
        return f"{sign}{i}{f}\u00b5s"
    if u < 10 ** 9:
        i, f = frac(u, 6)
        return f"{sign}{i}{f}ms"
    secs, f = frac(u, 9)
    mins, hours = secs // 60, secs // 3600
    if hours:
        return f"{sign}{hours}h{mins % 60}m{secs % 60}{f}s"
    if mins:
        return f"{sign}{mins}m{secs % 60}{f}s"
    return f"{sign}{secs}{f}s"


def rfc3339(ns):
    t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10 ** 9))
    f = ("%09d" % (ns % 10 ** 9)).rstrip("0")
    return t + ("." + f if f else "") + "Z"


def quantity(v, unit):
    return go_duration(v) if unit == "nanoseconds" else str(v)


def leaf_text(stack):
    if not stack:
        return "(no stack)"
    mapping, address, lines, _ = stack[0]
    if not lines:
        f = mapping[3] if mapping else ""
        return "0x%x%s" % (address, " " + f if f else "")
    name, _, file, _, line, _ = lines[0]
    return f"{name or '??'} {file or '??'}:{line}"


def expected(body):
    """Per pprof sample type: what the debug output must say about it."""
    out = []
    for p in pprof_otlp.pprof_profiles(body):
        self_by_leaf, total, n = {}, 0, 0
        for key, count in p["samples"].items():
            value, stack, _, _ = pprof_otlp.INTERN.show(key)
            n += count
            total += value * count
            leaf = leaf_text(stack)
            self_by_leaf[leaf] = self_by_leaf.get(leaf, 0) + value * count
        out.append(dict(p, type="/".join(p["sample_type"]), ptype="/".join(p["period_type"]),
                        n=n, total=total, self=self_by_leaf))
    return out


def profile_index(k, nt):
    return nt - 1 if k == 0 else 0 if k == nt - 1 else k


GO_CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug/normal: {verbosity: normal, output_paths: ["{tmp}/normal.out"]}
  debug/detailed: {verbosity: detailed, output_paths: ["{tmp}/detailed.out"]}
  debug: {verbosity: basic, output_paths: ["{tmp}/basic.out"]}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug/normal, debug/detailed, debug]
  telemetry:
    metrics: {address: "127.0.0.1:0"}
"""
with Gateway(GO_CONFIG) as gw:
    pushed_samples = 0
    for name, must in (("cpu", ("cpu/nanoseconds", "samples/count")),
                       ("heap", ("inuse_space/bytes", "inuse_objects/count", "alloc_space/bytes",
                                 "alloc_objects/count"))):
        body = read(fixture(f"pprof/go/{name}.pb.gz"))
        want = expected(body)
        nt = len(want)
        res.check(f"go {name}: the fixture has the sample types {must}",
                  sorted(w["type"] for w in want) == sorted(must), [w["type"] for w in want])
        before_n, before_d = text(gw, "normal.out"), text(gw, "detailed.out")
        s, _, b = post(gw.port, "/v1/pprof", body, {})
        res.check(f"go {name}: 204", s == 204, (s, b))
        pushed_samples += sum(w["n"] for w in want)
        normal = settled(gw, "normal.out", lambda t: t[len(before_n):].count("\n") >= 2 + nt)
        normal = normal[len(before_n):].splitlines()
        scope = [ln for ln in normal if ln.startswith("ScopeProfiles #0 ")]
        res.check(f"go {name} normal: sample_type_order decoded in pprof's order",
                  scope and scope[0].endswith(" pprof_sample_types=" +
                                              ",".join(w["type"] for w in want)), scope)
        lines = [ln for ln in normal if re.match(r"^[0-9a-f]+ samples=", ln)]
        for k, w in enumerate(want):
            i = profile_index(k, nt)
            fields = (f" samples={w['n']} sample_type={w['type']} "
                      f"total={quantity(w['total'], w['sample_type'][1])} "
                      f"period={quantity(w['period'], w['period_type'][1])} "
                      f"period_type={w['ptype']} start={rfc3339(w['time'])} "
                      f"duration={go_duration(w['duration'])} ")
            res.check(f"go {name} normal: profile #{i} says{fields}",
                      i < len(lines) and fields in lines[i], lines[i] if i < len(lines) else lines)

        det = settled(gw, "detailed.out",
                      lambda t: len(re.findall(r"^    Sample #", t[len(before_d):], re.M))
                      >= sum(w["n"] for w in want))[len(before_d):]
        decoded = ", ".join(f"[{k}] {w['type']} = Profile #{profile_index(k, nt)}"
                            for k, w in enumerate(want))
        res.check(f"go {name} detailed: pprof sample types line",
                  f"\npprof sample types: {decoded}\nProfile #0\n" in det, det[:200])
        blocks = re.split(r"(?m)^Profile #\d+\n", det)[1:]
        for k, w in enumerate(want):
            i = profile_index(k, nt)
            blk = blocks[i] if i < len(blocks) else ""
            unit = w["sample_type"][1]
            head = (f"    Sample type    : {w['type']}\n"
                    f"    Period         : {quantity(w['period'], w['period_type'][1])} "
                    f"({w['ptype']})\n"
                    f"    Duration       : {go_duration(w['duration'])}\n"
                    f"    Total          : {quantity(w['total'], unit)} in {w['n']} samples\n"
                    f"    Top frames     : top {min(5, len(w['self']))} of {len(w['self'])} "
                    f"leaf frames by self value\n")
            res.check(f"go {name} detailed: profile #{i} is {w['type']} with period, "
                      f"duration and total", head in blk, blk[:600])
            top = re.findall(r"^        +(\S+) +(\S+%|-)  (.+)$", blk.split("    Sample #")[0], re.M)
            best = sorted(w["self"].values(), reverse=True)[:5]
            res.check(f"go {name} detailed: profile #{i} top frames by self value",
                      [v for v, _, _ in top] == [quantity(v, unit) for v in best] and
                      all(quantity(w["self"].get(f, None), unit) == v for v, _, f in top if
                          f in w["self"]) and all(f in w["self"] for _, _, f in top),
                      (top, sorted(w["self"].items(), key=lambda x: -x[1])[:6]))
            values = re.findall(r"^        Values: \[.*$", blk, re.M)
            res.check(f"go {name} detailed: profile #{i}: every Values line names {w['type']}",
                      len(values) == w["n"] and all(v.endswith("] " + w["type"]) for v in values),
                      values[:3])
    settled(gw, "basic.out", lambda t: t.count("\n") >= 2)
    m = metrics(gw)
    for exp in ("debug", "debug/normal", "debug/detailed"):
        res.check(f"/metrics: otelcol_exporter_sent_profile_samples{{exporter=\"{exp}\"}} "
                  f"= {pushed_samples}",
                  m.get(f'otelcol_exporter_sent_profile_samples{{exporter="{exp}"}}') ==
                  pushed_samples, {k: v for k, v in m.items() if "otelcol_exporter" in k})
    res.check("clean exit", gw.stop() == 0)


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
    per_push = sum(w["n"] for w in expected(SDK))
    refused = metrics(gw).get('otelcol_exporter_enqueue_failed_profile_samples{exporter="debug/stalled"}')
    res.check("stalled output: and in otelcol_exporter_enqueue_failed_profile_samples, in samples",
              refused == dropped * per_push > 0, (refused, dropped, per_push))
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
