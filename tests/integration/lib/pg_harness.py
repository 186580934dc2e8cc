# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for pprofgate integration tests (Python 3.11, stdlib only).

Usage from a test in tests/integration/ (the test's own directory is on
sys.path when run as `python3 tests/integration/test_x.py`):

    import sys, os
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
    from pg_harness import Gateway, Results, post, fixture, gzip_bytes

    res = Results()
    with Gateway('''
    receivers:
      pprof:
        server: {endpoint: "127.0.0.1:0"}
    exporters:
      debug: {verbosity: detailed, output_paths: ["{debug}"]}
    service:
      pipelines:
        profiles: {receivers: [pprof], exporters: [debug]}
    ''') as gw:
        status, headers, body = post(gw.port, "/v1/pprof", gzip_bytes(data),
                                     {"Content-Encoding": "gzip"})
        res.check("valid pprof -> 204", status == 204, body)
        res.check("debug shows it", gw.wait_debug("sample_records=") is not None)
    res.finish()          # prints "N passed, N failed", exits 1 on failure

Gateway(config_text, ...):
  * `{debug}` in the config is replaced by a debug-output file path in the
    gateway's temp dir (gw.debug_path); `{tmp}` by the temp dir itself.
    More files: gw.path("name"). Use endpoint port 0: the bound port is read
    from the receiver's "listening on HOST:PORT" log line (gw.port, gw.ports
    for several receivers, in log order).
  * Starts $PPROFGATE_BIN --config FILE (override with bin=, extra args with
    args=), stderr+stdout go to gw.log_path; waits until `ready_pattern`
    appears (default: the listening line) or fails with the log tail.
  * gw.stop(sig) sends SIGTERM (default) and returns the exit code; the
    context manager always stops and kills (no leaked processes).
  * gw.log() / gw.debug() read the files; gw.wait_log(regex) and
    gw.wait_debug(regex) poll until a match (returns the match or None).
  * gw.rss_kb() / gw.hwm_kb() read /proc/PID/status (VmRSS / VmHWM).

post(port, path, body, headers, method="POST", timeout=10) -> (status,
  headers dict (lower-case keys), body bytes), one connection per call.
fixture(rel) -> an absolute path under $PG_FIXTURES (tests/fixtures), falling
  back to $PG_SHARED/fixtures for the SDK captures; None when absent.
"""

import gzip
import http.client
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

SOURCE_DIR = os.environ.get(
    "PG_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
FIXTURES = os.environ.get("PG_FIXTURES", os.path.join(SOURCE_DIR, "tests", "fixtures"))
SHARED = os.environ.get("PG_SHARED", os.path.join(SOURCE_DIR, "..", "shared"))
BIN = os.environ.get("PPROFGATE_BIN", os.path.join(SOURCE_DIR, "build", "pprofgate"))

LISTEN_RE = re.compile(r"listening on ([0-9a-fA-F.:\[\]]+):(\d+)")


def fixture(rel):
    """Absolute path of a fixture, or None. Looks in tests/fixtures, then shared/fixtures."""
    for base in (FIXTURES, os.path.join(SHARED, "fixtures")):
        p = os.path.join(base, rel)
        if os.path.exists(p):
            return p
    return None


def read(path):
    with open(path, "rb") as f:
        return f.read()


def gzip_bytes(data):
    return gzip.compress(data, mtime=0)


def zlib_bytes(data):
    return zlib.compress(data)


def post(port, path, body=b"", headers=None, method="POST", timeout=10, host="127.0.0.1"):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def post_many(port, bodies, conc, headers=None, timeout=30):
    """POSTs every body of @bodies to /v1/pprof from @conc threads; returns
    one (status, headers) per body, in completion order (an exception's repr
    stands for the status of a request that failed)."""
    out, lock, todo = [], threading.Lock(), list(bodies)

    def run():
        while True:
            with lock:
                if not todo:
                    return
                body = todo.pop()
            try:
                st, hd, _ = post(port, "/v1/pprof", body, headers, timeout=timeout)
            except Exception as e:  # noqa: BLE001 - recorded as a failure
                st, hd = repr(e), {}
            with lock:
                out.append((st, hd))

    threads = [threading.Thread(target=run) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


class Results:
    """Counts checks; finish() prints the closing line and exits."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            d = detail if isinstance(detail, str) else repr(detail)
            print(f"FAIL {name} {d[:500]}", flush=True)
        return bool(cond)

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed or self.passed == 0 else 0)


