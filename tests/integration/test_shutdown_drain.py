# SPDX-License-Identifier: Apache-2.0
"""service::shutdown_delay with the real client: the kubelet sends SIGTERM to
the app and to an ordinary sidecar at the same instant. The app
(@coralogix/opentelemetry-profiling, pprof push, a SIGTERM handler that awaits
provider.stop() as its README says) sends its final collection window right
after the signal; the gateway must still take it (204) and deliver it.

Also, during the delay: health_check answers 503 at once, other pushes are
answered 204 and delivered, each step is logged; a second SIGTERM ends the
delay at once (the drain follows and the gateway exits 0); without a second
signal the delay runs out and the drain follows."""

import http.client
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import SOURCE_DIR, Gateway, Results, fixture, post, read  # noqa: E402

res = Results()
NODE_DIR = os.path.join(SOURCE_DIR, "tests", "node")
NODE_MODULES = os.path.join(NODE_DIR, "node_modules")
if not os.path.isdir(os.path.join(NODE_MODULES, "@coralogix", "opentelemetry-profiling")):
    res.check("SDK installed in tests/node (run scripts/bootstrap.sh --test)", False, NODE_MODULES)
    res.finish()

DELAY_S = 15  # long: the checks during it must not outlast it on a loaded machine

CONFIG = f"""
receivers:
  pprof:
    server: {{endpoint: "127.0.0.1:0", include_metadata: true}}
exporters:
  debug: {{verbosity: normal, output_paths: ["{{debug}}"]}}
extensions:
  health_check: {{endpoint: "127.0.0.1:0"}}
service:
  shutdown_delay: {DELAY_S}s
  extensions: [health_check]
  pipelines:
    profiles: {{receivers: [pprof], exporters: [debug]}}
"""

# The app: profiles itself with a collection window longer than the test, so
# the only push is the final one that provider.stop() sends on SIGTERM.
APP = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgDrainBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
(async () => {
  const p = new ProfilingProvider({ serviceName: 'drain-svc', collectionIntervalMs: 600000 });
  await p.start();
  const t = setInterval(() => pgDrainBurn(20), 30);
  process.on('SIGTERM', async () => {
    clearInterval(t);
    await p.stop();
    console.log('app flushed');
    process.exit(0);
  });
  console.log('app running');
})().catch(e => { console.error('app error', e); process.exit(2); });
"""


def health(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/")
        st = c.getresponse().status
        c.close()
        return st
    except OSError:
        return None


def start_app(port):
    env = dict(os.environ, NODE_PATH=NODE_MODULES, OTEL_PROFILES_EXPORTER="pprof",
               OTEL_EXPORTER_PPROF_ENDPOINT=f"http://127.0.0.1:{port}/v1/pprof",
               OTEL_SERVICE_NAME="drain-svc")
    app = subprocess.Popen(["node", "-e", APP], env=env, cwd=NODE_DIR, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    line = app.stdout.readline()
    return app, line


def main():
    cpu = fixture("pprof/go/cpu.pb.gz")
    res.check("fixture found", cpu is not None)
    body = read(cpu) if cpu else b""

    # ---- the race: SIGTERM to the app and the gateway at the same instant ----
    with Gateway(CONFIG) as gw:
        m = gw.wait_log(r"serving health on [0-9.]+:(\d+)")
        hport = int(m.group(1)) if m else 0
        res.check("running: health 200", health(hport) == 200)
        app, first = start_app(gw.port)
        res.check("app started the SDK", first.strip() == "app running", first)
        time.sleep(1.0)  # some profile to flush
        t0 = time.time()
        gw.proc.send_signal(signal.SIGTERM)
        app.send_signal(signal.SIGTERM)
        # The delay's promises, while the app flushes. (The signal reaches
        # the gateway's loop a moment after kill() returns: poll briefly.)
        st_health, end = health(hport), time.time() + 0.5
        while st_health != 503 and time.time() < end:
            time.sleep(0.01)
            st_health = health(hport)
        st_push = post(gw.port, "/v1/pprof", body, {"Content-Type": "application/octet-stream"})[0]
        try:
            out, err = app.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            app.kill()
            out, err = app.communicate()
        res.check("during the delay: health 503 at once", st_health == 503, st_health)
        res.check("during the delay: a push is answered 204", st_push == 204, st_push)
        res.check("the app flushed on SIGTERM without a failed export",
                  app.returncode == 0 and "app flushed" in out and "export failed" not in err,
                  (app.returncode, out, err[-600:]))
        res.check("the SDK's final push got 204 (nothing refused)",
                  not re.search(r"answered [45]\d\d", gw.log()), gw.log()[-1500:])
        # Only the SDK sends wall profiles (the other pushes are Go CPU ones).
        res.check("the final push reached the debug exporter",
                  gw.wait_debug(r"default_sample_type=wall", 5) is not None, gw.debug()[-800:])
        res.check("the delay's own push reached the debug exporter",
                  len(re.findall(r'msg="Profiles"', gw.debug())) >= 2, gw.debug()[-800:])
        res.check("still accepting, still not ready, before the delay ends",
                  gw.proc.poll() is None and health(hport) == 503
                  and post(gw.port, "/v1/pprof", body)[0] == 204, gw.log()[-800:])
        # A second SIGTERM ends what is left of the delay.
        t1 = time.time()
        code = gw.stop(signal.SIGTERM, timeout=15)
        took = time.time() - t1
        res.check("second SIGTERM: exits 0 without waiting out the delay",
                  code == 0 and took < 3.0 and time.time() - t0 < DELAY_S - 1,
                  (code, round(took, 2), round(time.time() - t0, 2)))
        log = gw.log()
        steps = ["SIGTERM received", f"health reports not ready; receivers keep accepting for {DELAY_S}.0s",
                 "SIGTERM again", "shutdown delay cut short with", "request(s) accepted during it",
                 "receivers stop accepting, exporters drain", 'msg="stopped"', "exited cleanly"]
        res.check("every step logged, in order",
                  all(s in log for s in steps)
                  and sorted(log.index(s) for s in steps) == [log.index(s) for s in steps],
                  [s for s in steps if s not in log] or log[-1500:])
        m = re.search(r"(\d+) request\(s\) accepted during it", log)
        res.check("the log counts the pushes the delay took (>= 3)",
                  m is not None and int(m.group(1)) >= 3, m.group(0) if m else log[-800:])

    # ---- the delay runs out on its own ----
    with Gateway(CONFIG.replace(f"shutdown_delay: {DELAY_S}s", "shutdown_delay: 1s")) as gw:
        t1 = time.time()
        code = gw.stop(signal.SIGTERM, timeout=15)
        took = time.time() - t1
        res.check("one SIGTERM: the delay is waited out, then exit 0",
                  code == 0 and 1.0 <= took < 4.0, (code, round(took, 2)))
        res.check("the end of the delay is logged",
                  "shutdown delay over: 0 request(s) accepted during it" in gw.log(),
                  gw.log()[-800:])

    # ---- without the key: no delay (the Collector's behaviour) ----
    with Gateway(CONFIG.replace(f"  shutdown_delay: {DELAY_S}s\n", "")) as gw:
        t1 = time.time()
        code = gw.stop(signal.SIGTERM, timeout=15)
        res.check("no shutdown_delay: stops at once",
                  code == 0 and time.time() - t1 < 1.0 and "shutdown delay" not in gw.log(),
                  gw.log()[-600:])
    res.finish()


if __name__ == "__main__":
    main()
