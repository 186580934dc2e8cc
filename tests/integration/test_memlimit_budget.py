# SPDX-License-Identifier: Apache-2.0
"""memory_limiter charges a request as it grows, not only at admission (issue 25 item 3;
core/membudget.h). limit_mib 48 (soft 40):

- the 23 KB gzip body that inflates to 1e6 samples (~115 MiB to translate) is admitted on
  its estimate and refused by the limiter as its charges pass the limit: a 413 naming the
  memory limiter (alone it could never fit), nothing of it exported, and the process's
  VmHWM stays under limit_mib;
- the same shape with 2e5 samples (~25 MiB, five times its admission estimate) fits and is
  accepted: the estimate is corrected, not enforced;
- real pushes before and after are accepted.
Takes ~3 s."""
import gzip
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import FIXTURES, Gateway, Results, post  # noqa: E402
from pg_pprof import field, varint  # noqa: E402

LIMIT_MIB = 48
HEAP = open(os.path.join(FIXTURES, "pprof", "go", "heap.pb.gz"), "rb").read()

CFG = f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: {LIMIT_MIB}
    spike_limit_mib: 8
exporters:
  debug:
    verbosity: basic
    output_paths: ["{{debug}}"]
service:
  pipelines:
    profiles: {{receivers: [pprof], processors: [memory_limiter], exporters: [debug]}}
"""


def bomb(n):
    """@n identical one-frame samples: 8 bytes of pprof each, gzip'd ~350x."""
    out = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    out += field(5, 2, field(1, 0, 1) + field(2, 0, 3))
    out += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1)))
    out += field(2, 2, field(1, 2, varint(1)) + field(2, 2, varint(1))) * n
    for s in (b"", b"samples", b"count", b"main.spin"):
        out += field(6, 2, s)
    return gzip.compress(bytes(out), 9)


def batches(gw):
    """The sample_records figure of every batch the debug exporter printed."""
    try:
        with open(gw.debug_path, errors="replace") as f:
            return re.findall(r"sample_records=(\d+)", f.read())
    except FileNotFoundError:
        return []


def main():
    res = Results()
    with Gateway(CFG) as gw:
        st, _, _ = post(gw.port, "/v1/pprof", HEAP)
        res.check("a real push is accepted", st == 204, st)
        gw.wait_debug("sample_records=")

        st, hdr, body = post(gw.port, "/v1/pprof", bomb(1_000_000), timeout=60)
        text = body.decode(errors="replace")
        res.check("the 1e6-sample body is refused by the memory limiter as it grows (413)",
                  st == 413 and "memory limit" in text, (st, text[:300]))
        res.check("the refusal says it passed limit_mib", f"limit_mib {LIMIT_MIB}.0" in text,
                  text[:300])
        hwm = (gw.hwm_kb() or 0) / 1024
        res.check(f"VmHWM {hwm:.1f} MiB stays under limit_mib {LIMIT_MIB}", 0 < hwm <= LIMIT_MIB,
                  hwm)

        st, _, body = post(gw.port, "/v1/pprof", bomb(200_000), timeout=60)
        res.check("a 2e5-sample body, five times its estimate but within the limit, is accepted",
                  st == 204, (st, body[:300]))
        st, _, _ = post(gw.port, "/v1/pprof", HEAP)
        res.check("a real push after them is accepted", st == 204, st)
        hwm = (gw.hwm_kb() or 0) / 1024
        res.check(f"VmHWM {hwm:.1f} MiB still under limit_mib {LIMIT_MIB}", 0 < hwm <= LIMIT_MIB,
                  hwm)
        # The debug exporter prints every batch it got: the three accepted ones, not the
        # refused one (1e6 sample records).
        deadline = time.time() + 10
        while time.time() < deadline and len(batches(gw)) < 3:
            time.sleep(0.05)
        time.sleep(0.3)
        got = batches(gw)
        res.check("exactly the three accepted requests are exported, nothing of the refused one",
                  len(got) == 3 and "1000000" not in got and "200000" in got, got)
        log = gw.log()
        res.check("the refusal is logged with the limiter's words", "memory limit" in log,
                  log[-1500:])
    res.finish()


if __name__ == "__main__":
    main()
