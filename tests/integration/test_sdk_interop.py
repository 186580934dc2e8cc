# SPDX-License-Identifier: Apache-2.0
"""Interop with the real client: @coralogix/opentelemetry-profiling (Node,
tests/node/node_modules) pushes wall and heap profiles with
OTEL_PROFILES_EXPORTER=pprof to the running gateway. Asserts the client saw
no failed export, the gateway answered 204 to each push, and every push shows
up in the debug output (detailed) with its samples and its sample types."""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, basic_config  # noqa: E402

res = Results()
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "node", "node_modules")
if not os.path.isdir(os.path.join(NODE_MODULES, "@coralogix", "opentelemetry-profiling")):
    res.check("SDK installed in tests/node (run scripts/bootstrap.sh --test)", False, NODE_MODULES)
    res.finish()

# Busy work with recognisable function names, profiled for ~3 collections.
CLIENT = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgInteropBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
function pgInteropAlloc() { const keep = []; for (let i = 0; i < 2000; i++) keep.push(new Array(512).fill(i)); return keep; }
(async () => {
  const p = new ProfilingProvider({ serviceName: 'interop-svc', collectionIntervalMs: 700,
                                    heapSamplingIntervalBytes: 32768 });
  await p.start();
  const held = [];
  const t = setInterval(() => { pgInteropBurn(40); held.push(pgInteropAlloc()); if (held.length > 4) held.shift(); }, 50);
  await new Promise(r => setTimeout(r, 2600));
  clearInterval(t);
  await p.stop();
  console.log('client done');
})().catch(e => { console.error('client error', e); process.exit(2); });
"""

cfg = basic_config("detailed", server_extra="      include_metadata: true")
with Gateway(cfg) as gw:
    env = dict(os.environ, NODE_PATH=NODE_MODULES, OTEL_PROFILES_EXPORTER="pprof",
               OTEL_EXPORTER_PPROF_ENDPOINT=f"http://127.0.0.1:{gw.port}/v1/pprof",
               OTEL_SERVICE_NAME="interop-svc")
    try:
        r = subprocess.run(["node", "-e", CLIENT], env=env, capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(SOURCE_DIR, "tests", "node"))
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = e.stdout or "", e.stderr or "", -1
    res.check("client ran to completion", rc == 0 and "client done" in out, (rc, out, err[-800:]))
    res.check("client reported no failed export", "export failed" not in err, err[-800:])

    # The debug exporter prints from its own thread, just after each 204.
    deadline = time.time() + 5
    while gw.debug().count('msg="Profiles"') < 4 and time.time() < deadline:
        time.sleep(0.05)
    dbg = gw.debug()
    batches = re.findall(r'msg="Profiles" resource_profiles=(\d+) sample_records=(\d+)', dbg)
    print(f"     {len(batches)} batches: {batches}")
    res.check("at least 4 pushes arrived (2 collections x wall+heap)", len(batches) >= 4, batches)
    res.check("every push carries samples", batches and all(int(s) > 0 for _, s in batches),
              batches)
    res.check("wall profiles arrived (wall/nanoseconds)",
              re.search(r"^    wall$", dbg, re.M) is not None and "    nanoseconds\n" in dbg,
              dbg[:300])
    res.check("heap profiles arrived (inuse_space/bytes)",
              "    inuse_space\n" in dbg and "    inuse_objects\n" in dbg, dbg[:300])
    res.check("stacks name the client's functions",
              re.search(r"^            pgInteropBurn \S+:\d+$", dbg, re.M) is not None,
              [l for l in dbg.splitlines() if "pgInterop" in l][:5])
    res.check("heap stacks show the allocating function",
              re.search(r"^            pgInteropAlloc \S+:\d+$", dbg, re.M) is not None,
              [l for l in dbg.splitlines() if "pgInterop" in l][:5])
    refused = re.findall(r"answered (\d+)", gw.log())
    res.check("gateway answered no errors", not refused, refused)
    rc = gw.stop()
    res.check("clean exit", rc == 0, rc)

res.finish()
