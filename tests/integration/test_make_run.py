# SPDX-License-Identifier: Apache-2.0
"""`make run` as a new user meets it, against this build directory: it needs
only what the gateway needs. npm, node, go, clang and wrk are replaced on PATH
by stand-ins that record being called and fail, and the npm registry points at
a closed port; the gateway must still start, the first line on the terminal
says what make run is doing, one short line per step or progress mark, and
the build's own output goes to the run log only; only the gateway's targets
are built, and a push through the default config is answered 204."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, SOURCE_DIR, Results, post  # noqa: E402

BUILD = os.environ.get("PG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
TEST_ONLY = ["npm", "node", "npx", "go", "clang", "wrk"]


def main():
    res = Results()
    cache = os.path.join(BUILD, "CMakeCache.txt")
    try:
        with open(cache) as f:
            release = "CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n" in f.read()
    except OSError:
        release = False
    if not release:
        # make run would reconfigure this directory and relink the binary
        # other tests are using.
        print(f"NOT RUN: {BUILD} is not the RelWithDebInfo build make run uses", flush=True)
        sys.exit(77)

    tmp = tempfile.mkdtemp(prefix="pg-makerun-")
    fake = os.path.join(tmp, "bin")
    marks = os.path.join(tmp, "called")
    os.makedirs(fake)
    for name in TEST_ONLY:
        p = os.path.join(fake, name)
        with open(p, "w") as f:
            f.write(f"#!/bin/sh\necho {name} >> {marks}\necho '{name}: not for make run' >&2\nexit 1\n")
        os.chmod(p, 0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.update(PATH=fake + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               npm_config_registry="http://127.0.0.1:9/", PPROFGATE_ENDPOINT="127.0.0.1:0",
               PPROFGATE_PPROF_ENDPOINT="127.0.0.1:0", PPROFGATE_HEALTH_ENDPOINT="127.0.0.1:0",
               PPROFGATE_METRICS_ENDPOINT="127.0.0.1:0")
    out_path = os.path.join(tmp, "terminal.out")
    run_log = os.path.join(BUILD, "make-run.log")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(["make", "run", f"BUILD={BUILD}"], cwd=SOURCE_DIR, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    port = None
    deadline = time.time() + 240  # a stale binary is relinked first
    text = ""
    while time.time() < deadline and proc.poll() is None:
        with open(out_path, errors="replace") as f:
            text = f.read()
        m = re.search(r"listening on [0-9.]+:(\d+)", text)
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.1)
    try:
        res.check("make run starts the gateway", port is not None, text[-2000:])
        lines = text.splitlines()
        first_log = next((i for i, ln in enumerate(lines)
                          if re.match(r"ts=\S+ level=\w+ comp=\S+ msg=", ln)), len(lines))
        before = lines[:first_log]
        res.check("make run says each step before pprofgate's first log line",
                  any(ln.startswith("make run: building the gateway") for ln in before)
                  and any(ln.startswith("make run: starting ") for ln in before), before)
        res.check("nothing else before it: steps and short progress lines only",
                  all(re.match(r"(make run: |    \d+%$|    done in \d+s$)", ln) for ln in before),
                  before)
        res.check("no 'Entering directory' noise", "Entering directory" not in text, before)
        called = open(marks).read().split() if os.path.exists(marks) else []
        res.check("no test-only tool was called (npm, node, go, clang, wrk)", not called, called)
        try:
            log = open(run_log, errors="replace").read()
        except OSError:
            log = ""
        built = re.findall(r"Built target (\S+)", log)
        res.check("build output went to the run log", "Built target pprofgate" in log, log[-800:])
        res.check("only the gateway's targets were built",
                  built and not [t for t in built if t.startswith(("test_", "fuzz_", "pg_pprof2otlp"))
                                 or t in ("otlp_export",)], built)
        if port is not None:
            with open(os.path.join(FIXTURES, "pprof", "go", "cpu.pb.gz"), "rb") as f:
                body = f.read()
            st, _, _ = post(port, "/v1/pprof", body,
                            {"Otel-Resource-Attributes": "service.name=checkout"})
            res.check("a push through the default config -> 204", st == 204, st)
    finally:
        if proc.poll() is None:
            # SIGTERM to the gateway (make's child: the recipe execs it); make
            # exits with it. Anything left of this test's session is killed.
            kids = []
            for task in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{task}/children") as f:
                    kids += [int(k) for k in f.read().split()]
            for k in kids:
                os.kill(k, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    with open(out_path, errors="replace") as f:
        text = f.read()
    res.check("SIGTERM: the gateway exits cleanly", "exited cleanly" in text, text[-800:])
    shutil.rmtree(tmp, ignore_errors=True)
    res.finish()


if __name__ == "__main__":
    main()
