# SPDX-License-Identifier: Apache-2.0
"""A spool that cannot be opened ends the start promptly: the real binary
exits non-zero within a few seconds with a message naming the path and the
cause, for each way it used to hang (a second gateway on the same
directory, directory /proc, a LOCK that is a directory, a FIFO in the
spool)."""

import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, Gateway, Results  # noqa: E402

res = Results()

CONFIG = """
extensions:
  file_storage/q:
    directory: {dir}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:1"
    tls: {{insecure: true}}
    sending_queue: {{storage: file_storage/q}}
service:
  extensions: [file_storage/q]
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""


def run_expect_failure(name, directory, want):
    tmp = tempfile.mkdtemp(prefix="pg-it-storage-")
    cfg = os.path.join(tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(dir=directory))
    t0 = time.time()
    try:
        p = subprocess.run([BIN, "--config", cfg], capture_output=True, timeout=10)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        rc = p.returncode
    except subprocess.TimeoutExpired as e:
        out = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace")
        rc = None
    took = time.time() - t0
    res.check(f"{name}: exits (no hang) within 10 s", rc is not None, out[-800:])
    res.check(f"{name}: non-zero exit", rc not in (None, 0), f"rc={rc}")
    res.check(f"{name}: message names the cause", re.search(want, out) is not None, out[-800:])
    res.check(f"{name}: prompt ({took:.1f}s)", took < 5, f"{took:.1f}s")


root = tempfile.mkdtemp(prefix="pg-it-spool-")

# A second gateway on the directory of a running one.
live = os.path.join(root, "live")
with Gateway(CONFIG.format(dir=live)) as gw:
    run_expect_failure("second gateway", live,
                       r"locked by a running gateway \(pid %d\)" % gw.proc.pid)
    res.check("first gateway still serving", gw.proc.poll() is None)

run_expect_failure("directory /proc", "/proc", r"/proc/exporter_otlp")

d = os.path.join(root, "lockdir", "exporter_otlp")
os.makedirs(os.path.join(d, "LOCK"))
run_expect_failure("LOCK is a directory", os.path.dirname(d),
                   re.escape(os.path.join(d, "LOCK")) + r".*it is a directory")

d = os.path.join(root, "fifo", "exporter_otlp")
os.makedirs(d)
os.mkfifo(os.path.join(d, "0000000000000001.seg"))
run_expect_failure("FIFO segment", os.path.dirname(d),
                   re.escape(os.path.join(d, "0000000000000001.seg")) + r" is a FIFO")

subprocess.run(["rm", "-rf", root], check=False)
res.finish()