class Gateway:
    def __init__(self, config_text, bin=None, args=None, ready_pattern=None, ready_timeout=15,
                 env=None, n_listeners=1):
        self.tmp = tempfile.mkdtemp(prefix="pg-it-")
        self.debug_path = os.path.join(self.tmp, "debug.out")
        self.log_path = os.path.join(self.tmp, "gateway.log")
        self.config_path = os.path.join(self.tmp, "config.yaml")
        text = config_text.replace("{debug}", self.debug_path).replace("{tmp}", self.tmp)
        with open(self.config_path, "w") as f:
            f.write(text)
        self.bin = bin or BIN
        self.args = args
        self.ready_pattern = ready_pattern
        self.ready_timeout = ready_timeout
        self.env = env
        self.n_listeners = n_listeners
        self.proc = None
        self.port = None
        self.ports = []

    def path(self, name):
        return os.path.join(self.tmp, name)

    def start(self):
        env = dict(os.environ)
        # The shipped configs' admin ports (pprof, health_check, metrics)
        # default to fixed localhost ports: ephemeral ones here, so tests
        # that run a shipped config in parallel (or beside `make run`) do
        # not collide. A test's own env still wins.
        for var in ("PPROFGATE_PPROF_ENDPOINT", "PPROFGATE_HEALTH_ENDPOINT",
                    "PPROFGATE_METRICS_ENDPOINT"):
            env.setdefault(var, "127.0.0.1:0")
        if self.env:
            env.update(self.env)
        args = self.args if self.args is not None else ["--config", self.config_path]
        self._logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.bin] + args, stdout=self._logf, stderr=subprocess.STDOUT,
                                     env=env, cwd=self.tmp)
        deadline = time.time() + self.ready_timeout
        while time.time() < deadline:
            log = self.log()
            if self.ready_pattern is not None:
                if re.search(self.ready_pattern, log):
                    break
            else:
                found = LISTEN_RE.findall(log)
                if len(found) >= self.n_listeners:
                    self.ports = [int(p) for _, p in found]
                    self.port = self.ports[0]
                    break
            if self.proc.poll() is not None:
                raise RuntimeError(f"pprofgate exited with {self.proc.returncode}:\n{log[-3000:]}")
            time.sleep(0.05)
        else:
            self.kill()
            raise RuntimeError(f"pprofgate not ready in {self.ready_timeout}s:\n{self.log()[-3000:]}")
        return self

    def __enter__(self):
        # `gw.start()` then `with gw:` (to time the start): one process, not two
        # (a second start leaked the first, scraping and burning CPU forever).
        if self.proc is not None and self.proc.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        return False

    def log(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def debug(self):
        try:
            with open(self.debug_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def _wait(self, reader, pattern, timeout):
        deadline = time.time() + timeout
        while True:
            m = re.search(pattern, reader())
            if m or time.time() >= deadline:
                return m
            time.sleep(0.05)

    def wait_log(self, pattern, timeout=5):
        return self._wait(self.log, pattern, timeout)

    def wait_debug(self, pattern, timeout=5):
        return self._wait(self.debug, pattern, timeout)

    def _proc_status(self, field):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
        return None

    def rss_kb(self):
        return self._proc_status("VmRSS")

    def hwm_kb(self):
        return self._proc_status("VmHWM")

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Signals the gateway and returns its exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if getattr(self, "_logf", None):
            self._logf.close()
            self._logf = None


def basic_config(debug_verbosity="detailed", server_extra="", debug_extra="", log_level="info"):
    """A receiver on 127.0.0.1:0 feeding one debug exporter writing to {debug}."""
    return f"""
receivers:
  pprof:
    server:
      endpoint: "127.0.0.1:0"
{server_extra}
exporters:
  debug:
    verbosity: {debug_verbosity}
    output_paths: ["{{debug}}"]
{debug_extra}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug]
  telemetry:
    logs: {{level: {log_level}}}
"""
