# SPDX-License-Identifier: Apache-2.0
"""The heap sampler seen by its real consumer: `go tool pprof` (Go on PATH or /usr/local/go)
reads /debug/pprof/heap from the running gateway after it translated real SDK
and Go fixtures. Checks the Go heap-profile shape (-raw), that the top in-use
frames are pprofgate functions by name (-top), that the translate path shows in
alloc_space, symbolz, ?seconds=N deltas without blocking the loop, aliases,
errors, and the 503 when the sampler is off."""
import glob
import gzip
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import BIN, FIXTURES, SHARED, Gateway, Results, post  # noqa: E402

RATE = 4096  # small enough that a few requests leave many samples

CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
extensions:
  pprof: {endpoint: "127.0.0.1:0", heap_sample_rate: %s}
service:
  extensions: [pprof]
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""


def admin_port(gw, what):
    m = gw.wait_log(r"serving " + re.escape(what) + r" on [0-9.]+:(\d+)")
    return int(m.group(1)) if m else None


def get(port, path, method="GET", body=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def fixtures():
    """Real pprof bodies: SDK captures and Go runtime profiles (repo copies first)."""
    out = sorted(glob.glob(os.path.join(FIXTURES, "sdk", "*.pprof.gz")))
    out += sorted(glob.glob(os.path.join(FIXTURES, "pprof", "go", "*")))
    if not out:
        out = sorted(glob.glob(os.path.join(SHARED, "fixtures", "sdk", "*.pprof.gz")))
    return [p for p in out if os.path.isfile(p)]


def find_go():
    """The go command: PATH first, then the toolchain's usual home."""
    found = shutil.which("go")
    if found is None and os.access("/usr/local/go/bin/go", os.X_OK):
        found = "/usr/local/go/bin/go"
    return found


GO = find_go()


def pprof(args, env):
    p = subprocess.run([GO, "tool", "pprof"] + args, capture_output=True, text=True, env=env,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def exe_functions():
    """Names of the functions defined in the pprofgate binary (nm), for "is it ours"."""
    p = subprocess.run(["nm", "--defined-only", BIN], capture_output=True, text=True)
    names = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTW":
            names.add(parts[2])
    return names


def main():
    res = Results()
    if GO is None:
        # Visible in the ctest output as "Skipped" (SKIP_RETURN_CODE 77), never as passed.
        print("NOT RUN: no go command on PATH or at /usr/local/go/bin/go; "
              "install Go to run go tool pprof against the gateway", flush=True)
        sys.exit(77)
    bodies = fixtures()
    res.check("real pprof fixtures found", len(bodies) > 0, FIXTURES)
    tmp = tempfile.mkdtemp(prefix="pg-pprof-")
    # pprof's files go to tmp; the build cache stays where go keeps it, since
    # `go tool pprof` is compiled on first use and a fresh cache recompiles it.
    gocache = subprocess.run([GO, "env", "GOCACHE"], capture_output=True, text=True).stdout.strip()
    env = dict(os.environ, PPROF_TMPDIR=tmp, HOME=tmp)
    if gocache:
        env["GOCACHE"] = gocache
    ours = exe_functions()
    res.check("pprofgate binary has a symbol table", "pg_pprof_translate" in ours)

    with Gateway(CONFIG % RATE) as gw:
        port = admin_port(gw, "/debug/pprof/")
        res.check("pprof extension serves on a loopback port", port is not None, gw.log()[-2000:])
        ok = 0
        for rnd in range(3):
            for b in bodies:
                with open(b, "rb") as f:
                    data = f.read()
                st, _, _ = post(gw.port, "/v1/pprof", data,
                                {"Content-Type": "application/octet-stream"})
                ok += st == 204
        res.check("fixtures accepted (204)", ok == 3 * len(bodies), f"{ok}/{3 * len(bodies)}")
        url = f"http://127.0.0.1:{port}/debug/pprof/heap"

        rc, out, err = pprof(["-raw", url], env)
        res.check("go tool pprof -raw reads /debug/pprof/heap", rc == 0, err[-1500:])
        res.check("-raw: period type space/bytes", "PeriodType: space bytes" in out, out[:300])
        res.check("-raw: period = heap_sample_rate", f"Period: {RATE}\n" in out, out[:300])
        res.check("-raw: Go's four sample types, inuse_space default",
                  "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"
                  in out, out[:400])
        maps = out.split("Mappings")[-1]
        res.check("-raw: executable mapping with a build id",
                  re.search(r"pprofgate [0-9a-f]{40}", maps) is not None, maps[:600])

        rc, out, err = pprof(["-top", "-nodecount=15", url], env)
        res.check("go tool pprof -top works", rc == 0, err[-1500:])
        res.check("-top: Type inuse_space", "Type: inuse_space" in out, out[:300])
        rows = []
        for line in out.splitlines():
            m = re.match(r"\s*([\d.]+\w*B|0)\s+[\d.]+%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(.+)$", line)
            if m and m.group(1) not in ("0", "0B"):
                rows.append(m.group(2).strip())
        top = rows[:3]
        res.check("-top: in-use rows present", len(rows) > 0, out[-1500:])
        res.check("-top: the top in-use frames are pprofgate functions by name",
                  len(top) > 0 and sum(1 for n in top if n in ours) >= min(2, len(top)),
                  f"top={top}")

        rc, out, err = pprof(["-top", "-cum", "-sample_index=alloc_space", "-nodecount=60", url], env)
        res.check("-top alloc_space: the translate path allocated",
                  rc == 0 and "pg_pprof_translate" in out, out[-2500:] + err[-500:])

        rc, out, err = pprof(["-raw", f"http://127.0.0.1:{port}/debug/pprof/allocs"], env)
        res.check("/debug/pprof/allocs defaults to alloc_space",
                  rc == 0 and "alloc_space/bytes[dflt]" in out, out[:400] + err[-500:])

        # The /api/v1 alias as go tool pprof uses it: pprof asks the symbol
        # sibling of the profile's URL (/api/v1/debug/pprof/symbol).
        api = f"http://127.0.0.1:{port}/api/v1/debug/pprof/heap"
        rc, out, err = pprof(["-top", "-nodecount=15", api], env)
        res.check("go tool pprof -top reads the /api/v1/debug/pprof/heap alias",
                  rc == 0 and "Type: inuse_space" in out, err[-1500:])
        res.check("go tool pprof: no failed request on the alias",
                  "404" not in err and "failed" not in err.lower(), err[-1500:])
        st, _, body = get(port, "/api/v1/debug/pprof/symbol")
        res.check("/api/v1/debug/pprof/symbol answers the symbolz probe",
                  st == 200 and body == b"num_symbols: 1\n", (st, body))
        st, _, body = get(port, "/api/v1/debug/pprof/")
        res.check("/api/v1/debug/pprof/ index", st == 200 and b"/debug/pprof/heap" in body, st)
        st, _, _ = get(port, "/api/v1/debug/pprofx")
        res.check("/api/v1/debug/pprofx is not an alias -> 404", st == 404, st)

        st, hdr, body = get(port, "/api/v1/debug/pprof/heap")
        res.check("/api/v1/debug/pprof/heap alias: gzip'd protobuf",
                  st == 200 and body[:2] == b"\x1f\x8b"
                  and hdr.get("content-type") == "application/octet-stream", st)
        res.check("Content-Disposition like Go's",
                  hdr.get("content-disposition") == 'attachment; filename="heap"', hdr)

        # symbolz: names for addresses taken from the profile itself
        st, _, body = get(port, "/debug/pprof/heap")
        raw_path = os.path.join(tmp, "heap.pb.gz")
        with open(raw_path, "wb") as f:
            f.write(body)
        rc, out, err = pprof(["-raw", "-symbolize=none", raw_path], env)
        locs = re.findall(r"^\s+\d+: (0x[0-9a-f]+) M=\d+ (\S+) ", out, re.M)
        named = [(a, n) for a, n in locs if n in ours][:20]
        res.check("profile carries function names itself", len(named) > 0, out[-800:])
        st, _, body = get(port, "/debug/pprof/symbol", "POST",
                          "+".join(a for a, _ in named).encode())
        lines = body.decode().splitlines()
        got = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
        res.check("symbolz: num_symbols header", lines[:1] == ["num_symbols: 1"], body[:200])
        res.check("symbolz: every address named as in the profile",
                  all(got.get(a) == n for a, n in named), f"{named[:3]} vs {list(got.items())[:3]}")
        st, _, abody = get(port, "/api/v1/debug/pprof/symbol", "POST",
                           "+".join(a for a, _ in named).encode())
        res.check("symbolz through the /api/v1 alias: the same answer", abody == body, abody[:200])
        st, _, body = get(port, "/debug/pprof/symbol")
        res.check("symbolz GET probe", st == 200 and body == b"num_symbols: 1\n", body)

        # ?seconds=N: answered later from a timer; the loop keeps serving meanwhile
        # (a loop blocked for the delta would answer the index after >= 2.7 s)
        box = {}

        def delta():
            t0 = time.time()
            box["r"] = get(port, "/debug/pprof/heap?seconds=3")
            box["t"] = time.time() - t0

        th = threading.Thread(target=delta)
        th.start()
        time.sleep(0.3)
        t0 = time.time()
        st_idx, _, idx = get(port, "/debug/pprof/")
        quick = time.time() - t0
        th.join(30)
        res.check("index served while a delta waits", st_idx == 200 and b"/debug/pprof/heap" in idx
                  and quick < 2.0, f"{st_idx} {quick:.2f}s")
        st, _, body = box.get("r", (0, {}, b""))
        res.check("?seconds=3 delta: 200 after ~3 s", st == 200 and box.get("t", 0) >= 2.9, box.get("t"))
        dpath = os.path.join(tmp, "delta.pb.gz")
        with open(dpath, "wb") as f:
            f.write(body)
        rc, out, err = pprof(["-raw", dpath], env)
        res.check("delta profile parses", rc == 0 and "Period:" in out, err[-500:])

        st, _, body = get(port, "/debug/pprof/heap?seconds=x")
        res.check("bad seconds -> 400", st == 400 and b"seconds" in body, body)
        st, _, body = get(port, "/debug/pprof/nope")
        res.check("unknown path -> 404", st == 404, st)
        st, hdr, body = get(port, "/debug/pprof/heap", "POST", b"")
        res.check("POST heap -> 405 with Allow", st == 405 and "allow" in hdr, st)
        res.check("gateway still running", gw.proc.poll() is None)

    with Gateway(CONFIG % 0) as gw:
        port = admin_port(gw, "/debug/pprof/")
        st, _, body = get(port, "/debug/pprof/heap")
        res.check("sampler off -> 503 saying how to turn it on",
                  st == 503 and b"heap_sample_rate" in body, (st, body))
        st, _, body = get(port, "/debug/pprof/symbol", "POST", b"0x1")
        res.check("symbolz still answers with the sampler off", st == 200, st)
    shutil.rmtree(tmp, ignore_errors=True)
    res.finish()


if __name__ == "__main__":
    main()
