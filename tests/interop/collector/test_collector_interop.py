# SPDX-License-Identifier: Apache-2.0
"""Interop with the real OpenTelemetry Collector: pprofgate's otlp exporter
(gRPC) -> the collector's otlp receiver -> its file exporter (JSON). Every
fixture (Go runtime profiles, edge cases, the worked example, the four SDK
pushes, the ~7 MB generated profile) is pushed to pprofgate one at a time; the
collector must log no warning or error, and what it wrote must be exactly the
pprof input: every sample's value, resolved stack (mapping, address, lines,
functions), attributes and link, and every profile's type, period, times and
attributes, in the documented profile order."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collector_lib import (gateway_to_otlp_config, otlp_to_file_config, Collector, Gateway, body_pprof, fixture_bodies, free_port,  # noqa: E402
                           merged, require_collector, wait_output)
from pg_harness import Results, post  # noqa: E402
import pprof_otlp  # noqa: E402

require_collector()
res = Results()

port = free_port()
COLLECTOR_CONFIG = otlp_to_file_config(port)

GATEWAY_CONFIG = gateway_to_otlp_config(
    port, 'set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))')


with Collector(COLLECTOR_CONFIG) as col, Gateway(GATEWAY_CONFIG) as gw:
    seen = 0
    n_fixtures = 0
    for name, body, hdrs in fixture_bodies(gw.tmp):
        want = pprof_otlp.pprof_profiles(body_pprof(body, hdrs))
        status, _, rbody = post(gw.port, "/v1/pprof", body, hdrs, timeout=60)
        if not res.check(f"{name}: pprofgate accepts it (204)", status == 204, (status, rbody[:200])):
            continue
        n_fixtures += 1
        n_want = sum(sum(p["samples"].values()) for p in want)
        lines = wait_output(col, seen, n_want, 60 if "large" in name else 20)
        seen += len(lines)
        got, resources, scopes = merged(lines)
        if n_want == 0:
            # The collector's otlp receiver answers a request without samples
            # and passes nothing on (receiver/otlpreceiver/internal/profiles).
            res.check(f"{name}: no samples, nothing in the collector", not got, len(got))
            continue
        res.check(f"{name}: {len(want)} profiles arrive", len(got) == len(want),
                  [p["sample_type"] for p in got])
        order = pprof_otlp.otlp_order(len(want))
        diffs = []
        for j, k in enumerate(order[:len(got)]):
            diffs += [f"profile {j} (pprof type {k}): {d}"
                      for d in pprof_otlp.diff_profile(want[k], got[j])]
        res.check(f"{name}: samples, values, stacks, mappings, attributes, links as sent "
                  f"({n_want} sample records)", not diffs, "; ".join(diffs)[:1500])
        header = hdrs.get("Otel-Resource-Attributes", "")
        if header.startswith("service.name=") and "," not in header:
            res.check(f"{name}: resource attributes from the header",
                      all(r == {"service.name": ("s", header[13:])} for r in resources),
                      resources[:1])
        else:
            res.check(f"{name}: service.name on the resource",
                      all(r.get("service.name") for r in resources), resources[:1])
    res.check("every fixture delivered", n_fixtures >= 15, n_fixtures)
    # The collector's gRPC server also takes gzip bodies made at the ends of
    # compression_params.level's range (libdeflate's fastest and its slowest
    # parser), checked on the fixtures with links (the SDK pushes).
    sdk = [f for f in fixture_bodies(gw.tmp, with_large=False) if "push" in f[0]][:2]
    for level in (1, 9):
        cfg = GATEWAY_CONFIG.replace("    tls: {insecure: true}\n",
                                     "    tls: {insecure: true}\n"
                                     f"    compression_params: {{level: {level}}}\n", 1)
        with Gateway(cfg) as gwl:
            for name, body, hdrs in sdk:
                want = pprof_otlp.pprof_profiles(body_pprof(body, hdrs))
                n_want = sum(sum(p["samples"].values()) for p in want)
                status, _, _ = post(gwl.port, "/v1/pprof", body, hdrs, timeout=60)
                lines = wait_output(col, seen, n_want, 20)
                seen += len(lines)
                got = merged(lines)[0]
                order = pprof_otlp.otlp_order(len(want))
                diffs = [d for j, k in enumerate(order[:len(got)])
                         for d in pprof_otlp.diff_profile(want[k], got[j])]
                res.check(f"gzip level {level}, {name}: the collector gets it as sent",
                          status == 204 and len(got) == len(want) and not diffs,
                          (status, len(got), "; ".join(diffs)[:500]))
            res.check(f"gzip level {level}: pprofgate says the level",
                      f"compression gzip level {level}," in gwl.log(), gwl.log()[-500:])
            res.check(f"gzip level {level}: pprofgate logged no error",
                      "level=error" not in gwl.log(), gwl.log()[-1500:])
    res.check("the SDK pushes are among the fixtures", len(sdk) == 2, len(sdk))
    time.sleep(0.3)
    res.check("collector logged no warning or error", not col.problems(),
              "\n".join(col.problems())[:1500])
    # (the SDK pushes' header makes ParseKeyValue fail at the apostrophe in
    # owner=o'brien: a warning with error_mode ignore, as in the collector)
    res.check("pprofgate logged no error",
              "level=error" not in gw.log(), gw.log()[-1500:])

res.finish()
