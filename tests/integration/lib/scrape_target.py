# SPDX-License-Identifier: Apache-2.0
"""The Go net/http/pprof program the scrape tests run (tests/integration/scrape/
pprof_target.go): built with /usr/local/go (or go on PATH) once per build dir."""
import os
import re
import shutil
import subprocess

SRC = os.path.join(os.path.dirname(__file__), "..", "scrape", "pprof_target.go")


def go_bin():
    for g in ("/usr/local/go/bin/go", shutil.which("go")):
        if g and os.path.exists(g):
            return g
    return None


def build_target(res):
    out_dir = os.environ.get("PG_BUILD_DIR", "/tmp")
    exe = os.path.join(out_dir, "scrape_pprof_target")
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(SRC):
        return exe
    go = go_bin()
    res.check("Go toolchain present", go is not None)
    if go is None:
        res.finish()
    p = subprocess.run([go, "build", "-o", exe, SRC], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, GO111MODULE="off"))
    res.check("Go target builds", p.returncode == 0, p.stderr[-1500:])
    if p.returncode != 0:
        res.finish()
    return exe


def start_target(exe, *args):
    p = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    m = re.search(r"listening on (\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError("target did not start: " + line)
    return p, int(m.group(1))
