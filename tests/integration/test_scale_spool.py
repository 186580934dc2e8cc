# SPDX-License-Identifier: Apache-2.0
"""Start-up scans must not block listening (issue 25 item 4). A gateway
spools pushes while its OTLP destination is down and is SIGKILLed; a
damaged 300 MB segment (sparse: zeros, no intact header) is added to its
spool. The next start listens at once (the old scan read the whole segment
first: ~6 s here, 85 s for 3 GiB in the issue), accepts pushes while the segment is
scanned in the background, and then delivers everything: the earlier run's
records once the scan ends, the new ones at once (the order the spool
documents). SIGTERM during the scan ends the gateway promptly. The bounds
are generous; the goal (listening <= 1 s) is measured in bench/."""
import os
import shutil
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from grpc_sink import GrpcServer  # noqa: E402
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402

HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()
DAMAGED_BYTES = 2 << 30
LISTEN_BOUND = 3.0
N_OLD, N_NEW = 4, 3

CONFIG = """
extensions:
  file_storage/q:
    directory: {dir}
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0"}}
exporters:
  otlp:
    endpoint: "127.0.0.1:{port}"
    tls: {{insecure: true}}
    retry_on_failure: {{initial_interval: 100ms, max_interval: 200ms}}
    sending_queue: {{storage: file_storage/q}}
service:
  extensions: [file_storage/q]
  pipelines:
    profiles: {{receivers: [pprof], exporters: [otlp]}}
"""


def push(gw):
    st, _, _ = post(gw.port, "/v1/pprof", HEAP, timeout=10)
    return st


def samples_per_push():
    with GrpcServer() as srv, Gateway(CONFIG.format(dir=os.path.join(
            os.environ.get("TMPDIR", "/tmp"), f"pg-spool-probe-{os.getpid()}"), port=srv.port)) as gw:
        push(gw)
        s = srv.wait(lambda s: s["samples"] > 0, 20)
        return s["samples"]


def add_damaged_segment(qdir):
    segs = sorted(f for f in os.listdir(qdir) if f.endswith(".seg"))
    last = int(segs[-1][:16], 16) if segs else 0
    path = os.path.join(qdir, "%016x.seg" % (last + 1))
    with open(path, "wb") as f:
        f.truncate(DAMAGED_BYTES)  # sparse: reads as zeros, no header holds
    return path


def start_timed(cfg):
    gw = Gateway(cfg, ready_timeout=60)
    t0 = time.time()
    gw.start()
    return gw, time.time() - t0


def main():
    res = Results()
    per = samples_per_push()
    res.check(f"probe: one push carries samples ({per})", per > 0)
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pg-scale-spool-{os.getpid()}")
    shutil.rmtree(root, ignore_errors=True)
    qdir = os.path.join(root, "exporter_otlp")
    # Run 1: the destination is down; pushes are spooled, then SIGKILL.
    with Gateway(CONFIG.format(dir=root, port=1)) as gw:
        sts = [push(gw) for _ in range(N_OLD)]
        res.check("run 1: pushes accepted into the spool", all(s in (200, 204) for s in sts), sts)
        time.sleep(0.5)
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait()
    damaged = add_damaged_segment(qdir)
    keep = root + "-copy"
    shutil.copytree(root, keep)
    # Run 2: listens at once, accepts while scanning, delivers everything.
    with GrpcServer() as srv:
        gw, took = start_timed(CONFIG.format(dir=root, port=srv.port))
        try:
            res.check(f"run 2: listening within {LISTEN_BOUND}s beside a damaged "
                      f"{DAMAGED_BYTES >> 20} MiB segment ({took:.2f}s)", took < LISTEN_BOUND,
                      gw.log()[-600:])
            scanning = gw.wait_log(r"indexed in the background", 2) is not None
            res.check("run 2: the scan runs in the background", scanning, gw.log()[-800:])
            sts = [push(gw) for _ in range(N_NEW)]
            res.check("run 2: pushes during the scan accepted", all(s in (200, 204) for s in sts),
                      sts)
            done = gw.wait_log(r"background recovery done", 120)
            res.check("run 2: the scan finished and said so", done is not None, gw.log()[-800:])
            want = (N_OLD + N_NEW) * per
            s = srv.wait(lambda s: s["samples"] >= want, 30)
            res.check(f"run 2: everything delivered ({N_OLD} earlier + {N_NEW} new pushes)",
                      s["samples"] == want, (s["samples"], want, gw.log()[-800:]))
            res.check("run 2: the damaged region was counted", "corrupt" in gw.log(),
                      gw.log()[-500:])
            # Run 2 ends while its own new records are being acked: wait, then stop.
            srv.wait(lambda s: False, 1)
            res.check("run 2: SIGTERM exits cleanly", gw.stop(timeout=20) == 0, gw.log()[-500:])
        finally:
            gw.kill()
    # Run 2b: a start after the background recovery (ids jumped, a sequence
    # gap) reads no loss into the jump and replays nothing twice.
    with GrpcServer() as srv, Gateway(CONFIG.format(dir=root, port=srv.port)) as gw:
        time.sleep(2)
        log = gw.log()
        res.check("run 2b: no records reported lost after the id jump",
                  "are missing" not in log and "lost" not in log.split("exporting to")[-1],
                  log[-800:])
        res.check("run 2b: nothing replayed twice", srv.stats()["samples"] == 0,
                  srv.stats()["samples"])
    # Run 3: SIGTERM while the scan runs ends the gateway promptly.
    with GrpcServer() as srv:
        gw, took = start_timed(CONFIG.format(dir=keep, port=srv.port))
        try:
            t0 = time.time()
            rc = gw.stop(signal.SIGTERM, timeout=15)
            res.check(f"run 3: SIGTERM during the scan exits cleanly ({time.time() - t0:.1f}s)",
                      rc == 0, (rc, gw.log()[-800:]))
        finally:
            gw.kill()
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(keep, ignore_errors=True)
    res.finish()


if __name__ == "__main__":
    main()
